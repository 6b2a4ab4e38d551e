"""Collecting what a program shows, the way a notebook would, within a byte budget.

Outputs arrive as iopub messages; :class:`OutputCollector` keeps them as nbformat outputs and
forwards each to a callback (the widget). It honours the display protocol a notebook honours:
``clear_output`` (with ``wait=True``: cleared when the next output arrives, so a redrawn plot or a
progress bar shows only its last frame) and ``update_display_data`` (a display with a
``display_id`` replaced in place).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from typing import Any

from .results import ErrorInfo

logger = logging.getLogger(__name__)

OutputCallback = Callable[[dict[str, Any]], None]
IndexedOutputCallback = Callable[[int, dict[str, Any]], None]  # (which program, output)
TRUNCATION_MARKER = "\n[output truncated]\n"


def bundle_size(data: Mapping[str, Any]) -> int:
    return sum(len(v.encode()) if isinstance(v, str) else len(repr(v)) for v in data.values())


class OutputCollector:
    """Accumulates what a program shows, within a byte budget, and forwards each output to
    ``on_output``.

    A notebook's display protocol is honoured: ``clear_output`` forgets what was shown (with
    ``wait=True`` only when the next output arrives), and ``update_display_data`` replaces the
    outputs shown under its ``display_id``. Either is forwarded as ``{"output_type": "clear_output",
    "shown": [...]}``, what is shown from now on (empty after a clear), so a front end that appends
    outputs (the widget) redraws from it and a terminal, which cannot take back what it printed,
    skips it. The budget is never given back: a program that redraws forever still stops.
    """

    def __init__(self, max_bytes: int, on_output: OutputCallback | None) -> None:
        self.remaining = max_bytes
        self.on_output = on_output
        self.streams: dict[str, list[str]] = {"stdout": [], "stderr": []}
        self.outputs: list[dict[str, Any]] = []  # display_data and execute_result bundles shown now
        self.shown: list[dict[str, Any]] = []  # everything shown now, streams too, in order: a redraw
        self.displays: dict[str, list[dict[str, Any]]] = {}  # display_id -> the bundles shown under it
        self.truncated = False
        self.clear_pending = False

    def _emit(self, output: dict[str, Any]) -> None:
        if self.on_output is None:
            return
        try:
            self.on_output(output)
        except Exception:  # a broken UI callback must not break the run
            logger.exception("on_output callback failed")

    def clear(self, wait: bool = False) -> None:
        """``clear_output``: forget what was shown, now or (``wait``) when the next output arrives."""
        if wait:
            self.clear_pending = True
            return
        self.clear_pending = False
        self.streams = {"stdout": [], "stderr": []}
        self.outputs, self.shown, self.displays = [], [], {}
        self._emit({"output_type": "clear_output", "shown": []})

    def _show(self, output: dict[str, Any]) -> None:
        self.shown.append(output)
        self._emit(output)

    def add_stream(self, name: str, text: str) -> None:
        if self.truncated:
            return
        if self.clear_pending:
            self.clear()
        raw = text.encode()
        if len(raw) > self.remaining:
            text = raw[: self.remaining].decode(errors="ignore") + TRUNCATION_MARKER
            self.truncated = True
        self.remaining -= min(len(raw), self.remaining)
        self.streams.setdefault(name, []).append(text)
        self._show({"output_type": "stream", "name": name, "text": text})

    def add_bundle(self, msg_type: str, content: Mapping[str, Any]) -> None:
        """A ``display_data``, ``execute_result`` or ``update_display_data`` message's content."""
        if self.truncated or not self._charge(dict(content.get("data") or {})):
            return
        data, metadata = dict(content.get("data") or {}), dict(content.get("metadata") or {})
        display_id = (content.get("transient") or {}).get("display_id")
        if msg_type == "update_display_data":
            self._update(display_id, data, metadata)
            return
        if self.clear_pending:
            self.clear()
        output: dict[str, Any] = {"output_type": msg_type, "data": data, "metadata": metadata}
        if msg_type == "execute_result":
            output["execution_count"] = content.get("execution_count")
        self.outputs.append(output)
        if display_id:
            self.displays.setdefault(display_id, []).append(output)
        self._show(output)

    def _charge(self, data: Mapping[str, Any]) -> bool:
        """Take a bundle's size from the budget; False (and the output is cut) when it does not fit."""
        size = bundle_size(data)
        if size > self.remaining:  # an image cannot be cut in half: drop it
            self.remaining = 0
            self.truncated = True
            self.streams["stderr"].append(TRUNCATION_MARKER)
            return False
        self.remaining -= size
        return True

    def _update(self, display_id: str | None, data: dict[str, Any], metadata: dict[str, Any]) -> None:
        """``update_display_data``: the outputs shown under ``display_id`` take the new data, in
        their places (one never shown is not shown by an update, as in a notebook). New output
        objects, not changed ones: a front end compares what it had with what it gets."""
        targets = self.displays.get(display_id or "", [])
        if not targets:
            return
        new = {id(old): {**old, "data": data, "metadata": metadata} for old in targets}
        self.outputs = [new.get(id(o), o) for o in self.outputs]
        self.shown = [new.get(id(o), o) for o in self.shown]
        self.displays[display_id or ""] = [new[id(o)] for o in targets]
        self._emit({"output_type": "clear_output", "shown": list(self.shown)})

    def add_error(self, error: ErrorInfo) -> None:
        self._emit({
            "output_type": "error", "ename": error.ename, "evalue": error.evalue,
            "traceback": error.traceback.splitlines(),
        })  # fmt: skip

    def text(self, name: str) -> str:
        return "".join(self.streams.get(name, []))
