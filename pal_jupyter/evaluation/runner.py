"""Benchmark the loop over questions with known answers, comparing settings side by side.

Each row needs a question (``question`` or ``input``) and an answer: GSM8K's ``answer`` with
'#### n', a numeric ``target`` as in GSM-Hard, a plain ``answer`` (number or text), or
``"chart": {"kind", "points"}`` for a chart question (correct when the winning program's chart draws
that data: :func:`pal_jupyter.engine.charts.draws`), or ``"figure": true`` (any figure will do).
Rows may carry ``variables`` (name -> object, e.g. DataFrames), handed to the program as
``%%pal --use`` would (see :mod:`pal_jupyter.evaluation.dataframes`).

Several settings (``Config``: samples per round, runtime, dtype, prompt style) can be compared in one
run: every question is answered under each of them in turn, so a noisy, shared machine slows
all of them alike and the ratios stay fair.

By default repair is driven by interpreter errors only, as for a real user;
``check_answers=True`` also feeds "wrong answer" back (an oracle, as in PLUM's test-case
feedback) and is reported as such.
"""

from __future__ import annotations

import dataclasses
import json
import statistics
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..backends import GenerationOptions, ModelBackend
from ..engine.grading import expected_of, is_correct, question_of
from ..engine.loop import solve
from ..engine.options import DEFAULT_MAX_PROGRAMS, METHODS, OPTIONS, SECOND_OPINIONS, Settings
from ..engine.records import Session, WeakVote, to_jsonable
from ..engine.trace import TraceWriter
from ..engine.vote import read_answer
from ..errors import PalError
from ..kernels import ExecutorLimits, KernelPool


@dataclass(frozen=True)
class Config:
    """One setting under test."""

    method: str = METHODS[0]  # "careful" or "vote" (engine.options)
    samples: int = 1
    max_programs: int = DEFAULT_MAX_PROGRAMS  # while the vote is weak, more programs up to this many
    second_opinion: str = SECOND_OPINIONS[0]  # what a weak vote asks for first ("words", "look" or "off")
    dtype: str = "auto"
    backend: str = "auto"  # the runtime of a local model: auto, torch or llamacpp
    prompt: str | None = None  # None: the model's own (an adapter's), else the measured default
    temperature: float | None = None  # None: greedy for k = 1, the sampling default for k > 1
    guard: bool = True  # refuse programs that overwrite the variables handed over

    def settings(self, max_attempts: int) -> Settings:
        """The options of a question under this config (the rest at their defaults)."""
        return Settings(method=self.method, samples=self.samples, max_programs=self.max_programs,
                        second_opinion=self.second_opinion, max_attempts=max_attempts)

    @property
    def label(self) -> str:
        temperature = "" if self.temperature is None else f" T={self.temperature:g}"
        guard = "" if self.guard else " no-guard"
        runtime = "" if self.backend == "auto" else f"{self.backend} "
        if self.method == "careful":
            return (f"careful (2 greedy views; a chart: the idioms when both fail) {runtime}{self.dtype} "
                    f"{self.prompt or 'default-prompt'}{temperature}{guard}")
        effort = f" (up to {self.max_programs})" if self.samples > 1 and self.max_programs > self.samples else ""
        words = f" +{self.second_opinion}" if self.samples > 1 and self.second_opinion != "off" else ""
        return (f"k={self.samples}{effort}{words} {runtime}{self.dtype} {self.prompt or 'default-prompt'}"
                f"{temperature}{guard}")


