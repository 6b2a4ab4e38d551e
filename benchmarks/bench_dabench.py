"""InfiAgent-DABench's development part: the product beside the plainest baseline, in one run.

    python benchmarks/bench_dabench.py run [--half a|b|all] [--ids 9,11] [--limit N] [--out FILE]
    python benchmarks/bench_dabench.py score FILE [FILE ...] [--half a|b|all]

``run`` asks every question of the half (:mod:`pal_jupyter.evaluation.dabench`: even ids "a", the
development half; odd ids "b", the report half) twice, one right after the other, with the default
model through llama.cpp: the **baseline**, one greedy zero-shot program (``data-0shot``: the table
described, then the question; the reply as the model writes it), and the **product**, ``solve()``
with its defaults, as ``%%pal --use df`` asks it. Each question's table is loaded with
``pd.read_csv`` and handed over as ``df``; the question is the benchmark's question, constraints and
answer format. One JSON line per question goes to FILE (a rerun resumes): what each printed, every
program the product wrote (its view, what it printed, its error), seconds and tokens.

``score`` prints, per half, the right answers of the baseline and of the product, the answers the
product showed as sure and how many of those were right, seconds (mean, median; with ``--rates``,
model time priced from the recorded token counts), this CPU's flags, the questions only one side
got, and how each of the product's first-round views would have done alone.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from pal_jupyter import prompts
from pal_jupyter.backends import GenerationOptions, generate_candidates, load_model
from pal_jupyter.engine.extraction import extract_code
from pal_jupyter.errors import NoCodeError
from pal_jupyter.evaluation import dabench
from pal_jupyter.kernels import KernelPool

from bench_backends import cpu_summary  # this folder's: the CPU and its flags, as every benchmark prints them

DATA = Path(__file__).resolve().parents[2] / "shared" / "data" / "dabench"
BASELINE_STYLE = "data-0shot"
MAX_TOKENS = 512


def baseline(backend: Any, pool: KernelPool, question: str, variables: dict[str, Any]) -> dict[str, Any]:
    """One greedy zero-shot program, the reply as written, run once."""
    messages = prompts.pal_messages(question, variables, style=BASELINE_STYLE)
    options = GenerationOptions(max_new_tokens=MAX_TOKENS, temperature=0.0, cache_key="baseline")
    start = time.perf_counter()
    reply = generate_candidates(backend, messages, 1, options)[0]
    record: dict[str, Any] = {"prompt_tokens": reply.prompt_tokens, "tokens": reply.completion_tokens,
                              "batches": [_counts(backend.last_timings)]}
    try:
        code = extract_code(reply.text).code
    except NoCodeError:
        code = None
    record["code"] = code
    if code is not None:
        result = pool.run(code, variables)
        record["printed"] = result.stdout[-4000:]
        record["error"] = None if result.error is None else f"{result.error.ename}: {result.error.evalue[:200]}"
    record["seconds"] = round(time.perf_counter() - start, 2)
    return record


def product(backend: Any, pool: KernelPool, question: str, variables: dict[str, Any]) -> dict[str, Any]:
    """``solve()`` with the product's defaults, as ``%%pal --use df`` asks."""
    from pal_jupyter import solve

    start = time.perf_counter()
    batches = _recording_batches(backend)
    try:
        session = solve(question, variables=variables, model=backend, executor=pool)
    except Exception as exc:  # a question the product could not answer at all still counts
        return {"seconds": round(time.perf_counter() - start, 2), "failed": f"{type(exc).__name__}: {exc}"[:300],
                "printed": "", "confidence": "none", "programs": []}
    final = session.final if session.succeeded else None
    return {
        "seconds": round(time.perf_counter() - start, 2),
        "batches": batches,
        "printed": final.execution.stdout[-4000:] if final is not None and final.execution is not None else "",
        "answer": session.answer,
        "confidence": session.confidence,
        "programs": [_program(p) for p in session.programs],
    }


