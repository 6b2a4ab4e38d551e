"""Putting a generated program into the notebook as a new cell below the ``%%pal`` cell.

Two routes, chosen per call:

* **The JupyterLab extension** (``labextension/``, shipped in the wheel). The kernel opens a
  comm with target ``pal_jupyter``; the extension answers ``hello`` and from then on inserts or
  replaces cells by the originating cell's id, sets provenance metadata and can run the cell.
  Kernel-to-frontend comm messages travel on iopub, so this works while the magic still runs,
  after it, and from widget button callbacks. Re-running a ``%%pal`` cell replaces the cell it
  inserted before instead of adding another.
* **The IPython payload** (``set_next_input``) when no extension has answered: JupyterLab and
  Notebook 7 insert one cell below the running cell once the execute reply is ``ok``. It cannot
  replace an earlier insertion, carry metadata, or work from a button callback, and headless
  runners (nbclient, nbconvert) ignore it.
"""

from __future__ import annotations

import logging
import uuid
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from ..engine.records import Program, Session
from ..engine.vote import second_opinion_note

log = logging.getLogger(__name__)

COMM_TARGET = "pal_jupyter"
PROTOCOL_VERSION = "1"


def current_cell_id(shell: Any) -> str | None:
    """The id of the cell being executed, as JupyterLab/Notebook 7 send it in the request metadata."""
    kernel = getattr(shell, "kernel", None)
    if kernel is None:
        return None
    try:
        parent = kernel.get_parent("shell")
    except TypeError:  # ipykernel < 6.? took no channel argument
        parent = kernel.get_parent()
    return (parent or {}).get("metadata", {}).get("cellId")


class FrontendLink:
    """The comm to the JupyterLab extension; ``available`` once the extension said hello."""

    def __init__(self) -> None:
        self.available = False
        self.frontend: str | None = None
        self.replies: deque[dict[str, Any]] = deque(maxlen=100)  # the latest, for debugging; one per failed cell
        self._comm: Any = None
        self._listeners: list[Callable[[dict[str, Any]], None]] = []

    def open(self) -> None:
        """Say hello; the reply arrives once the kernel is idle again (comm replies use shell)."""
        try:
            from comm import create_comm

            self._comm = create_comm(target_name=COMM_TARGET, data={"action": "hello", "version": PROTOCOL_VERSION})
        except Exception as exc:  # no kernel (terminal IPython): the payload route is all there is
            log.debug("No comm to the frontend: %s", exc)
            return
        self._comm.on_msg(self._on_msg)
        self._comm.on_close(lambda msg: self._closed())

    def _on_msg(self, msg: dict[str, Any]) -> None:
        data = msg.get("content", {}).get("data", {}) or {}
        if data.get("action") == "hello":
            self.available, self.frontend = True, data.get("frontend")
        self.replies.append(data)
        for listener in list(self._listeners):
            listener(data)

    def _closed(self) -> None:
        self.available = False
        self._comm = None

    def send(self, data: dict[str, Any]) -> bool:
        if not (self.available and self._comm is not None):
            return False
        self._comm.send(data)
        return True

    def close(self) -> None:
        if self._comm is not None:
            try:
                self._comm.close()
            except Exception:  # closing a comm of a kernel that is going away
                pass
        self._closed()


@dataclass
class Insertion:
    route: str  # "extension", "payload" or "none"
    request_id: str | None = None


def cell_source(session: Session, program: Program | None = None) -> str:
    """The ``program`` (default: the session's final one, the vote's winner) with a
    header naming the question, the round, the vote and any doubt."""
    program = program or session.final
    assert program is not None, "a session without programs has none to insert"
    question = " ".join(session.question.split())
    if len(question) > 100:
        question = question[:97] + "..."
    which = f", program {program.sample} of {program.samples}" if program.samples > 1 else ""
    header = [f"# %%pal: {question}", f"# attempt {program.index} of {session.rounds}{which}, model {session.model}"]
    vote = session.vote
    if program is session.final and vote is not None and vote.candidates > 1 and vote.winner is not None:
        header.append(f"# {vote.tally} on {vote.winner.answer.text}")
        if second_opinion_note(vote):
            header.append(f"# {second_opinion_note(vote)}")
        if session.confidence == "low":
            header.append("# NOT SURE: the programs disagreed; check this one before relying on it.")
    if not program.good:
        problem = program.error_type or "it did not run cleanly"
        header.append(f"# WARNING: this program did not work ({problem}); check it before relying on it.")
    return "\n".join(header) + "\n" + (program.code or "# (the model wrote no code)") + "\n"


def cell_metadata(session: Session, origin_cell_id: str | None, program: Program | None = None) -> dict[str, Any]:
    program = program or session.final
    assert program is not None
    return {
        "pal_jupyter": {
            "origin_cell_id": origin_cell_id,
            "session_id": session.id,
            "attempt": program.index,
            "attempts": session.rounds,
            "program": program.sample,
            "programs": program.samples,
            "agreement": session.agreement if program is session.final else None,
            "model": session.model,
            "succeeded": program.good,
            "question": session.question,
        }
    }


def insert_program(
    shell: Any,
    link: FrontendLink | None,
    session: Session,
    origin_cell_id: str | None,
    *,
    program: Program | None = None,
    run: bool = False,
    allow_payload: bool = True,
) -> Insertion:
    """Insert (or replace) the cell for ``session``'s final program, or for ``program``."""
    source = cell_source(session, program)
    if link is not None and origin_cell_id and link.available:
        request_id = uuid.uuid4().hex[:8]
        sent = link.send(
            {
                "action": "insert",
                "source": source,
                "origin_cell_id": origin_cell_id,
                "metadata": cell_metadata(session, origin_cell_id, program),
                "run": run,
                "request_id": request_id,
            }
        )
        if sent:
            return Insertion("extension", request_id)
    if allow_payload and hasattr(shell, "set_next_input"):
        shell.set_next_input(source, replace=False)
        return Insertion("payload")
    return Insertion("none")