@dataclass
class QuestionResult:
    index: int
    question: str
    expected: float | str | None
    config: Config = field(default_factory=Config)
    answer: str | None = None  # the vote's winner, as shown to the user
    correct: bool = False  # the vote's answer (maj@k; the single answer when k = 1)
    first_answer: str | None = None  # the first program of the first round, alone
    first_correct: bool = False
    any_correct: bool = False  # some program of some round was right (pass@k)
    votes: int = 0
    candidates: int = 0
    agreement: float | None = None
    confidence: str = "none"
    programs: int = 0
    programs_ran: int = 0  # of all programs, those that ran cleanly
    first_round_ran: int = 0  # of the first round's first `samples` programs, those that ran cleanly
    answered: bool = False  # some program ran cleanly
    replaced_data: int = 0  # programs that overwrote the variables handed over (refused, or run without the guard)
    answer_from_replaced: bool = False  # the answer came from a program that replaced the data
    rounds: int = 0
    more_programs: int = 0  # programs written because a vote was weak (adaptive effort)
    # What the plain vote of `samples` programs would have answered, and when (without more programs).
    plain_vote_correct: bool = False
    plain_vote_seconds: float = 0.0
    # The words answer of a weak vote (engine.reasoning), and what the question would have answered,
    # and when, had it stopped after that step (before any more programs).
    words_answer: str | None = None
    words_correct: bool | None = None
    reasoned_correct: bool | None = None  # the program that followed the words
    before_more_correct: bool = False
    before_more_seconds: float = 0.0
    error_types: list[str] = field(default_factory=list)
    seconds: float = 0.0
    completion_tokens: int = 0
    generate_s: float = 0.0
    first_token_s: float | None = None
    failure: str | None = None  # a PalError that ended the question (e.g. no code at all)


def read_rows(path: str | Path, limit: int | None = None, offset: int = 0) -> list[dict[str, Any]]:
    """Rows of a JSONL file, or of a built-in suite by name (``dataframes``, ``charts``).

    A file that is missing, not UTF-8, or has a line that is not a JSON object with a question
    is a PalError naming the line: a benchmark that silently scores broken rows as wrong lies.
    """
    if str(path) in ("dataframes", "charts"):
        from .dataframes import suite_rows

        rows = suite_rows(suite=str(path))[offset:]
        return rows[:limit] if limit is not None else rows
    rows = []
    try:
        with Path(path).open(encoding="utf-8") as handle:
            for number, line in enumerate(handle, start=1):
                if number <= offset or not line.strip():
                    continue
                rows.append(_row(line, path, number))
                if limit is not None and len(rows) >= limit:
                    break
    except FileNotFoundError:
        raise PalError(f"No data file at {path}.") from None
    except IsADirectoryError:
        raise PalError(f"{path} is a folder, not a JSONL data file.") from None
    except UnicodeDecodeError as exc:
        raise PalError(f"{path} is not UTF-8 text (byte {exc.start} of a line): give a JSONL file.") from None
    except OSError as exc:
        raise PalError(f"Could not read {path}: {exc.strerror or exc}.") from None
    return rows


def _row(line: str, path: str | Path, number: int) -> dict[str, Any]:
    try:
        row = json.loads(line)
    except json.JSONDecodeError as exc:
        raise PalError(f"Line {number} of {path} is not JSON ({exc.msg}).") from None
    if not isinstance(row, dict) or not question_of(row).strip():
        raise PalError(f"Line {number} of {path} has no question: each row needs a 'question' (or 'input') "
                       "and an 'answer' (or 'target').")
    return row


def run_benchmark(
    rows: Iterable[dict[str, Any]],
    backends: Callable[[Config], ModelBackend],
    pool: KernelPool,
    configs: Sequence[Config] = (Config(),),
    *,
    max_attempts: int = OPTIONS["max_attempts"].default,
    check_answers: bool = False,
    generation: GenerationOptions | None = None,
    limits: ExecutorLimits | None = None,
    trace: TraceWriter | None = None,
) -> Iterator[QuestionResult]:
    """Solve each row under each config in turn and yield how it went."""
    for index, row in enumerate(rows):
        expected = expected_of(row)
        for config in configs:
            result = QuestionResult(index, question_of(row), expected, config)
            checker = None
            if check_answers:
                checker = lambda run, e=expected: is_correct(read_answer(run), run, e)  # noqa: E731
            try:
                session = solve(
                    result.question, config.settings(max_attempts), model=backends(config), executor=pool,
                    prompt_style=config.prompt, guard_data=config.guard, checker=checker,
                    variables=row.get("variables"), trace=trace, limits=limits or pool.limits,  # the pool's, not defaults
                    generation=dataclasses.replace(generation or GenerationOptions(), temperature=config.temperature)
                    if config.temperature is not None else generation,
                )
                fill(result, session)
            except PalError as exc:
                result.failure = str(exc)
            yield result


