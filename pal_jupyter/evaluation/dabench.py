"""InfiAgent-DABench (Hu et al., ICML 2024): real data-analysis questions on real CSV files.

Each question comes with its constraints and the format its answer must be printed in
(``@name[value]``, one per asked value); it is right when every labelled name is printed with the
label's value, as the benchmark's own ``eval_closed_form.py`` scores it (:func:`is_right`). Only the
development part is in this repository's shared data (``shared/data/dabench``); the rest of the
benchmark is held out and never read here.

:func:`load_questions` reads the questions with their labels; a question is asked as a user would
ask it about a table loaded with ``pd.read_csv`` (:attr:`DabenchQuestion.text`, the table as ``df``).
The development part is split by id for honest figures (:data:`HALVES`): rules are chosen on even
ids and reported on odd ids.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

# The benchmark's own pattern, kept as it is for its scores (the product reads answers with
# engine.vote.named_parts, which also stops a value at a line's end).
_ANSWER = re.compile(r"@(\w+)\[(.*?)\]")
#: Development half ("a", even ids: rules chosen there), report half ("b", odd ids), or all.
HALVES = ("a", "b", "all")


@dataclass(frozen=True)
class DabenchQuestion:
    id: int
    question: str
    constraints: str
    format: str
    file_name: str
    level: str
    labels: tuple[tuple[str, str], ...]  # (name, value) pairs

    @property
    def text(self) -> str:
        """The question as the benchmark states it: the question, its constraints and the answer's format."""
        return f"{self.question}\n\nConstraints: {self.constraints}\n\nAnswer format: {self.format}"

    @property
    def half(self) -> str:
        return "a" if self.id % 2 == 0 else "b"


def load_questions(folder: str | Path, half: str = "all") -> list[DabenchQuestion]:
    """The questions of ``folder`` (``questions.jsonl`` and ``labels.jsonl``) in ``half`` (:data:`HALVES`)."""
    if half not in HALVES:
        raise ValueError(f"half must be one of {', '.join(HALVES)}, not {half!r}")
    folder = Path(folder)
    labels = {row["id"]: row["common_answers"] for row in _jsonl(folder / "labels.jsonl")}
    questions = [DabenchQuestion(row["id"], row["question"], row.get("constraints", ""), row.get("format", ""),
                                 row["file_name"], row.get("level", ""),
                                 tuple((str(n), str(v)) for n, v in labels.get(row["id"], ())))
                 for row in _jsonl(folder / "questions.jsonl")]
    return [q for q in questions if half == "all" or q.half == half]


def _jsonl(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def read_table(folder: str | Path, question: DabenchQuestion) -> Any:
    """The question's table, as a user loads it."""
    import pandas as pd

    return pd.read_csv(Path(folder) / "tables" / question.file_name)


def printed_answers(printed: str) -> dict[str, str]:
    """Every ``@name[value]`` in what a program printed (the last one of a name counts)."""
    return {name: value.strip() for name, value in _ANSWER.findall(printed or "")}


def _same(got: str, label: str) -> bool:
    """Equal as the benchmark compares: the same string, or numbers within 1e-6."""
    if got.strip() == label.strip():
        return True
    try:
        a, b = float(got), float(label)
    except ValueError:
        return False
    return math.isfinite(a) and abs(a - b) <= 1e-6


def is_right(printed: str, labels: Sequence[tuple[str, str]]) -> bool:
    """Whether ``printed`` holds every labelled name with the label's value."""
    answers = printed_answers(printed)
    return bool(labels) and all(name in answers and _same(answers[name], value) for name, value in labels)
