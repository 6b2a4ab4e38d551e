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

import time
import traceback
from collections import OrderedDict
from dataclasses import dataclass, field
from typing import Any

from IPython.display import display

from .cells import current_cell_id
from .context import cell_frames, code_of
from .session_html import notice_bundle

KEEP_FAILURES = 20  # failed cells remembered by id: enough for a lesson, bounded for a long session
KEEP_RUNS = 50  # recent runs, for the tutor's re-check of the cells since a question
QUIET_ERRORS = (KeyboardInterrupt, SystemExit)  # the user stopped it: nothing to explain
TIP = ("Stuck on this error? Run %pal_explain in a new cell for an explanation in plain words"
       " (%pal_hint gives the next hint of a tutor question).")


@dataclass
class CellRun:
    """One run of a user's cell: its source, and the error it raised with where it failed."""

    cell_id: str | None
    source: str
    error: BaseException | None = None
    number: int | None = None  # In [n]
    failed_at: tuple[int, int, str] | None = None  # (In [n], line, code) of the failing line, if in a cell
    finished: float = field(default_factory=time.time)

    @classmethod
    def of(cls, shell: Any, cell_id: str | None, source: str, error: BaseException | None,
           number: int | None = None) -> CellRun:
        """A run of cell ``In [number]`` (by default the cell the error was raised from); with an
        error, where in the notebook's cells it failed."""
        frames = cell_frames(shell, error) if error is not None else []
        if number is None and frames:
            number = frames[0][0]
        return cls(cell_id, source, error, number, frames[-1] if frames else None)

    @property
    def failed(self) -> bool:
        return self.error is not None

    @property
    def error_name(self) -> str:
        return type(self.error).__name__ if self.error is not None else ""

    def error_text(self) -> str:
        """The error as a beginner reads it: the failing line, then the exception line."""
        if self.error is None:
            return ""
        text = "".join(traceback.format_exception_only(type(self.error), self.error)).strip()
        if self.failed_at is not None and not isinstance(self.error, SyntaxError):  # a SyntaxError shows its line
            number, line, code = self.failed_at
            where = f"line {line}" if number == self.number else f"In [{number}], line {line}"
            text = f"{where}: {code}\n{text}"
        return text


class CellWatcher:
    """Follows the user's cells (``post_run_cell``) and offers help on the failing ones."""

    def __init__(self, runtime: Any):
        self.runtime = runtime
        self.failures: OrderedDict[str, CellRun] = OrderedDict()
        self.runs: list[CellRun] = []
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

    def unregister(self) -> None:
        if self._shell is not None:
            for name, hook in (("pre_run_cell", self.pre_run_cell), ("post_run_cell", self.post_run_cell)):
                try:
                    self._shell.events.unregister(name, hook)
                except ValueError:  # already gone
                    pass
            self._shell = None

    @property
    def last(self) -> CellRun | None:
        return self.runs[-1] if self.runs else None

    def failure(self, cell_id: str) -> CellRun | None:
        return self.failures.get(cell_id)

    def runs_since(self, when: float) -> list[CellRun]:
        return [run for run in self.runs if run.finished >= when]

    # ------------------------------------------------------------------ the hook

    def pre_run_cell(self, info: Any) -> None:
        self._watching = True

    def post_run_cell(self, result: Any) -> None:
        if not self._watching:  # the cell that loaded the extension
            return
        source = getattr(result.info, "raw_cell", "") or ""
        if not code_of(source):  # empty, or a pal magic: its failures are its own one-line messages
            return
        error = result.error_in_exec or result.error_before_exec
        if isinstance(error, QUIET_ERRORS):
            error = None
        cell_id = getattr(result.info, "cell_id", None) or current_cell_id(self._shell)
        run = CellRun.of(self._shell, cell_id, source, error, result.execution_count)
        self._remember(run)
        if run.failed:
            self.offer(run)

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
            link.send({"action": "offer_help", "cell_id": run.cell_id, "ename": run.error_name,
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
