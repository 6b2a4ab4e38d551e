"""The repair loop: question -> prompt -> model -> code -> child kernel -> feedback -> next prompt.

:func:`solve` is the one entry point that the ``%%pal`` magic, the CLI and the benchmark all
call. It is a plain function over explicit collaborators (a model backend and a kernel pool),
reports progress to an optional :class:`SolveObserver`, and returns a :class:`Session` holding
a typed :class:`Attempt` for every model turn.
"""

from __future__ import annotations

import contextlib
import logging
import time
import uuid
from collections.abc import Callable, Iterator, Mapping
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from . import prompts
from .errors import EmptyQuestionError, NoCodeError
from .executor import ExecutorLimits, KernelPool
from .extraction import extract_code, free_names
from .model import GenerationOptions, ModelBackend, load_model
from .records import Attempt, ExecutionResult, Session
from .trace import TraceWriter

log = logging.getLogger(__name__)

Checker = Callable[[ExecutionResult], bool]


class SolveObserver:
    """Receives progress while :func:`solve` runs. Override what you need; all are no-ops."""

    def session_started(self, session: Session) -> None: ...
    def attempt_started(self, attempt: Attempt) -> None: ...
    def token(self, attempt: Attempt, text: str) -> None: ...
    def code_ready(self, attempt: Attempt) -> None: ...
    def output(self, attempt: Attempt, output: dict[str, Any]) -> None: ...
    def attempt_finished(self, attempt: Attempt) -> None: ...
    def session_finished(self, session: Session) -> None: ...


def solve(
    question: str,
    *,
    model: ModelBackend | str = "default",
    executor: KernelPool | None = None,
    max_attempts: int = 3,
    checker: Checker | None = None,
    variables: Mapping[str, Any] | None = None,
    namespace: Mapping[str, Any] | None = None,
    generation: GenerationOptions | None = None,
    limits: ExecutorLimits | None = None,
    trace: str | Path | TraceWriter | None = None,
    observer: SolveObserver | None = None,
) -> Session:
    """Answer ``question`` with a program, repairing it from interpreter feedback.

    Stops at the first attempt that runs cleanly (and that ``checker`` accepts, when given),
    or after ``max_attempts``. ``variables`` are copied into the child kernel and described in the
    prompt; of ``namespace`` (e.g. a notebook's globals) only the names a program actually uses
    are copied in, so a program can work on the user's data it was not told about. Every attempt is
    appended to ``trace`` (a JSONL path) when given. The returned session's ``final`` attempt is
    the one to show: the successful program, or the last one tried.
    """
    question = (question or "").strip()
    if not question:
        raise EmptyQuestionError()
    if max_attempts < 1:
        raise ValueError("max_attempts must be at least 1")
    observer = observer or SolveObserver()
    writer = TraceWriter(trace) if isinstance(trace, (str, Path)) else trace
    with _pool(executor, limits) as pool:  # starts warming a kernel while the model loads
        backend = load_model(model) if isinstance(model, str) else model
        session = Session(
            id=uuid.uuid4().hex[:12],
            question=question,
            model=backend.name,
            started_at=datetime.now(timezone.utc).isoformat(timespec="seconds"),
            variables=sorted(variables or {}),
        )
        observer.session_started(session)
        start = time.perf_counter()
        messages = prompts.pal_messages(question, variables)
        for index in range(1, max_attempts + 1):
            attempt = _run_attempt(index, messages, backend, pool, checker, variables, namespace, generation, observer)
            session.attempts.append(attempt)
            session.seconds = time.perf_counter() - start
            if writer is not None:
                _record(writer, session, attempt)
            observer.attempt_finished(attempt)
            if attempt.good:
                break
            repeated = any(a.code == attempt.code for a in session.attempts[:-1] if a.code is not None)
            messages = prompts.repair_messages(question, attempt.code, attempt.feedback, variables, repeated=repeated)
    observer.session_finished(session)
    if not any(a.code is not None for a in session.attempts):
        raise NoCodeError(
            f"The model wrote no Python code in {len(session.attempts)} attempt(s); "
            f"last reply: {session.attempts[-1].no_code_reason}. Try rephrasing the question or a larger model."
        )
    return session


def _run_attempt(
    index: int,
    messages: list[dict[str, str]],
    backend: ModelBackend,
    pool: KernelPool,
    checker: Checker | None,
    variables: Mapping[str, Any] | None,
    namespace: Mapping[str, Any] | None,
    generation: GenerationOptions | None,
    observer: SolveObserver,
) -> Attempt:
    attempt = Attempt(index=index, kind="initial" if index == 1 else "repair", messages=messages)
    observer.attempt_started(attempt)
    reply = backend.generate(messages, generation, on_token=lambda text: observer.token(attempt, text))
    attempt.completion = reply.text
    attempt.prompt_tokens, attempt.completion_tokens = reply.prompt_tokens, reply.completion_tokens
    attempt.generate_s, attempt.first_token_s = reply.seconds, reply.first_token_s
    try:
        extracted = extract_code(reply.text)
    except NoCodeError as exc:
        attempt.no_code_reason = str(exc)
        attempt.feedback = "No Python code block was found in the reply."
        return attempt
    attempt.code, attempt.explanation = extracted.code, extracted.explanation
    observer.code_ready(attempt)
    run_variables = {**_used_from(namespace, attempt.code), **(variables or {})}
    result = pool.run(attempt.code, run_variables, on_output=lambda out: observer.output(attempt, out))
    attempt.execution, attempt.execute_s = result, result.duration_s
    attempt.answer = _last_line(result.stdout)  # what it printed; a table or plot is not "an answer"
    if checker is not None and result.ok:
        attempt.correct = bool(checker(result))
    attempt.feedback = prompts.execution_feedback(result, attempt.correct, attempt.code)
    return attempt


@contextlib.contextmanager
def _pool(executor: KernelPool | None, limits: ExecutorLimits | None) -> Iterator[KernelPool]:
    """Use the caller's pool, or a private one that is closed when the question is done."""
    if executor is not None:
        yield executor
        return
    pool = KernelPool(limits)
    try:
        yield pool
    finally:
        pool.close()


def _record(writer: TraceWriter, session: Session, attempt: Attempt) -> None:
    """Append to the trace; a full disk or a read-only path must not cost the user their answer."""
    try:
        writer.write(session, attempt)
    except OSError as exc:
        log.warning("Could not append to the trace %s: %s", writer.path, exc)


def _used_from(namespace: Mapping[str, Any] | None, code: str) -> dict[str, Any]:
    """The values of ``namespace`` that ``code`` reads without defining, when they can be copied."""
    if not namespace:
        return {}
    import cloudpickle

    used = {}
    for name in free_names(code):
        if name in namespace:
            try:
                cloudpickle.dumps(namespace[name])
            except Exception:  # the program will raise NameError: feedback the model can use
                log.info("not copying %s into the child kernel: it cannot be pickled", name)
                continue
            used[name] = namespace[name]
    return used


def _last_line(text: str) -> str | None:
    lines = [line.strip() for line in text.strip().splitlines() if line.strip()]
    return lines[-1] if lines else None
