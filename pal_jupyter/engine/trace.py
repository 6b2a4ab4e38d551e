"""Append-only JSONL traces: one line per program, every program a training example in waiting."""

from __future__ import annotations

import json
import os
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from .records import Program, Session, program_record


class TraceWriter:
    """Appends one JSON line per program to ``path``, flushed and fsynced per record.

    A crash loses at most the line being written; :func:`read_trace` skips a torn last line.
    """

    def __init__(self, path: str | os.PathLike[str]):
        self.path = Path(path).expanduser()
        self._lock = threading.Lock()

    def write(self, session: Session, program: Program) -> None:
        record = program_record(session, program)
        try:
            line = json.dumps(record, ensure_ascii=False, default=str)
            line.encode("utf-8")
        except UnicodeEncodeError:  # text with lone surrogates (bytes that were not UTF-8): escape it
            line = json.dumps(record, ensure_ascii=True, default=str)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        with self._lock, self.path.open("a", encoding="utf-8") as handle:
            handle.write(line + "\n")
            handle.flush()
            try:
                os.fsync(handle.fileno())
            except OSError:  # not a regular file (/dev/null, a pipe): nothing to make durable
                pass


def read_trace(path: str | os.PathLike[str]) -> Iterator[dict[str, Any]]:
    """Yield the records of a trace file, skipping lines that are not whole JSON objects."""
    with Path(path).open(encoding="utf-8", errors="replace") as handle:
        for line in handle:
            line = line.strip()
            if not line:
                continue
            try:
                record = json.loads(line)
            except json.JSONDecodeError:
                continue  # a torn line from a crash mid-write
            if isinstance(record, dict):
                yield record


def user_data_path(override_variable: str, name: str) -> Path:
    """``$override_variable`` when set, else ``$XDG_DATA_HOME/pal-jupyter/NAME`` (~/.local/share/...)."""
    explicit = os.environ.get(override_variable)
    if explicit:
        return Path(explicit).expanduser()
    data_home = os.environ.get("XDG_DATA_HOME") or Path.home() / ".local" / "share"
    return Path(data_home) / "pal-jupyter" / name


def default_trace_path() -> Path:
    """$PAL_JUPYTER_TRACE, else ``$XDG_DATA_HOME/pal-jupyter/trace.jsonl``."""
    return user_data_path("PAL_JUPYTER_TRACE", "trace.jsonl")
