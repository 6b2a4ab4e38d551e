"""Collect programs with known verdicts: ``pal-jupyter collect``.

For each question with a known answer, the model writes ``samples`` programs (one batch), each
runs in a child kernel, and one JSONL record per program is written to ``DIR/programs.jsonl``:
the question, the prompt, the program, what it printed, the interpreter's feedback (the
traceback cut to the program's own frames), whether it ran, whether its answer was right, and
the model and settings. That is what :mod:`.lora` trains on.

Resumable: a question's records are appended in one write and fsynced, the settings are kept in
``DIR/collect.json``, and a restart skips the questions already there (a line torn by a kill is
dropped and its question done again), so nothing is lost or written twice.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..backends import GenerationOptions, ModelBackend
from ..engine.grading import expected_of, is_correct, question_of
from ..engine.loop import solve
from ..engine.records import Program, Session
from ..errors import NoCodeError, PalError
from ..kernels import ExecutorLimits, KernelPool
from ..prompts.feedback import execution_feedback

PROGRAMS = "programs.jsonl"
MANIFEST = "collect.json"
MAX_PRINTED = 2000


def question_key(question: str) -> str:
    return hashlib.sha1(question.strip().encode("utf-8")).hexdigest()[:16]


@dataclass
class CollectStats:
    questions: int = 0  # answered in this run
    skipped: int = 0  # already in the folder
    programs: int = 0
    ran: int = 0
    correct: int = 0
    solved: int = 0  # questions with at least one right program
    seconds: float = 0.0
    by_question: list[int] = field(default_factory=list)

    def add(self, records: list[dict[str, Any]]) -> None:
        programs = [r for r in records if r.get("program")]
        self.questions += 1
        self.programs += len(programs)
        self.ran += sum(bool(r["ran"]) for r in programs)
        self.correct += sum(r["correct"] is True for r in programs)
        self.solved += any(r["correct"] is True for r in programs)


def prepare(out_dir: str | Path, settings: dict[str, Any]) -> set[str]:
    """Create or reopen a collection folder; return the keys of the questions already done.

    A folder collected with other settings is refused: mixing them would make the data lie.
    """
    folder = Path(out_dir)
    folder.mkdir(parents=True, exist_ok=True)
    manifest = folder / MANIFEST
    if manifest.exists():
        before = json.loads(manifest.read_text(encoding="utf-8"))
        if before != settings:
            changed = sorted(k for k in set(before) | set(settings) if before.get(k) != settings.get(k))
            raise PalError(f"{folder} holds a collection made with other settings ({', '.join(changed)}); "
                           "continue it with the same settings, or use another --out.")
    else:
        manifest.write_text(json.dumps(settings, indent=2) + "\n", encoding="utf-8")
    return _done_keys(folder / PROGRAMS)


def _done_keys(path: Path) -> set[str]:
    """Keys of the questions written whole; a torn last line (a kill mid-write) is cut off."""
    if not path.exists():
        return set()
    data = path.read_bytes()
    whole = data[: data.rfind(b"\n") + 1]
    if len(whole) != len(data):
        with open(path, "r+b") as handle:
            handle.truncate(len(whole))
    keys = set()
    for line in whole.decode("utf-8").splitlines():
        if line.strip():
            keys.add(json.loads(line)["key"])
    return keys


def program_records(session: Session | None, row: dict[str, Any], index: int, model: str, source: str,
                    settings: dict[str, Any], error: str | None = None) -> list[dict[str, Any]]:
    """One record per program of the session (or one saying why there was none)."""
    question = question_of(row)
    expected = expected_of(row)
    base = {"key": question_key(question), "row": index, "question": question, "expected": expected,
            "model": model, "source": source, "settings": settings}
    if session is None:
        return [{**base, "program": None, "ran": False, "correct": None, "error_type": "NoCode",
                 "feedback": error or "", "printed": ""}]
    return [{**base, **_program(program, expected)} for program in session.programs]


def _program(program: Program, expected: Any) -> dict[str, Any]:
    execution = program.execution
    printed = execution.text_output() if execution is not None else ""
    correct = is_correct(program.program_answer, execution, expected) if program.ran_cleanly else False
    # The feedback a learner gets: the interpreter's, and for a program that ran, the verdict.
    feedback = (execution_feedback(execution, correct, program.code) if execution is not None
                else program.feedback)
    return {
        "round": program.index, "sample": program.sample, "kind": program.kind,
        "messages": program.messages, "completion": program.completion, "program": program.code,
        "printed": printed[-MAX_PRINTED:], "feedback": feedback, "ran": program.ran_cleanly,
        "answer": program.answer, "error_type": program.error_type, "correct": correct,
    }


def append(path: Path, records: list[dict[str, Any]]) -> None:
    """All of a question's records in one write, then fsync: a kill leaves whole questions."""
    text = "".join(json.dumps(r, ensure_ascii=False, default=str) + "\n" for r in records)
    with open(path, "a", encoding="utf-8") as handle:
        handle.write(text)
        handle.flush()
        os.fsync(handle.fileno())


def collect(
    rows: Iterable[tuple[int, dict[str, Any]]],
    backend: ModelBackend,
    pool: KernelPool,
    out_dir: str | Path,
    settings: dict[str, Any],
    *,
    samples: int,
    max_attempts: int = 1,
    generation: GenerationOptions | None = None,
    limits: ExecutorLimits | None = None,
    on_question: Callable[[CollectStats], None] | None = None,
) -> CollectStats:
    """Answer each (index, row) not yet in ``out_dir`` and append its programs' records."""
    done = prepare(out_dir, settings)
    path = Path(out_dir) / PROGRAMS
    stats = CollectStats()
    for index, row in rows:
        question = question_of(row)
        if question_key(question) in done:
            stats.skipped += 1
            continue
        try:
            # Exactly `samples` programs per attempt: the collection's size is the caller's choice.
            session = solve(question, model=backend, executor=pool, method="vote", samples=samples, max_programs=samples,
                            second_opinion="off", max_attempts=max_attempts, generation=generation, limits=limits,
                            variables=row.get("variables"))  # its own options: what is collected, not how one asks
            records = program_records(session, row, index, backend.name, str(settings.get("data")), settings)
        except NoCodeError as exc:
            records = program_records(None, row, index, backend.name, str(settings.get("data")), settings, str(exc))
        append(path, records)
        done.add(question_key(question))
        stats.add(records)
        if on_question is not None:
            on_question(stats)
    return stats


def manifest_settings(**values: Any) -> dict[str, Any]:
    """The settings a collection is tied to (stored in collect.json, compared on resume)."""
    return json.loads(json.dumps(values, default=str))