def _counts(timings: Sequence[dict[str, Any]]) -> list[dict[str, int]]:
    """llama.cpp's own counts for each row of a batch: tokens prefilled (``prompt_n``), taken from its cache
    (``cache_n``) and decoded (``predicted_n``): what ``score --rates`` prices at another CPU's speeds."""
    return [{k: int(t.get(k) or 0) for k in ("prompt_n", "cache_n", "predicted_n")} for t in timings]


def _recording_batches(backend: Any) -> list[list[dict[str, int]]]:
    """A list that fills with the counts of every batch ``backend`` writes from now on (until the next
    call): ``solve()`` writes several (the views at once, then a repair) and keeps no counts itself."""
    batches: list[list[dict[str, int]]] = []
    generate = getattr(backend, "_generate_unrecorded", backend._generate)
    backend._generate_unrecorded = generate

    def recorded(*args: Any, **kwargs: Any) -> Any:
        generations = generate(*args, **kwargs)
        batches.append(_counts(backend.last_timings))
        return generations

    backend._generate = recorded
    return batches


def _program(program: Any) -> dict[str, Any]:
    execution = program.execution
    return {"round": program.index, "kind": program.kind, "view": program.view, "good": program.good,
            "error_type": program.error_type, "answer": program.answer, "code": program.code,
            "printed": execution.stdout[-4000:] if execution is not None else "",
            "prompt_tokens": program.prompt_tokens, "tokens": program.completion_tokens,
            "generate_s": round(program.generate_s, 2)}


def _done(path: str) -> set[int]:
    if not os.path.exists(path):
        return set()
    return {json.loads(line)["id"] for line in open(path) if line.strip()}


def run(args: argparse.Namespace) -> None:
    questions = dabench.load_questions(args.data, args.half)
    if args.ids:  # questions by id (a change measured where it acts, e.g. the questions that reached a repair)
        questions = [q for q in questions if q.id in args.ids]
    questions = questions[: args.limit]
    done = _done(args.out)
    backend = load_model("default", backend="llamacpp")
    print(cpu_summary(), flush=True)
    with KernelPool() as pool:
        for question in questions:
            if question.id in done:
                continue
            variables = {"df": dabench.read_table(args.data, question)}
            plain = baseline(backend, pool, question.text, variables)
            ours = product(backend, pool, question.text, variables)
            record = {"id": question.id, "half": question.half, "level": question.level, "cpu": cpu_summary(),
                      "labels": question.labels, "baseline": plain, "product": ours}
            with open(args.out, "a") as out:
                out.write(json.dumps(record, default=str) + "\n")
            print(f"{question.id:>4} baseline {_mark(plain, question.labels)} {plain['seconds']:5.1f} s | product "
                  f"{_mark(ours, question.labels)} {ours['seconds']:5.1f} s ({ours['confidence']}, "
                  f"{len(ours['programs'])} programs)", flush=True)


def _mark(record: dict[str, Any], labels: Sequence[Sequence[str]]) -> str:
    return "right" if dabench.is_right(record.get("printed") or "", labels) else "wrong"


# ------------------------------------------------------------------------------------------ score

def _records(paths: Sequence[str], half: str) -> list[dict[str, Any]]:
    records: dict[int, dict[str, Any]] = {}
    for path in paths:
        for line in open(path):
            if line.strip():
                record = json.loads(line)
                records[record["id"]] = record
    return [r for _, r in sorted(records.items()) if half == "all" or r["half"] == half]


def _view_printed(record: dict[str, Any], view: str) -> str:
    """What the product's first-round program of ``view`` printed ("" when it wrote none)."""
    program = next((p for p in record["product"]["programs"] if p["round"] == 1 and p["view"] == view), None)
    return (program or {}).get("printed", "")


def priced(batches: Sequence[Sequence[dict[str, int]]], rates: dict[str, Any]) -> float:
    """Model seconds at another CPU's speeds (``calibrate.py``): each batch's prefilled
    tokens at its prefill rate, then its longest row's decoded tokens at the step time of that many rows."""
    steps = {int(rows): seconds for rows, seconds in rates["step_s"].items()}
    total = 0.0
    for rows in batches:
        if not rows:
            continue
        step = steps.get(len(rows)) or steps[max(k for k in steps if k <= len(rows))]
        total += sum(r["prompt_n"] for r in rows) / rates["prefill_tok_s"] + max(r["predicted_n"] for r in rows) * step
    return total


