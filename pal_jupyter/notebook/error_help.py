"""Help where the error is: a student's own failing cell offers "Explain this error".

Students rarely know that ``%pal_explain`` exists, so the help comes to the error. IPython's
``post_run_cell`` event sees every cell's outcome; :class:`CellWatcher` keeps the recent runs
of the user's own cells (never the ``%pal`` magics themselves), so that ``%pal_explain --cell
ID`` explains *that* cell's error whatever ran since, and the tutor can re-check the cells a
student ran for an open question. When one of them fails, and the teacher's policy
(``TeacherPolicy.error_help``) allows it:

* with the JupyterLab extension connected, the kernel sends ``offer_help`` on the comm: the
  extension shows "Explain this error" (and "Hint" while a tutor question has hints left) on
  that cell, and a click inserts and runs ``%pal_explain --cell ID`` (or ``%pal_hint``) below it;
* without it (classic frontends, nbclient, a terminal) and with ``error_help = "tip"``, a
  one-line tip says once per session how to ask.

Nothing here calls the model: an offer costs one small comm message.
"""

from __future__ import annotations

import linecache
import re
import sys
import time
import traceback
from collections import OrderedDict
from dataclasses import dataclass, field
from typing import Any

from IPython.display import display

from ..classroom.cell_error import CellError, CellLine
from .cells import current_cell_id
from .context import cell_sources, code_of
from .session_html import notice_bundle

KEEP_FAILURES = 20  # failed cells remembered by id: enough for a lesson, bounded for a long session
KEEP_RUNS = 50  # recent runs, for the tutor's re-check of the cells since a question
QUIET_ERRORS = (KeyboardInterrupt, SystemExit)  # the user stopped it: nothing to explain
TIP = ("Stuck on this error? Run %pal_explain in a new cell for an explanation in plain words"
       " (%pal_hint gives the next hint of a tutor question).")

_CELL_NAME = re.compile(r"In\[(\d+)\]")
_OLD_CELL_FILE = re.compile(r"<ipython-input-(\d+)-")  # IPython before 8 named cells this way


@dataclass(frozen=True)
class CellRun:
    """One run of a user's cell: its id, its source, and the error to explain (None when it ran
    cleanly, or the user stopped it)."""

    cell_id: str | None
    source: str
    error: CellError | None = None
    finished: float = field(default_factory=time.time)

    @property
    def failed(self) -> bool:
        return self.error is not None


def cell_error(shell: Any, error: BaseException, source: str | None = None, cell: int | None = None) -> CellError:
    """The record of ``error``, raised running ``In [cell]`` (by default the cell of its outermost
    frame in a cell), whose source is ``source`` (by default that cell's, as typed; for an error
    that no cell's code raised, the last cell run)."""
    frames = cell_frames(shell, error)
    if cell is None and frames:
        cell = frames[0].cell
    if source is None:
        sources = cell_sources(shell)
        source = sources[cell] if cell is not None and cell < len(sources) else (sources[-1] if sources else "")
    return CellError(type(error).__name__, _said(error),
                     "".join(traceback.format_exception_only(type(error), error)).strip(),
                     tuple(frames), cell, source)


def _said(error: BaseException) -> str:
    try:
        return str(error)
    except Exception:  # noqa: BLE001 - a user's exception class may fail to say itself
        return "<exception str() failed>"


def cell_frames(shell: Any, error: BaseException) -> list[CellLine]:
    """The lines of the traceback in a cell's code, outermost first (with, for a SyntaxError
    raised compiling a cell, the line it could not read)."""
    frames = []
    for frame, lineno in traceback.walk_tb(error.__traceback__):
        filename = frame.f_code.co_filename
        number = cell_number(shell, filename)
        if number is not None:
            frames.append(CellLine(number, lineno, linecache.getline(filename, lineno).strip()))
    if isinstance(error, SyntaxError) and error.filename:  # raised compiling the cell: no frame of its own
        number = cell_number(shell, error.filename)
        if number is not None and error.lineno:
            frames.append(CellLine(number, error.lineno, (error.text or "").strip()))
    return frames


def cell_number(shell: Any, filename: str) -> int | None:
    """The ``In [n]`` whose code IPython compiled under ``filename``; None for any other file."""
    format_code_name = getattr(getattr(shell, "compile", None), "format_code_name", None)
    named = format_code_name(filename) if format_code_name is not None else None
    match = _CELL_NAME.fullmatch(named[1]) if named else _OLD_CELL_FILE.match(filename)
    return int(match.group(1)) if match else None


