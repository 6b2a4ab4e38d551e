"""Ways to ask for a repair, side by side, on the failed programs of collected data views.

    python benchmarks/bench_repairs.py FILE [FILE ...] [--variants asked,longer]

Every program of a ``fixed``, ``terse`` or ``inline`` view in FILEs (from ``collect_views.py``) that
raises an error when run again is repaired each way of :data:`REPAIR_VARIANTS` (the feedback whole
or cut, the product's request or a longer one), greedily, in its own conversation, with the default
model through llama.cpp. Prints, per program, the tokens each way was told beyond what all share, the
tokens decoded and whether the repair's answer was right, then a line per way. Why the product asks
for a repair as it does: docs/decisions.md.
"""

from __future__ import annotations

import argparse
import json
import re
import statistics
from collections.abc import Callable, Sequence

from pal_jupyter.backends import GenerationOptions, generate_candidates, load_model
from pal_jupyter import prompts
from pal_jupyter.kernels import ExecutorLimits, KernelPool
from pal_jupyter.kernels.tracebacks import library_path

from views_common import DATA_SUITES, MAX_TOKENS, USES, Candidate, _cpu, _program  # this folder's


#: The product's data views whose failed programs ``repairs`` repairs, and their prompt styles.
REPAIRED_VIEWS = {"fixed": prompts.DATA_FIXED_STYLE, "terse": prompts.DATA_ZERO_STYLE, "inline": prompts.IDIOMS_STYLE}


_FRAME_RE = re.compile(r'^(?P<indent>\s*)File "(?P<path>[^"]+)", line \d+')
_CHAIN_START = "Traceback (most recent call last):"


def brief_traceback(text: str) -> str:
    """A plain traceback (``kernels.tracebacks.clean_traceback``'s) cut to the last exception of a chain
    and the program's own frames, with the error's lines: what ``repairs`` tells the model instead of
    the whole traceback (a missing column's ``KeyError`` is two chained tracebacks of pandas internals,
    ~1,000 characters, around the one line a repair can change). Measured and not taken: the whole
    traceback repaired 4 of 25 failed programs, this 2 (docs/decisions.md, "One repair; the whole traceback kept")."""
    last = text[text.rfind(_CHAIN_START):] if _CHAIN_START in text else text
    kept: list[str] = []
    library_indent: int | None = None  # inside a library frame: its header's indent, while its lines follow
    program_frames = 0
    for line in last.rstrip("\n").split("\n"):
        frame = _FRAME_RE.match(line)
        if frame:
            ours = frame["path"] == "program.py"
            program_frames += ours
            library_indent = None if ours else len(frame["indent"])
            if ours:
                kept.append(line)
            continue
        if library_indent is not None and line.strip() and len(line) - len(line.lstrip()) > library_indent:
            continue  # a library frame's source line
        library_indent = None
        kept.append(line)
    return "\n".join(kept) + "\n" if program_frames else text


_FRAME_PATH_RE = re.compile(r'File "(?P<path>[^"]+)"')


def short_paths(text: str) -> str:
    """A traceback whose library frames name their module's file from its package on
    (``pandas/core/frame.py``), not by the installation's absolute path (``kernels.tracebacks.library_path``,
    which the product's tracebacks have used since this was measured: ``asked`` is the same now)."""
    return _FRAME_PATH_RE.sub(lambda frame: f'File "{library_path(frame["path"])}"', text)


def last_chain(text: str) -> str:
    """:func:`short_paths`, of the last exception of a chain only (what was raised while handling, or
    because of, an earlier one): a missing column's ``KeyError`` tells its key twice."""
    return short_paths(text[text.rfind(_CHAIN_START):] if _CHAIN_START in text else text)


#: Ways to ask for a repair, compared by ``repairs``: the feedback as the product tells it (the whole
#: traceback) or cut (the function that cuts it); the product's request, or the longer one before it
#: (one or two sentences, comments allowed).
LONGER_REPAIR_REQUEST = (
    "First explain in one or two plain sentences, for a beginner, what went wrong and why "
    "(start with 'Explanation:'). Then give the complete corrected program in one ```python "
    "block that prints the answer."
)


REPAIR_VARIANTS: dict[str, tuple[Callable[[str], str] | None, str]] = {
    "asked": (None, prompts.REPAIR_REQUEST),  # the product's
    "brief": (brief_traceback, prompts.REPAIR_REQUEST),
    "paths": (short_paths, prompts.REPAIR_REQUEST),
    "last": (last_chain, prompts.REPAIR_REQUEST),
    "longer": (None, LONGER_REPAIR_REQUEST),
    "longer-brief": (brief_traceback, LONGER_REPAIR_REQUEST),
}