def fill(result: QuestionResult, session: Session) -> None:
    """Score one session against the reference."""
    expected = result.expected
    first, final = session.programs[0], session.final
    right = [is_correct(a.program_answer, a.execution, expected) for a in session.programs]
    result.first_answer = first.answer
    result.first_correct = right[0]
    result.any_correct = any(right)
    if session.succeeded and final is not None:
        result.answer = final.answer
        result.correct = is_correct(final.program_answer, final.execution, expected)
    if session.vote is not None and session.vote.winner is not None:
        result.votes, result.candidates = session.vote.votes, session.vote.candidates
        result.agreement = session.agreement
    result.confidence = session.confidence
    result.programs = len(session.programs)
    result.programs_ran = sum(a.ran_cleanly for a in session.programs)
    result.first_round_ran = sum(a.ran_cleanly for a in session.round(1) if a.sample <= session.samples)
    result.answered = any(a.ran_cleanly for a in session.programs)
    result.replaced_data = sum(bool(a.replaced) for a in session.programs)
    result.answer_from_replaced = bool(final is not None and final.replaced and session.succeeded)
    result.rounds = session.rounds
    result.more_programs = sum(w.more for w in session.weak_votes if w.how == "more")
    # Where the loop would have stopped without any extra work (the first weak vote), and without
    # more programs (the first weak vote that asked for them): one run gives all three answers.
    plain = session.weak_votes[0] if session.weak_votes else None
    before_more = next((w for w in session.weak_votes if w.how == "more"), None)
    result.plain_vote_correct, result.plain_vote_seconds = _had_stopped(plain, result, session)
    result.before_more_correct, result.before_more_seconds = _had_stopped(before_more, result, session)
    opinion = session.second_opinion
    if opinion is not None:
        result.words_answer = opinion.answer.text if opinion.answer is not None else None
        result.words_correct = is_correct(opinion.answer, None, expected)
        reasoned = next((a for a in session.round(opinion.round) if a.sample == opinion.program), None)
        if reasoned is not None:  # the careful method's words view writes no program after the words
            result.reasoned_correct = is_correct(reasoned.program_answer, reasoned.execution, expected)
    result.error_types = [a.error_type for a in session.programs if a.error_type]
    result.seconds = session.seconds
    result.completion_tokens = sum(a.completion_tokens for a in session.programs)
    result.generate_s = session.generate_seconds
    result.first_token_s = first.first_token_s


def _had_stopped(stop: WeakVote | None, result: QuestionResult, session: Session) -> tuple[bool, float]:
    """Whether the answer was right, and when it came, had the question stopped at ``stop`` (None:
    it did not go past that point anyway)."""
    if stop is None:
        return result.correct, session.seconds
    return is_correct(stop.answer, None, result.expected), stop.seconds


def _share(values: Iterable[bool]) -> float:
    values = list(values)
    return sum(values) / len(values) if values else 0.0


