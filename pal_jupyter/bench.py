"""Benchmark the repair loop over a JSONL set of questions with numeric answers.

Each row needs a question (``question`` or ``input``) and an answer (GSM8K's ``answer`` with
'#### n', or a numeric ``target`` as in GSM-Hard). By default repair is driven by interpreter
errors only, as for a real user; ``check_answers=True`` also feeds "wrong answer" back (an
oracle, as in PLUM's test-case feedback) and is reported as such.
"""

from __future__ import annotations

import json
import statistics
from collections import Counter
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .answers import numbers_match, parse_number, reference_answer
from .errors import PalError
from .executor import KernelPool
from .loop import solve
from .model import GenerationOptions, ModelBackend
from .records import Session, to_jsonable
from .trace import TraceWriter


@dataclass
class QuestionResult:
    index: int
    question: str
    expected: float | None
    first_answer: float | None = None
    final_answer: float | None = None
    first_correct: bool = False
    final_correct: bool = False
    first_ran: bool = False
    final_ran: bool = False
    attempts: int = 0
    error_types: list[str] = field(default_factory=list)
    seconds: float = 0.0
    completion_tokens: int = 0
    generate_s: float = 0.0
    failure: str | None = None  # a PalError that ended the question (e.g. no code at all)


def read_rows(path: str | Path, limit: int | None = None, offset: int = 0) -> list[dict[str, Any]]:
    rows = []
    with Path(path).open(encoding="utf-8") as handle:
        for number, line in enumerate(handle):
            if number < offset or not line.strip():
                continue
            rows.append(json.loads(line))
            if limit is not None and len(rows) >= limit:
                break
    return rows


def question_of(row: dict[str, Any]) -> str:
    return str(row.get("question") or row.get("input") or "")


def run_benchmark(
    rows: Iterable[dict[str, Any]],
    backend: ModelBackend,
    pool: KernelPool,
    *,
    max_attempts: int = 3,
    check_answers: bool = False,
    generation: GenerationOptions | None = None,
    trace: TraceWriter | None = None,
    on_result: Callable[[QuestionResult], None] | None = None,
) -> Iterator[QuestionResult]:
    """Solve each row with :func:`solve` and yield how it went."""
    for index, row in enumerate(rows):
        expected = reference_answer(row)
        result = QuestionResult(index, question_of(row), expected)
        checker = (lambda run, e=expected: numbers_match(parse_number(run.text_output()), e)) if check_answers else None
        try:
            session = solve(
                result.question, model=backend, executor=pool, max_attempts=max_attempts,
                checker=checker, generation=generation, trace=trace,
            )
            _fill(result, session)
        except PalError as exc:
            result.failure = str(exc)
        if on_result:
            on_result(result)
        yield result


def _fill(result: QuestionResult, session: Session) -> None:
    first, final = session.attempts[0], session.final
    assert final is not None
    result.first_ran, result.final_ran = first.ran_cleanly, final.ran_cleanly
    result.first_answer = parse_number(first.execution.text_output()) if first.ran_cleanly else None  # type: ignore[union-attr]
    result.final_answer = parse_number(final.execution.text_output()) if final.ran_cleanly else None  # type: ignore[union-attr]
    result.first_correct = numbers_match(result.first_answer, result.expected)
    result.final_correct = numbers_match(result.final_answer, result.expected)
    result.attempts = len(session.attempts)
    result.error_types = [a.error_type for a in session.attempts if a.error_type]
    result.seconds = session.seconds
    result.completion_tokens = sum(a.completion_tokens for a in session.attempts)
    result.generate_s = sum(a.generate_s for a in session.attempts)


def summarize(results: list[QuestionResult], *, model: str, load_seconds: float, check_answers: bool) -> dict[str, Any]:
    """The figures the bench prints: accuracy, execution success, attempts, errors, speed."""
    n = len(results) or 1
    tokens = sum(r.completion_tokens for r in results)
    gen_s = sum(r.generate_s for r in results)
    return {
        "model": model,
        "questions": len(results),
        "repair_feedback": "errors + wrong answers (oracle)" if check_answers else "interpreter errors only",
        "accuracy_first_attempt": sum(r.first_correct for r in results) / n,
        "accuracy_after_repair": sum(r.final_correct for r in results) / n,
        "exec_success_first_attempt": sum(r.first_ran for r in results) / n,
        "exec_success_after_repair": sum(r.final_ran for r in results) / n,
        "mean_attempts": sum(r.attempts for r in results) / n,
        "error_types": dict(Counter(e for r in results for e in r.error_types).most_common()),
        "failures": sum(r.failure is not None for r in results),
        "seconds_per_question_mean": sum(r.seconds for r in results) / n,
        "seconds_per_question_median": statistics.median([r.seconds for r in results]) if results else 0.0,
        "tokens_per_second": tokens / gen_s if gen_s else 0.0,
        "completion_tokens_total": tokens,
        "model_load_seconds": load_seconds,
    }


def format_summary(summary: dict[str, Any]) -> str:
    pct = lambda key: f"{100 * summary[key]:.1f}%"  # noqa: E731
    errors = ", ".join(f"{k} {v}" for k, v in summary["error_types"].items()) or "none"
    return "\n".join(
        [
            f"model                     {summary['model']}  (loaded in {summary['model_load_seconds']:.1f} s)",
            f"questions                 {summary['questions']}   repair on: {summary['repair_feedback']}",
            f"accuracy                  first attempt {pct('accuracy_first_attempt')}   after repair {pct('accuracy_after_repair')}",
            f"programs ran cleanly      first attempt {pct('exec_success_first_attempt')}   after repair {pct('exec_success_after_repair')}",
            f"mean attempts             {summary['mean_attempts']:.2f}",
            f"error types               {errors}",
            f"seconds per question      mean {summary['seconds_per_question_mean']:.1f}   median {summary['seconds_per_question_median']:.1f}",
            f"generation speed          {summary['tokens_per_second']:.2f} tokens/s",
        ]
    )


def write_report(path: str | Path, summary: dict[str, Any], results: list[QuestionResult]) -> None:
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({"summary": summary, "results": to_jsonable(results)}, indent=2) + "\n")
