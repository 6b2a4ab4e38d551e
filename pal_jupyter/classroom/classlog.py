"""Append-only JSONL class logs: one file per student, one line per tutoring event.

Every question asked, hint shown, attempt run, check, reveal and final outcome becomes one
JSON object on its own line of ``<log_dir>/<user>.jsonl``. Each record is written with a
single ``write`` to a file opened in append mode, then fsynced before the call returns, so a
crash (kernel killed, machine off) loses at most the record being written. A torn last line
is skipped by :func:`read_log` and counted in :class:`ReadStats`; the next writer starts a
fresh line first, so one torn record never spoils the ones after it.

Several kernels of one student may append to the same file at once: a thread lock serialises
writers in one process and ``flock`` (where the platform has it) serialises processes.
"""

from __future__ import annotations

import getpass
import hashlib
import json
import logging
import os
import re
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone
from functools import partialmethod
from pathlib import Path
from typing import Any

from ..errors import PalError

try:  # POSIX only; on Windows the thread lock is all we have.
    import fcntl
except ImportError:  # pragma: no cover - exercised on Windows only
    fcntl = None  # type: ignore[assignment]

log = logging.getLogger(__name__)

EVENTS = frozenset({"question", "hint", "attempt", "check", "reveal", "explain", "solved", "gave_up"})


def utc_now() -> str:
    """ISO 8601 time in UTC with milliseconds (sorts as text, parses with pandas)."""
    return datetime.now(timezone.utc).isoformat(timespec="milliseconds")


def default_log_dir() -> Path:
    """$PAL_JUPYTER_LOG_DIR, else ``$XDG_DATA_HOME/pal-jupyter/logs`` (~/.local/share/...)."""
    from ..engine.trace import user_data_path

    return user_data_path("PAL_JUPYTER_LOG_DIR", "logs")


def default_user() -> str:
    """The JupyterHub user when running under a hub, else the login name."""
    for variable in ("JUPYTERHUB_USER", "USER"):
        if os.environ.get(variable):
            return os.environ[variable]
    try:
        return getpass.getuser()
    except (OSError, KeyError):  # containers without a passwd entry for our uid
        return "unknown"


def safe_file_stem(user: str) -> str:
    """A file name for ``user`` that cannot leave the log folder or hide as a dot file.

    When characters had to be replaced a short hash of the real name is appended, so that
    'a b' and 'a_b' still get separate files (the records keep the real name either way).
    """
    stem = re.sub(r"[^A-Za-z0-9._@+-]", "_", user).lstrip(".")[:80]
    if stem != user or not stem:
        stem = f"{stem or 'user'}-{hashlib.sha1(user.encode('utf-8')).hexdigest()[:8]}"
    return stem


@dataclass
class LogEvent:
    """One tutoring event. Optional fields that are None are left out of the JSON line."""

    event: str  # one of EVENTS
    question_id: str
    question: str = ""
    user: str = ""
    ts: str = field(default_factory=utc_now)
    level: int | None = None  # hint level: 1 sub-questions, 2 skeleton, 3 full program
    error_type: str | None = None  # e.g. "NameError", "WrongAnswer"
    succeeded: bool | None = None
    seconds: float | None = None
    tutor_solved: bool | None = None  # could the tutor itself write a working program?
    agreement: float | None = None  # share of the tutor's programs that agreed on its answer
    details: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        record: dict[str, Any] = {"ts": self.ts, "user": self.user, "event": self.event,
                                  "question_id": self.question_id, "question": self.question}
        for name in ("level", "error_type", "succeeded", "seconds", "tutor_solved", "agreement"):
            value = getattr(self, name)
            if value is not None:
                record[name] = value
        if self.details:
            record["details"] = self.details
        return record