def summarize(results: list[QuestionResult], *, model: str, load_seconds: float, check_answers: bool) -> dict[str, Any]:
    """The figures for one config: vote accuracy, first program, pass@k, execution, calibration, speed."""
    tokens = sum(r.completion_tokens for r in results)
    gen_s = sum(r.generate_s for r in results)
    first_tokens = [r.first_token_s for r in results if r.first_token_s is not None]
    seconds = [r.seconds for r in results]
    config = results[0].config if results else Config()
    return {
        "model": model,
        "config": to_jsonable(config),
        "questions": len(results),
        "repair_feedback": "errors + wrong answers (oracle)" if check_answers else "interpreter errors only",
        "accuracy": _share(r.correct for r in results),  # maj@k
        "accuracy_first_program": _share(r.first_correct for r in results),
        "pass_at_k": _share(r.any_correct for r in results),
        "programs": sum(r.programs for r in results),
        "exec_success_programs": (sum(r.programs_ran for r in results) / max(1, sum(r.programs for r in results))),
        "exec_success_first_round": (sum(r.first_round_ran for r in results)
                                     / max(1, sum(r.config.samples for r in results if r.programs))),
        "answered": _share(r.answered for r in results),
        "calibration": calibration(results),
        "mean_rounds": statistics.fmean([r.rounds for r in results]) if results else 0.0,
        "questions_with_more_programs": sum(r.more_programs > 0 for r in results),
        "more_programs": sum(r.more_programs for r in results),
        # The same run, as if it had stopped at the first weak vote (the loop without adaptive effort).
        "accuracy_plain_vote": _share(r.plain_vote_correct for r in results),
        "seconds_plain_vote_mean": statistics.fmean(r.plain_vote_seconds for r in results) if results else 0.0,
        # ... and as if it had stopped after the words answer, before more programs.
        "questions_with_words": sum(r.words_correct is not None for r in results),
        "words_correct": sum(bool(r.words_correct) for r in results),
        "reasoned_correct": sum(bool(r.reasoned_correct) for r in results),
        "accuracy_before_more_programs": _share(r.before_more_correct for r in results),
        "seconds_before_more_programs_mean": statistics.fmean(r.before_more_seconds for r in results) if results else 0.0,
        "calibration_shown": calibration_shown(results),
        "error_types": dict(Counter(e for r in results for e in r.error_types).most_common()),
        "replaced_data_programs": sum(r.replaced_data for r in results),
        "answers_from_replaced_data": sum(r.answer_from_replaced for r in results),
        "failures": sum(r.failure is not None for r in results),
        "seconds_per_question_mean": statistics.fmean(seconds) if seconds else 0.0,
        "seconds_per_question_median": statistics.median(seconds) if seconds else 0.0,
        "first_token_seconds_median": statistics.median(first_tokens) if first_tokens else None,
        "tokens_per_second": tokens / gen_s if gen_s else 0.0,
        "completion_tokens_total": tokens,
        "model_load_seconds": load_seconds,
    }


def calibration(results: list[QuestionResult]) -> list[dict[str, Any]]:
    """Accuracy of the vote's answer by how many programs agreed on it (the doubt signal's worth)."""
    table = []
    by_votes: dict[tuple[int, int], list[QuestionResult]] = {}
    for r in results:
        by_votes.setdefault((r.votes, r.candidates or r.config.samples), []).append(r)
    for (votes, candidates), group in sorted(by_votes.items(), key=lambda item: (-item[0][0], item[0][1])):
        table.append({
            "votes": votes, "candidates": candidates, "questions": len(group),
            "accuracy": _share(r.correct for r in group),
        })
    return table


def calibration_shown(results: list[QuestionResult]) -> dict[str, dict[str, float]]:
    """Accuracy by the confidence the user was shown ("high": sure, "medium": check it, "low": not
    sure): whether the visible doubt is honest."""
    levels: dict[str, list[QuestionResult]] = {}
    for r in results:
        levels.setdefault(r.confidence, []).append(r)
    return {level: {"questions": len(group), "accuracy": _share(r.correct for r in group)}
            for level, group in sorted(levels.items())}


