"""What running one program in a child kernel produced: how it ended, its output, its error."""

from __future__ import annotations

import enum
from dataclasses import dataclass, field
from typing import Any

from .charts import Chart


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
    # What the program's figures draw (.charts), read back when it ran cleanly and showed a figure;
    # None when it showed none, or they could not be read (closed by the program, say).
    charts: list[Chart] | None = None

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

    @property
    def shows_figure(self) -> bool:
        """It displayed a picture (a matplotlib figure comes as PNG, or SVG when configured so)."""
        return self.has_mime("image/png") or self.has_mime("image/svg+xml")