def summary(name: str, outcomes: Sequence[tuple[bool, bool, float | None]]) -> str:
    """One line: right of total, sure and right, seconds (mean, median) when known."""
    right = sum(ok for ok, _, _ in outcomes)
    sure = [ok for ok, is_sure, _ in outcomes if is_sure]
    seconds = [s for _, _, s in outcomes if s is not None]
    timing = (f", seconds mean {statistics.mean(seconds):.1f} median {statistics.median(seconds):.1f}"
              if seconds else "")
    sure_text = f", sure {len(sure)} ({sum(sure)} right)" if sure else ""
    return f"{name:<26} {right}/{len(outcomes)} right ({100 * right / max(len(outcomes), 1):.0f} %){sure_text}{timing}"


def score(paths: Sequence[str], half: str, rates: dict[str, Any] | None = None) -> None:
    records = _records(paths, half)
    if not records:
        raise SystemExit(f"no records of half {half!r} in {', '.join(paths)}")
    print(f"InfiAgent-DABench dev, half {half}: {len(records)} questions; {records[0].get('cpu', '?')}")
    if rates is not None:
        print(f"seconds: model time priced at {rates.get('cpu', 'the given rates')}")
    for who in ("baseline", "product"):
        outcomes = [(dabench.is_right(r[who].get("printed") or "", r["labels"]), r[who].get("confidence") == "high",
                     priced(r[who]["batches"], rates) if rates is not None and "batches" in r[who] else
                     None if rates is not None else r[who]["seconds"]) for r in records]
        print(summary(who, outcomes))
    right = {who: {r["id"] for r in records if dabench.is_right(r[who].get("printed") or "", r["labels"])}
             for who in ("baseline", "product")}
    print(f"only the product right: {sorted(right['product'] - right['baseline'])}; "
          f"only the baseline right: {sorted(right['baseline'] - right['product'])}")
    views = sorted({p["view"] for r in records for p in r["product"]["programs"] if p["view"]})
    for view in views:
        print(summary(f"product's view {view} alone",
                      [(dabench.is_right(_view_printed(r, view), r["labels"]), False, None) for r in records]))


def _ids(text: str) -> set[int]:
    try:
        return {int(part) for part in text.split(",")}
    except ValueError:
        raise argparse.ArgumentTypeError(f"question ids are whole numbers separated by commas, not {text!r}") from None


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    commands = parser.add_subparsers(dest="command", required=True)
    run_parser = commands.add_parser("run", help="the product and the baseline on each question")
    run_parser.add_argument("--half", choices=dabench.HALVES, default="all")
    run_parser.add_argument("--limit", type=int, default=None)
    run_parser.add_argument("--ids", type=_ids, help="only these question ids, comma-separated")
    run_parser.add_argument("--out", default="bench-results/dabench.jsonl")
    run_parser.add_argument("--data", default=str(DATA))
    score_parser = commands.add_parser("score", help="right, sure and seconds from recorded runs")
    score_parser.add_argument("paths", nargs="+")
    score_parser.add_argument("--half", choices=dabench.HALVES, default="all")
    score_parser.add_argument("--rates", help="a CPU's speeds (benchmarks/rates/*.json): price model time at them")
    args = parser.parse_args(argv)
    if args.command == "score":
        missing = [path for path in (*args.paths, args.rates) if path and not os.path.exists(path)]
        if missing:
            parser.error(f"no such file: {', '.join(missing)}")
    if args.command == "run":
        os.makedirs(os.path.dirname(args.out) or ".", exist_ok=True)
        run(args)
    else:
        score(args.paths, args.half, json.loads(Path(args.rates).read_text()) if args.rates else None)


if __name__ == "__main__":
    sys.exit(main())