def format_summaries(summaries: list[dict[str, Any]]) -> str:
    """One row per config: the comparison table."""
    header = (f"{'config':<28} {'n':>4} {'maj@k':>7} {'first':>7} {'pass@k':>7} {'ran':>6} "
              f"{'s/q med':>8} {'s/q mean':>9} {'ttft':>6} {'tok/s':>6}")
    lines = [f"model {summaries[0]['model']} (loaded in {summaries[0]['model_load_seconds']:.1f} s); "
             f"repair on: {summaries[0]['repair_feedback']}" if summaries else "no results", header]
    for s in summaries:
        label = _label(s)
        ttft = s["first_token_seconds_median"]
        lines.append(
            f"{label:<28} {s['questions']:>4} {100 * s['accuracy']:>6.1f}% {100 * s['accuracy_first_program']:>6.1f}% "
            f"{100 * s['pass_at_k']:>6.1f}% {100 * s['exec_success_first_round']:>5.1f}% "
            f"{s['seconds_per_question_median']:>8.1f} {s['seconds_per_question_mean']:>9.1f} "
            f"{(f'{ttft:.1f}' if ttft is not None else '-'):>6} {s['tokens_per_second']:>6.2f}"
        )
    for s in summaries:
        if s["config"]["samples"] > 1:
            label = _label(s)
            rows = ", ".join(f"{c['votes']}/{c['candidates']}: {100 * c['accuracy']:.0f}% of {c['questions']}"
                             for c in s["calibration"])
            lines.append(f"calibration {label}: {rows}")
    for s in summaries:
        if s.get("questions_with_more_programs"):
            lines.append(f"adaptive effort {_label(s)}: {s['more_programs']} more programs on "
                         f"{s['questions_with_more_programs']} of {s['questions']} questions; stopped at the first weak "
                         f"vote instead: {100 * s['accuracy_plain_vote']:.1f}% at {s['seconds_plain_vote_mean']:.1f} s "
                         "mean per question (same run)")
    for s in summaries:
        if s.get("questions_with_words"):
            lines.append(f"reason first {_label(s)}: worked out in words on {s['questions_with_words']} questions "
                         f"(the words right on {s['words_correct']}, the program after them on "
                         f"{s['reasoned_correct']}); stopped before more programs: "
                         f"{100 * s['accuracy_before_more_programs']:.1f}% at "
                         f"{s['seconds_before_more_programs_mean']:.1f} s mean per question (same run)")
        if s["config"]["samples"] > 1 and s.get("calibration_shown"):
            shown = ", ".join(f"{level} {100 * c['accuracy']:.0f}% of {c['questions']}"
                              for level, c in s["calibration_shown"].items())
            lines.append(f"shown confidence {_label(s)}: {shown}")
    for s in summaries:
        errors = ", ".join(f"{k} {v}" for k, v in s["error_types"].items()) or "none"
        lines.append(f"errors {_label(s)}: {errors}; programs that replaced the data: {s['replaced_data_programs']} "
                     f"of {s['programs']}, answers from them: {s['answers_from_replaced_data']}")
    return "\n".join(lines)


def _label(summary: dict[str, Any]) -> str:
    """The config's label with the runtime and dtype it resolved to ('auto' says little in a report)."""
    config = dict(summary["config"], dtype=summary.get("dtype", summary["config"]["dtype"]),
                  backend=summary.get("runtime", summary["config"].get("backend", "auto")))
    return Config(**config).label


def write_report(path: str | Path, summaries: list[dict[str, Any]], results: list[QuestionResult]) -> list[Path]:
    """The JSON report, and beside it a plot of accuracy against agreement (when k > 1 was run)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({"summaries": summaries, "results": to_jsonable(results)}, indent=2) + "\n")
    written = [path]
    if any(s["config"]["samples"] > 1 for s in summaries):
        written.append(plot_calibration(summaries, path.with_suffix(".png")))
    return written


def plot_calibration(summaries: list[dict[str, Any]], path: Path) -> Path:
    """Accuracy of the voted answer against the share of programs that agreed on it."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(5.5, 4))
    for s in summaries:
        if s["config"]["samples"] <= 1:
            continue
        points = [(c["votes"] / c["candidates"], c["accuracy"], c["questions"]) for c in s["calibration"] if c["candidates"]]
        points.sort()
        ax.plot([p[0] for p in points], [p[1] for p in points], marker="o", label=_label(s))
        for x, y, n in points:
            ax.annotate(f"n={n}", (x, y), textcoords="offset points", xytext=(4, -12), fontsize=8)
    ax.set_xlabel("agreement (programs giving the voted answer / programs drawn)")
    ax.set_ylabel("accuracy of the voted answer")
    ax.set_xlim(-0.05, 1.05)
    ax.set_ylim(-0.05, 1.05)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)
    ax.set_title("Does agreement predict a right answer?")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path
