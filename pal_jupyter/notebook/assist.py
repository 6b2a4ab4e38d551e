"""Assist mode: ``%%pal`` writes the programs, shows them live, and inserts the winner below."""

from __future__ import annotations

from ..engine.console import ConsoleObserver
from ..engine.loop import SolveObserver
from ..engine.records import Program, Session
from ..errors import PalError
from .runtime import NotebookRuntime, Request
from .session_html import summary_text
from .widgets import PalWidget


def ask(runtime: NotebookRuntime, request: Request) -> None:
    """Solve ``request`` with a live view; insert the winning program; keep the session."""
    view = _view(runtime, request)
    widget = view if isinstance(view, PalWidget) else None
    try:
        if widget is not None:
            widget.set_status(f"loading the model {request.settings.model!r} (the first time takes longer) ...")
        session = runtime.solve(request, observer=view)
    except PalError as exc:
        if widget is not None:
            widget.fail(str(exc))
        raise
    except KeyboardInterrupt:
        if widget is not None:
            widget.fail("Interrupted: the program's kernel was stopped; your kernel is untouched.")
        raise
    runtime.last_session = session
    if request.quiet:
        print(summary_text(session, request.question, "done" if session.succeeded else "failed"))
    if request.insert:
        insertion = runtime.insert(session, request.origin, run=request.run)
        if widget is not None and insertion.route == "extension":
            widget.inserted()
    if widget is not None:
        widget.enable_insert_buttons(runtime.link.available and request.origin is not None)
        if runtime.defaults.freeze:
            widget.freeze()


def _view(runtime: NotebookRuntime, request: Request) -> SolveObserver | None:
    if request.quiet:
        return None
    if getattr(runtime.shell, "kernel", None) is None:  # terminal IPython: no widgets
        return ConsoleObserver()

    def insert(session: Session, program: Program) -> None:
        """A widget's "Insert this program" button: that widget's session, that program."""
        runtime.insert(session, request.origin, program, allow_payload=False)

    view = PalWidget(request.question, model=request.settings.model, on_insert=insert)
    view.show()
    return view