class CellWatcher:
    """Follows the user's cells (``post_run_cell``) and offers help on the failing ones."""

    def __init__(self, runtime: Any):
        self.runtime = runtime
        self.failures: OrderedDict[str, CellRun] = OrderedDict()
        self.runs: list[CellRun] = []
        # The last error a user's code cell raised, an interruption too (the notebook showed it):
        # what a question's context sends. Until a watched cell raises one, the last error from
        # before the watch began (raised before the extension was loaded, or by the cell loading it).
        self.last_error: CellError | None = None
        self.tip_shown = False
        self._shell: Any = None
        # Loaded from a cell (%load_ext), that cell ends after the watch began: it is not one of
        # the user's runs, and counting it would hide an error raised before the extension loaded.
        self._watching = False

    def register(self, shell: Any) -> None:
        events = getattr(shell, "events", None)
        if events is not None:
            events.register("pre_run_cell", self.pre_run_cell)
            events.register("post_run_cell", self.post_run_cell)
            self._shell = shell
            self.last_error = self._error_before_watch()

    def unregister(self) -> None:
        if self._shell is not None:
            for name, hook in (("pre_run_cell", self.pre_run_cell), ("post_run_cell", self.post_run_cell)):
                try:
                    self._shell.events.unregister(name, hook)
                except ValueError:  # already gone
                    pass
            self._shell = None

    @property
    def last_run(self) -> CellRun | None:
        return self.runs[-1] if self.runs else None

    def failure(self, cell_id: str) -> CellRun | None:
        return self.failures.get(cell_id)

    def runs_since(self, when: float) -> list[CellRun]:
        return [run for run in self.runs if run.finished >= when]

    # ------------------------------------------------------------------ the hook

    def pre_run_cell(self, info: Any) -> None:
        self._watching = True

    def post_run_cell(self, result: Any) -> None:
        source = getattr(result.info, "raw_cell", "") or ""
        if not code_of(source):  # empty, or a pal magic: its failures are its own one-line messages
            return
        raised = result.error_in_exec or result.error_before_exec
        error = cell_error(self._shell, raised, source, result.execution_count) if raised is not None else None
        if error is not None:
            self.last_error = error
        if not self._watching:  # the cell that loaded the extension: its error is the last, but it is no run
            return
        cell_id = getattr(result.info, "cell_id", None) or current_cell_id(self._shell)
        run = CellRun(cell_id, source, None if isinstance(raised, QUIET_ERRORS) else error)
        self._remember(run)
        if run.failed:
            self.offer(run)

    def _error_before_watch(self) -> CellError | None:
        """The last error IPython showed before the watch began (it keeps it in ``sys.last_value``),
        when a code cell raised it."""
        raised = getattr(sys, "last_value", None) or getattr(sys, "last_exc", None)
        if not isinstance(raised, BaseException):
            return None
        error = cell_error(self._shell, raised)
        return error if code_of(error.source) else None

    def _remember(self, run: CellRun) -> None:
        self.runs = [*self.runs[-(KEEP_RUNS - 1):], run]
        if run.cell_id is None:
            return
        self.failures.pop(run.cell_id, None)  # a re-run replaces (or clears) the cell's failure
        if run.failed:
            self.failures[run.cell_id] = run
            while len(self.failures) > KEEP_FAILURES:
                self.failures.popitem(last=False)

    # ------------------------------------------------------------------ the offer

    def offer(self, run: CellRun) -> None:
        """Ask the extension to show the actions on the cell, or print the tip once."""
        policy = self.runtime.policy
        if policy.error_help == "off" or policy.mode == "off":
            return
        link = self.runtime.link
        if link.available and run.cell_id:
            link.send({"action": "offer_help", "cell_id": run.cell_id, "ename": run.error.name,
                       "actions": self.actions(run)})
        elif policy.error_help == "tip" and not self.tip_shown:
            self.tip_shown = True
            display(notice_bundle(TIP), raw=True)

    def actions(self, run: CellRun) -> list[dict[str, str]]:
        actions = [{"label": "Explain this error", "code": f"%pal_explain --cell {run.cell_id}",
                    "title": "Explain the error in plain words (nothing is run again)"}]
        plan = self.runtime.tutor_plan
        if plan is not None and plan.sure and plan.shown < len(plan.hints):
            actions.append({"label": "Hint", "code": "%pal_hint", "title": "The next hint for your tutor question"})
        return actions