def repairs(paths: Sequence[str], variants: Sequence[str]) -> None:
    """Ways of asking for a repair (:data:`REPAIR_VARIANTS`) side by side: every collected program of a
    data view that raised an error is repaired each way, greedily, in its own conversation (as the
    product repairs), one way right after the other in one slot (each after the first reads only
    what differs). Prints, per program, the tokens each way was told beyond what all share, the
    tokens decoded and whether the repair's answer was right."""
    from pal_jupyter.evaluation.dataframes import build_frames

    frames = build_frames()
    backend = load_model("default", backend="llamacpp")
    rows: dict[str, list[tuple[int, int, bool]]] = {name: [] for name in variants}
    with KernelPool(ExecutorLimits(timeout_s=10)) as pool:
        for path in paths:
            for line in open(path):
                record = json.loads(line)
                if record["suite"] not in DATA_SUITES:
                    continue
                for view, style in REPAIRED_VIEWS.items():
                    program = (record["views"].get(view) or {"programs": [{}]})["programs"][0]
                    if not program.get("error") or program.get("code") is None:
                        continue
                    question = record["question"]
                    variables = {name: frames[name] for name in USES[question]}
                    result = pool.run(program["code"], variables)
                    if result.error is None:
                        continue
                    whole = prompts.execution_feedback(result, code=program["code"])
                    told_as = {name: _cut_feedback(whole, result.error.traceback, REPAIR_VARIANTS[name][0])
                               for name in variants}
                    if len(variants) > 1 and len({(told_as[name], REPAIR_VARIANTS[name][1]) for name in variants}) == 1:
                        continue  # every way asks it the same: nothing to compare
                    messages = prompts.pal_messages(question, variables, style=style)
                    options = GenerationOptions(max_new_tokens=MAX_TOKENS, temperature=0.0,
                                                cache_key="repairs", shared_messages=prompts.shared_messages(style))
                    told: dict[str, tuple[int, int, bool]] = {}
                    first_length = 0
                    for name in variants:
                        asked = prompts.follow_up_messages(messages, program["reply"], told_as[name],
                                                           request=REPAIR_VARIANTS[name][1])
                        reply = generate_candidates(backend, asked, 1, options)[0]
                        timing = backend.last_timings[0]
                        if not told:
                            first_length = (timing["cache_n"] or 0) + (timing["prompt_n"] or 0)
                        elif len(told) == 1:  # the first way's turn: its prompt beyond what both share
                            first = next(iter(told))
                            told[first] = (first_length - (timing["cache_n"] or 0), *told[first][1:])
                        fixed = Candidate(name, _program(reply.text, pool, variables), record["expected"])
                        told[name] = (timing["prompt_n"] or 0, reply.completion_tokens, fixed.right)
                    for name, (feedback_tokens, decoded, right) in told.items():
                        rows[name].append((feedback_tokens, decoded, right))
                    print(f"{record['suite']} {record['i']:>2} {view:<6} {result.error.ename:<12} "
                          + " | ".join(f"{name}: told {t} tokens, wrote {d}, {'right' if r else 'wrong'}"
                                       for name, (t, d, r) in told.items()), flush=True)
    for name, results in rows.items():
        if results:
            print(f"{name:<6} {sum(r for _, _, r in results)}/{len(results)} right; told tokens mean "
                  f"{statistics.mean(t for t, _, _ in results):.0f}, decoded mean {statistics.mean(d for _, d, _ in results):.0f}")
    print(_cpu())


def _cut_feedback(feedback: str, traceback: str, cut: Callable[[str], str] | None) -> str:
    """The repair's ``feedback`` with its ``traceback`` cut by ``cut`` (``None``: as it is)."""
    return feedback if cut is None else feedback.replace(traceback.strip(), cut(traceback).strip())


def _variants(text: str) -> list[str]:
    names = text.split(",")
    unknown = [name for name in names if name not in REPAIR_VARIANTS]
    if unknown:
        raise argparse.ArgumentTypeError(f"no repair variant {', '.join(unknown)}: "
                                         f"choose of {', '.join(REPAIR_VARIANTS)}")
    return names


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("files", nargs="+")
    parser.add_argument("--variants", default="asked,longer", type=_variants,
                        help=f"comma-separated, of {', '.join(REPAIR_VARIANTS)}")
    args = parser.parse_args()
    repairs(args.files, args.variants)


if __name__ == "__main__":
    main()