class ClassLog:
    """Appends one student's tutoring events to ``<log_dir>/<user>.jsonl``.

    ``log.record("hint", "q1", level=2)`` or the shortcuts ``log.question("q1", "What is ...")``,
    ``log.hint(...)``, ``log.attempt(...)``, ``log.check(...)``, ``log.reveal(...)``,
    ``log.explain(...)``, ``log.solved(...)``, ``log.gave_up(...)``. Events after the question
    event may leave ``question`` out: the text given with the question id is repeated, so each
    line stands on its own.
    """

    def __init__(self, log_dir: str | os.PathLike[str] | None = None, user: str | None = None):
        self.user = user or default_user()
        self.log_dir = Path(log_dir if log_dir is not None else default_log_dir()).expanduser()
        self.log_dir.mkdir(parents=True, exist_ok=True)
        self.path = self.log_dir / f"{safe_file_stem(self.user)}.jsonl"
        self._lock = threading.Lock()
        self._questions: dict[str, str] = {}

    def record(self, event: str, question_id: str, question: str = "", **fields: Any) -> LogEvent:
        """Build, append and return one event; unknown event names are a programming error."""
        if event not in EVENTS:
            raise ValueError(f"unknown class-log event {event!r}; expected one of {sorted(EVENTS)}")
        if question:
            self._questions[question_id] = question
        entry = LogEvent(event=event, question_id=question_id, user=self.user,
                         question=question or self._questions.get(question_id, ""), **fields)
        self.write(entry)
        return entry

    question = partialmethod(record, "question")
    hint = partialmethod(record, "hint")
    attempt = partialmethod(record, "attempt")
    check = partialmethod(record, "check")
    reveal = partialmethod(record, "reveal")
    explain = partialmethod(record, "explain")
    solved = partialmethod(record, "solved")
    gave_up = partialmethod(record, "gave_up")

    def recent(self, seconds: float) -> list[dict[str, Any]]:
        """This student's records of the last ``seconds`` (for the policy's hourly limit)."""
        if not self.path.exists():
            return []
        since = (datetime.now(timezone.utc) - timedelta(seconds=seconds)).isoformat(timespec="milliseconds")
        return [record for record in read_log(self.path) if str(record.get("ts", "")) >= since]

    def write(self, entry: LogEvent) -> None:
        """Append ``entry`` as one line and fsync it before returning."""
        data = (json.dumps(entry.to_dict(), ensure_ascii=False, default=str) + "\n").encode("utf-8")
        with self._lock, open(self.path, "a+b", buffering=0) as handle:
            fd = handle.fileno()
            if fcntl is not None:
                fcntl.flock(fd, fcntl.LOCK_EX)  # released when the file closes
            if _ends_mid_line(fd):
                # A writer died mid-record: start on a fresh line so this record stays readable.
                data = b"\n" + data
            _write_all(handle, data)
            handle.flush()
            os.fsync(fd)


def _ends_mid_line(fd: int) -> bool:
    size = os.fstat(fd).st_size
    return size > 0 and os.pread(fd, 1, size - 1) != b"\n"


def _write_all(handle: Any, data: bytes) -> None:
    """Unbuffered writes may be short (signals, full disks): loop until all bytes are out."""
    view = memoryview(data)
    while view:
        written = handle.write(view)
        view = view[written:]


@dataclass
class ReadStats:
    """What a read saw: files opened, records yielded, torn or invalid lines skipped."""

    files: int = 0
    records: int = 0
    skipped: int = 0


def read_log(path: str | os.PathLike[str], stats: ReadStats | None = None) -> Iterator[dict[str, Any]]:
    """Yield the event records of one log file; torn or invalid lines are skipped and counted."""
    stats = stats if stats is not None else ReadStats()
    stats.files += 1
    with Path(path).open("rb") as handle:
        for lineno, line in enumerate(handle, 1):
            if not line.strip():
                continue
            try:
                record = json.loads(line)
            except ValueError:  # JSONDecodeError and UnicodeDecodeError: a torn line
                record = None
            if not isinstance(record, dict) or not isinstance(record.get("event"), str):
                stats.skipped += 1
                log.debug("skipping unreadable line %d of %s", lineno, path)
                continue
            stats.records += 1
            yield record


def log_files(log_dir: str | os.PathLike[str]) -> list[Path]:
    """Every ``*.jsonl`` under ``log_dir`` (subfolders too, e.g. one per class), sorted."""
    return sorted(p for p in Path(log_dir).expanduser().rglob("*.jsonl") if p.is_file())


def read_log_dir(log_dir: str | os.PathLike[str], stats: ReadStats | None = None) -> Iterator[dict[str, Any]]:
    """Yield the records of every log file under ``log_dir``."""
    for path in log_files(log_dir):
        yield from read_log(path, stats)


def writable_file(out: Path, what: str) -> Path:
    """``out``, once its folder exists and it can be written; else a PalError naming ``what`` (say "the
    report"), so that a command fails in a second rather than after its work."""
    try:
        out.parent.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise PalError(f"Could not write {what} to {out}: {exc.strerror or exc}. Choose another --out.") from None
    if out.is_dir() or not os.access(out.parent, os.W_OK) or (out.exists() and not os.access(out, os.W_OK)):
        raise PalError(f"Could not write {what} to {out}: not a writable file. Choose another --out.")
    return out
