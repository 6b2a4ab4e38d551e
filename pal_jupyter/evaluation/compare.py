"""Before and after, on the same questions: ``pal-jupyter compare A.json B.json``.

Two benchmark reports are paired question by question (same data, same rows), and the
difference in accuracy gets McNemar's exact test: only the questions one side got right and the
other wrong carry information, and under "no difference" each of them is a coin toss. At 100
questions the accuracy alone moves by about 5 points from chance; the p-value says whether a
difference is more than that.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..errors import PalError


@dataclass
class Paired:
    label_a: str
    label_b: str
    questions: int
    accuracy_a: float
    accuracy_b: float
    only_a: int  # right in A, wrong in B
    only_b: int
    both: int
    neither: int

    @property
    def p_value(self) -> float:
        return mcnemar_exact(self.only_a, self.only_b)


def mcnemar_exact(b: int, c: int) -> float:
    """Two-sided exact McNemar p-value for ``b`` and ``c`` discordant pairs (a binomial test at 1/2)."""
    n = b + c
    if n == 0:
        return 1.0
    tail = sum(math.comb(n, k) for k in range(min(b, c) + 1)) / 2**n
    return min(1.0, 2 * tail)


def _report(path: str | Path) -> dict[str, Any]:
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise PalError(f"No benchmark report at {path}.") from None
    except (ValueError, UnicodeDecodeError) as exc:
        raise PalError(f"{path} is not a benchmark report (JSON written by pal-jupyter bench): {exc}.") from None
    if not isinstance(data, dict) or "results" not in data or "summaries" not in data:
        raise PalError(f"{path} is not a benchmark report (JSON written by pal-jupyter bench).")
    return data


def _label(summary: dict[str, Any], path: str | Path) -> str:
    config = summary.get("config", {})
    return f"{Path(path).stem}: {summary.get('model')} k={config.get('samples')}"


def compare(path_a: str | Path, path_b: str | Path) -> list[Paired]:
    """Pair the configs of two reports (in order) over the questions both answered."""
    a, b = _report(path_a), _report(path_b)
    if len(a["summaries"]) != len(b["summaries"]):
        raise PalError(f"The reports compare different numbers of settings ({len(a['summaries'])} and "
                       f"{len(b['summaries'])}); run both with the same --samples / --dtype lists.")
    pairs = []
    for position, (sa, sb) in enumerate(zip(a["summaries"], b["summaries"])):
        ra = _by_question(a, sa["config"], position)
        rb = _by_question(b, sb["config"], position)
        common = sorted(set(ra) & set(rb))
        if not common:
            raise PalError("The two reports have no question in common (different data or --offset).")
        mismatched = [i for i in common if ra[i]["question"] != rb[i]["question"]]
        if mismatched:
            raise PalError(f"Question {mismatched[0]} differs between the reports: they were run on different data.")
        right_a = {i: bool(ra[i]["correct"]) for i in common}
        right_b = {i: bool(rb[i]["correct"]) for i in common}
        pairs.append(Paired(
            _label(sa, path_a), _label(sb, path_b), len(common),
            sum(right_a.values()) / len(common), sum(right_b.values()) / len(common),
            sum(right_a[i] and not right_b[i] for i in common), sum(right_b[i] and not right_a[i] for i in common),
            sum(right_a[i] and right_b[i] for i in common), sum(not right_a[i] and not right_b[i] for i in common),
        ))
    return pairs


def _by_question(report: dict[str, Any], config: dict[str, Any], position: int) -> dict[int, dict[str, Any]]:
    rows = [r for r in report["results"] if r.get("config") == config]
    return {r["index"]: r for r in rows}


def format_comparison(pairs: list[Paired]) -> str:
    lines = []
    for p in pairs:
        lines += [
            f"A = {p.label_a}",
            f"B = {p.label_b}",
            f"questions {p.questions}: accuracy A {100 * p.accuracy_a:.1f}%, B {100 * p.accuracy_b:.1f}% "
            f"(B - A = {100 * (p.accuracy_b - p.accuracy_a):+.1f} points)",
            f"only A right {p.only_a}, only B right {p.only_b}, both {p.both}, neither {p.neither}; "
            f"McNemar exact p = {p.p_value:.3f}" + (" (a real difference at the 5% level)" if p.p_value < 0.05
                                                     else " (not distinguishable from chance)"),
        ]
    return "\n".join(lines)
