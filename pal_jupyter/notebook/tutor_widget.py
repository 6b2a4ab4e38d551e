"""The tutor's widget: hints revealed one level at a time, or the approaches of an answer the tutor
is not sure of, with the same static fallbacks as the attempt widget (:mod:`.widgets`)."""

from __future__ import annotations

import html
from collections.abc import Callable
from typing import Any

from .session_html import STYLE, highlight
from .widgets import LiveDisplay


def hint_html(hint: Any) -> str:
    body = (f"<div class='pal-code'>{highlight(hint.text)}</div>" if hint.is_code
            else f"<div class='pal-explanation'>{html.escape(hint.text).replace(chr(10), '<br>')}</div>")
    return f"<div class='pal-hint' data-level='{hint.level}'><b>Hint {hint.level}: {html.escape(hint.title)}</b>{body}</div>"


def approach_html(approach: Any) -> str:
    body = f"<div class='pal-code'>{highlight(approach.skeleton)}</div>" if approach.skeleton else ""
    return f"<div class='pal-approach'><b>{html.escape(approach.label)}</b>{body}</div>"


def hint_text(hint: Any) -> str:
    return f"Hint {hint.level}: {hint.title}\n{hint.text}"


class TutorWidget(LiveDisplay):
    """Hints revealed one level at a time, with a "Next hint" button."""

    def __init__(self, question: str, on_next: Callable[[], None]):
        import ipywidgets as w

        self.question = question
        self.status = "checking that I can solve it myself ..."
        self.header = w.HTML()
        self.hints = w.VBox([])
        self.revealed: list[Any] = []
        self.approaches: list[Any] = []
        self.plan: Any = None  # the question this widget shows; its "Next hint" reveals that one's hints
        self.next_button = w.Button(description="Next hint", icon="lightbulb-o", disabled=True)
        self.next_button.add_class("pal-next-hint")
        self.next_button.on_click(lambda _button: on_next())
        self.note = w.HTML()
        self.box = w.VBox([w.HTML(STYLE), self.header, self.hints, w.HBox([self.next_button, self.note])])
        self.box.add_class("pal-widget")
        self.box.add_class("pal-tutor")
        self._render()

    def mimebundle(self) -> dict[str, Any]:
        bundle = dict(self.box._repr_mimebundle_() or {})
        lines = [f"%%pal --tutor: {self.question}", self.status, *(hint_text(h) for h in self.revealed)]
        lines += [f"{a.label}\n{a.skeleton or ''}".rstrip() for a in self.approaches]
        bundle["text/plain"] = "\n".join(lines)
        bundle["text/html"] = (STYLE + self._header_html() + "".join(hint_html(h) for h in self.revealed)
                               + "".join(approach_html(a) for a in self.approaches))
        return bundle

    def _header_html(self) -> str:
        return (f"<div class='pal-header'><b>Tutor</b> {html.escape(self.question)}</div>"
                f"<div class='pal-status'>{html.escape(self.status)}</div>")

    def _render(self) -> None:
        self.header.value = self._header_html()
        self._refresh_fallback()

    def set_status(self, status: str) -> None:
        self.status = status
        self._render()

    def reveal(self, hint: Any) -> None:
        self.revealed.append(hint)
        self.hints.children = [*self.hints.children, self._hint_widget(hint)]
        self._render()

    @staticmethod
    def _hint_widget(hint: Any) -> Any:
        import ipywidgets as w

        return w.HTML(hint_html(hint))

    def show_approaches(self, approaches: list[Any]) -> None:
        """The competing approaches of an answer the tutor is not sure of (no hints follow)."""
        import ipywidgets as w

        self.approaches = list(approaches)
        self.hints.children = [*self.hints.children, *(w.HTML(approach_html(a)) for a in approaches)]
        self._render()

    def set_next(self, remaining: int, note: str = "") -> None:
        self.next_button.disabled = remaining <= 0
        self.note.value = f"<span class='pal-status'>{html.escape(note)}</span>"
