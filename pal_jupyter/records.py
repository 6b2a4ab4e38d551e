"""Typed records that flow through the repair loop, and their JSON form.

``ExecutionResult`` is what the child-kernel executor returns for one program run;
``Attempt`` is one model turn (prompt -> completion -> code -> execution); ``Session`` is one
question with all its attempts. All of them serialise to plain JSON via :func:`to_jsonable`.
"""

from __future__ import annotations

import dataclasses
import enum
from dataclasses import dataclass, field
from typing import Any


class StopReason(str, enum.Enum):
    """Why a program run ended."""

    OK = "ok"  # ran to completion without an exception
    ERROR = "error"  # raised an exception (the kernel survived)
    TIMEOUT = "timeout"  # ran past its wall-clock limit and was interrupted (or killed)
    DIED = "died"  # the kernel process died (os._exit, segfault, CPU limit, OOM kill)
    OUTPUT_LIMIT = "output_limit"  # printed more than the output cap and was interrupted


@dataclass
class ErrorInfo:
    """An exception raised by the program, with a traceback fit for humans and models."""

    ename: str
    evalue: str
    traceback: str  # ANSI colour stripped; cell references rewritten as program.py lines
    lineno: int | None = None  # line of the generated program where it failed, when known


@dataclass
class ExecutionResult:
    """Everything observed while running one program in a child kernel."""

    reason: StopReason
    stdout: str = ""
    stderr: str = ""
    # display_data / execute_result bundles in order: {"data": {mime: value}, "metadata": {...}}
    outputs: list[dict[str, Any]] = field(default_factory=list)
    error: ErrorInfo | None = None
    duration_s: float = 0.0
    truncated: bool = False  # output was cut at the cap

    @property
    def ok(self) -> bool:
        return self.reason is StopReason.OK

    def text_output(self) -> str:
        """stdout followed by the text/plain of any execute_result (what a user 'sees' as text)."""
        parts = [self.stdout]
        for bundle in self.outputs:
            if bundle.get("output_type") == "execute_result" and "text/plain" in bundle.get("data", {}):
                parts.append(str(bundle["data"]["text/plain"]) + "\n")
        return "".join(parts)

    def has_mime(self, mime: str) -> bool:
        return any(mime in bundle.get("data", {}) for bundle in self.outputs)


def to_jsonable(value: Any) -> Any:
    """Convert records (dataclasses, enums, nested containers) into JSON-ready data."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: to_jsonable(getattr(value, f.name)) for f in dataclasses.fields(value)}
    if isinstance(value, enum.Enum):
        return value.value
    if isinstance(value, dict):
        return {str(k): to_jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [to_jsonable(v) for v in value]
    return value


@dataclass
class Attempt:
    """One model turn: prompt -> completion -> program -> run. A training example in waiting."""

    index: int  # 1-based
    kind: str  # "initial" (PAL prompt) or "repair" (after interpreter feedback)
    messages: list[dict[str, str]]  # the chat prompt given to the model
    completion: str = ""  # the model's raw reply
    code: str | None = None  # the program extracted from it (None: the reply held no code)
    explanation: str = ""  # the model's plain-language account of the previous error
    no_code_reason: str | None = None
    execution: ExecutionResult | None = None
    answer: str | None = None  # the last line the program printed
    correct: bool | None = None  # checker's verdict; None when no checker was given
    feedback: str = ""  # what the interpreter said, as given to the next prompt
    prompt_tokens: int = 0
    completion_tokens: int = 0
    generate_s: float = 0.0
    first_token_s: float | None = None
    execute_s: float = 0.0

    @property
    def ran_cleanly(self) -> bool:
        return self.execution is not None and self.execution.ok

    @property
    def good(self) -> bool:
        return self.ran_cleanly and self.correct is not False

    @property
    def reward(self) -> str:
        """LeTI's reward token for this program."""
        return "<|good|>" if self.good else "<|bad|>"

    @property
    def error_type(self) -> str | None:
        """A short label for what went wrong: exception name, stop reason, NoCode or WrongAnswer."""
        if self.code is None:
            return "NoCode"
        if self.execution is None:
            return None
        if self.execution.error is not None:
            return self.execution.error.ename
        if not self.execution.ok:
            return self.execution.reason.value
        return "WrongAnswer" if self.correct is False else None


@dataclass
class Session:
    """One question and every attempt made at it."""

    id: str
    question: str
    model: str
    attempts: list[Attempt] = field(default_factory=list)
    started_at: str = ""  # ISO 8601, UTC
    seconds: float = 0.0
    variables: list[str] = field(default_factory=list)  # names sent into the child kernel

    @property
    def succeeded(self) -> bool:
        return bool(self.attempts) and self.attempts[-1].good

    @property
    def final(self) -> Attempt | None:
        """The attempt to show and insert: the successful one, or else the last one."""
        return self.attempts[-1] if self.attempts else None

    @property
    def answer(self) -> str | None:
        return self.final.answer if self.succeeded and self.final else None

    @property
    def tokens_per_second(self) -> float:
        tokens = sum(a.completion_tokens for a in self.attempts)
        seconds = sum(a.generate_s for a in self.attempts)
        return tokens / seconds if seconds else 0.0


def attempt_record(session: Session, attempt: Attempt) -> dict[str, Any]:
    """The JSONL trace line for one attempt (self-contained: it repeats the question)."""
    record = to_jsonable(attempt)
    if attempt.execution is not None:
        # Images are large and carry nothing a text model learns from: keep their MIME type only.
        for bundle in record["execution"]["outputs"]:
            bundle["data"] = {k: (v if k.startswith("text/") else f"<{k} omitted>") for k, v in bundle["data"].items()}
    record.update(
        session_id=session.id,
        question=session.question,
        model=session.model,
        reward=attempt.reward,
        error_type=attempt.error_type,
        started_at=session.started_at,
    )
    return record


def leti_text(record: dict[str, Any]) -> str:
    """Turn a trace line into LeTI training text: instruction, program, reward token, feedback."""
    program = record.get("code") or ""
    feedback = record.get("feedback") or "(ran without errors)"
    return (
        f"{record['question']}\n```python\n{program}\n```\n"
        f"{record['reward']}\nInterpreter feedback:\n{feedback}\n"
    )
