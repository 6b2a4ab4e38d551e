"""The live attempt widget, and the static summary shown where no widget can render.

:class:`PalWidget` is a :class:`~pal_jupyter.loop.SolveObserver`: the repair loop drives it.
It shows a header (question, status, answer) and one Accordion page per attempt with the
tokens as the model writes them, then the highlighted program, the child kernel's output
(text, DataFrame HTML, plots), the error, and the model's plain-language explanation.

Where no widget frontend is present (nbclient, nbconvert, a terminal), the same display carries
a text/plain and a text/html summary, updated when the question is done, so a saved notebook
shows the final state rather than "starting".
"""

from __future__ import annotations

import html
import time
from collections.abc import Callable
from typing import Any

from .loop import SolveObserver
from .records import Attempt, Session

_TOKEN_REFRESH_S = 0.1  # stream tokens to the browser at most ten times a second

STYLE = """
<style>
.pal-header {font-size: 1.05em; line-height: 1.5;}
.pal-status {color: #555;}
.pal-answer {font-size: 1.4em; font-weight: 600; color: #1a7f37; margin: 0.2em 0;}
.pal-failed {font-size: 1.1em; font-weight: 600; color: #b42318; margin: 0.2em 0;}
.pal-stream, .pal-error {white-space: pre-wrap; font-family: var(--jp-code-font-family, monospace);
  font-size: 0.9em; padding: 0.4em; border-radius: 4px; margin: 0;}
.pal-stream {background: var(--jp-layout-color2, #f5f5f5); color: var(--jp-ui-font-color1, #222);}
.pal-error {background: #fff1f0; color: #8c1d18;}
.pal-explanation {background: #eef6ff; border-left: 3px solid #2f6feb; padding: 0.4em 0.6em;}
.pal-code .highlight pre {margin: 0; padding: 0.4em; font-size: 0.9em;}
</style>
"""


def highlight(code: str) -> str:
    """Python syntax highlighting as self-contained HTML (inline styles travel everywhere)."""
    from pygments import highlight as pyg_highlight
    from pygments.formatters import HtmlFormatter
    from pygments.lexers import PythonLexer

    return pyg_highlight(code, PythonLexer(), HtmlFormatter(noclasses=True, style="default"))


def attempt_status(attempt: Attempt) -> str:
    if attempt.code is None:
        return "no code in the reply"
    if attempt.execution is None:
        return "running ..."
    verdict = "worked" if attempt.good else (attempt.error_type or "failed")
    return f"{verdict} (model {attempt.generate_s:.1f} s, run {attempt.execute_s:.2f} s)"


def attempt_title(attempt: Attempt) -> str:
    kind = "program" if attempt.kind == "initial" else "repair"
    finished = attempt.execution is not None or attempt.no_code_reason is not None
    mark = ("✓ " if attempt.good else "✗ ") if finished else ""  # no verdict while it is written or run
    return f"{mark}Attempt {attempt.index}: {kind}"


def summary_text(session: Session | None, question: str, status: str) -> str:
    lines = [f"%%pal: {question}"]
    if session is not None and session.succeeded and session.answer is not None:
        lines.append(f"Answer: {session.answer}")
    lines.append(status)
    if session is not None:
        for attempt in session.attempts:
            lines.append(f"  attempt {attempt.index}: {attempt_status(attempt)}")
            if attempt.explanation:
                lines.append(f"    explanation: {attempt.explanation}")
        final = session.final
        if final is not None and final.code:
            lines += ["", final.code]
    return "\n".join(lines)


def summary_html(session: Session | None, question: str, status: str, finished: bool = True) -> str:
    """A static rendering of the whole session (for saved notebooks and HTML exports)."""
    parts = [STYLE, f"<div class='pal-header'><b>%%pal</b> {html.escape(question)}</div>",
             _status_html(session, status, finished)]
    for attempt in session.attempts if session else []:
        parts.append(f"<details {'open' if attempt is session.final else ''}><summary>{html.escape(attempt_title(attempt))}"
                     f" <span class='pal-status'>{html.escape(attempt_status(attempt))}</span></summary>")
        parts.append(_explanation_html(attempt))
        if attempt.code:
            parts.append(f"<div class='pal-code'>{highlight(attempt.code)}</div>")
        if attempt.execution is not None:
            text = attempt.execution.stdout + attempt.execution.stderr
            if text.strip():
                parts.append(f"<pre class='pal-stream'>{html.escape(text)}</pre>")
            for bundle in attempt.execution.outputs:
                parts.append(_bundle_html(bundle))
        parts.append(_error_html(attempt))
        parts.append("</details>")
    return "\n".join(parts)


def _status_html(session: Session | None, status: str, finished: bool = True) -> str:
    if session is not None and session.succeeded and session.answer is not None:
        return f"<div class='pal-answer'>Answer: {html.escape(session.answer)}</div><div class='pal-status'>{html.escape(status)}</div>"
    # Failure styling only once the question is over: a repair in progress is not a failure.
    css = "pal-failed" if finished and session is not None and session.attempts and not session.succeeded else "pal-status"
    return f"<div class='{css}'>{html.escape(status)}</div>"


def _explanation_html(attempt: Attempt) -> str:
    if not attempt.explanation:
        return ""
    return f"<div class='pal-explanation'><b>What went wrong:</b> {html.escape(attempt.explanation)}</div>"


def _error_html(attempt: Attempt) -> str:
    if attempt.code is None:
        return f"<pre class='pal-error'>{html.escape(attempt.no_code_reason or 'No code in the reply.')}</pre>"
    error = attempt.execution.error if attempt.execution else None
    if error is not None:
        return f"<pre class='pal-error'>{html.escape(error.traceback or error.ename + ': ' + error.evalue)}</pre>"
    if attempt.correct is False:
        return "<pre class='pal-error'>The program ran, but its answer is not correct.</pre>"
    return ""


def _bundle_html(bundle: dict[str, Any]) -> str:
    data = bundle.get("data", {})
    if "image/png" in data:
        return f"<img src='data:image/png;base64,{data['image/png']}' style='max-width: 100%'/>"
    if "text/html" in data:
        return str(data["text/html"])
    if "text/plain" in data:
        return f"<pre class='pal-stream'>{html.escape(str(data['text/plain']))}</pre>"
    return ""


class _LiveDisplay:
    """One display (widget view + text/HTML fallbacks) that is updated in place.

    Subclasses provide ``mimebundle()``; frontends without widgets keep the latest fallback.
    """

    _display: Any = None

    def mimebundle(self) -> dict[str, Any]:
        raise NotImplementedError

    def show(self) -> None:
        from IPython.display import display

        self._display = display(self.mimebundle(), raw=True, display_id=True)

    def _refresh_fallback(self) -> None:
        if self._display is not None:
            self._display.update(self.mimebundle(), raw=True)


class _AttemptPage:
    """The widgets of one attempt's page."""

    def __init__(self, attempt: Attempt, on_insert: Callable[[int], None] | None):
        import ipywidgets as w

        self.status = w.HTML(f"<span class='pal-status'>{html.escape('the model is writing ...')}</span>")
        self.explanation = w.HTML()
        self.stream = w.HTML()
        self.code = w.HTML()
        self.output = w.Output()
        self.error = w.HTML()
        # The default button width (148 px) cuts the label to "Insert this atte..."
        self.insert = w.Button(description="Insert this attempt", icon="plus",
                               layout=w.Layout(display="none", width="max-content"))
        if on_insert is not None:
            self.insert.on_click(lambda _button, index=attempt.index: on_insert(index))
        self.box = w.VBox([self.status, self.explanation, self.stream, self.code, self.output, self.error, self.insert])
        self.tokens: list[str] = []
        self.last_refresh = 0.0

    def add_token(self, text: str) -> None:
        self.tokens.append(text)
        now = time.monotonic()
        if now - self.last_refresh >= _TOKEN_REFRESH_S:
            self.refresh_stream()
            self.last_refresh = now

    def refresh_stream(self) -> None:
        self.stream.value = f"<pre class='pal-stream'>{html.escape(''.join(self.tokens))}</pre>"


class PalWidget(_LiveDisplay, SolveObserver):
    """Live view of one ``%%pal`` question, updated by the repair loop as it works."""

    def __init__(self, question: str, *, model: str = "", on_insert: Callable[[int], None] | None = None):
        import ipywidgets as w

        self.question = question
        self.model = model
        self.on_insert = on_insert
        self.session: Session | None = None
        self.finished = False
        self.started = time.monotonic()
        self.header = w.HTML()
        self.status = "starting ..."
        self.accordion = w.Accordion(children=[])
        self.pages: list[_AttemptPage] = []
        self.box = w.VBox([w.HTML(STYLE), self.header, self.accordion])
        self.box.add_class("pal-widget")
        self._render_header()

    # ------------------------------------------------------------------ display

    def mimebundle(self) -> dict[str, Any]:
        """Widget view for live frontends, plus text and HTML fallbacks for everything else."""
        bundle = dict(self.box._repr_mimebundle_() or {})
        bundle["text/plain"] = summary_text(self.session, self.question, self.status)
        bundle["text/html"] = summary_html(self.session, self.question, self.status, self.finished)
        return bundle

    def freeze(self) -> None:
        """Replace the live widget by its static HTML and text (what exports can show)."""
        if self._display is not None:
            bundle = {k: v for k, v in self.mimebundle().items() if k in ("text/plain", "text/html")}
            self._display.update(bundle, raw=True)
            self._display = None

    def set_status(self, status: str) -> None:
        self.status = status
        self._render_header()

    def _render_header(self) -> None:
        model = f" <span class='pal-status'>· {html.escape(self.model)}</span>" if self.model else ""
        self.header.value = (
            f"<div class='pal-header'><b>%%pal</b> {html.escape(self.question)}{model}</div>"
            + _status_html(self.session, self.status, self.finished)
        )

    # ------------------------------------------------------------------ observer

    def session_started(self, session: Session) -> None:
        self.session = session
        self.model = session.model
        self.set_status("the model is writing a program ...")

    def attempt_started(self, attempt: Attempt) -> None:
        page = _AttemptPage(attempt, self.on_insert)
        self.pages.append(page)
        self.accordion.children = [*self.accordion.children, page.box]
        self.accordion.set_title(len(self.pages) - 1, attempt_title(attempt))
        self.accordion.selected_index = len(self.pages) - 1
        if attempt.index > 1:
            self.set_status(f"attempt {attempt.index}: the model is explaining the error and repairing ...")

    def token(self, attempt: Attempt, text: str) -> None:
        self.pages[-1].add_token(text)

    def code_ready(self, attempt: Attempt) -> None:
        page = self.pages[-1]
        page.refresh_stream()
        page.stream.layout.display = "none"  # the highlighted program replaces the raw stream
        if attempt.explanation:
            page.explanation.value = _explanation_html(attempt)
        page.code.value = f"<div class='pal-code'>{highlight(attempt.code or '')}</div>"
        page.status.value = "<span class='pal-status'>running in a fresh child kernel ...</span>"
        self.set_status(f"attempt {attempt.index}: running the program ...")

    def output(self, attempt: Attempt, output: dict[str, Any]) -> None:
        # Appending output dicts (not `with out:`) works from any thread and keeps MIME types.
        if output.get("output_type") == "error":
            return  # shown below, cleaned, in the error box
        self.pages[-1].output.outputs += (output,)

    def attempt_finished(self, attempt: Attempt) -> None:
        page = self.pages[-1]
        if attempt.code is None:
            page.refresh_stream()
        page.status.value = f"<span class='pal-status'>{html.escape(attempt_status(attempt))}</span>"
        page.error.value = _error_html(attempt)
        self.accordion.set_title(len(self.pages) - 1, attempt_title(attempt))
        self._refresh_fallback()

    def session_finished(self, session: Session) -> None:
        self.finished = True
        elapsed = time.monotonic() - self.started
        n = len(session.attempts)
        if session.succeeded:
            self.set_status(f"worked at attempt {n} of {n} · {elapsed:.1f} s")
        else:
            self.set_status(f"no working program after {n} attempt(s) · {elapsed:.1f} s; the last attempt is shown")
        self._refresh_fallback()

    def fail(self, message: str) -> None:
        """Show an error that ended the question early (model failed to load, interrupted ...)."""
        self.finished = True
        self.set_status(message)
        self.header.value += f"<pre class='pal-error'>{html.escape(message)}</pre>"
        self._refresh_fallback()

    def enable_insert_buttons(self, enabled: bool) -> None:
        for page in self.pages:
            page.insert.layout.display = "" if enabled and self.on_insert else "none"


# ---------------------------------------------------------------------- tutor mode


def hint_html(hint: Any) -> str:
    body = (f"<div class='pal-code'>{highlight(hint.text)}</div>" if hint.is_code
            else f"<div class='pal-explanation'>{html.escape(hint.text).replace(chr(10), '<br>')}</div>")
    return f"<div class='pal-hint' data-level='{hint.level}'><b>Hint {hint.level}: {html.escape(hint.title)}</b>{body}</div>"


def hint_text(hint: Any) -> str:
    return f"Hint {hint.level}: {hint.title}\n{hint.text}"


class TutorWidget(_LiveDisplay):
    """Hints revealed one level at a time, with a "Next hint" button."""

    def __init__(self, question: str, on_next: Callable[[], None]):
        import ipywidgets as w

        self.question = question
        self.status = "checking that I can solve it myself ..."
        self.header = w.HTML()
        self.hints = w.VBox([])
        self.revealed: list[Any] = []
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
        bundle["text/plain"] = "\n".join(lines)
        bundle["text/html"] = STYLE + self._header_html() + "".join(hint_html(h) for h in self.revealed)
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

    def set_next(self, remaining: int, note: str = "") -> None:
        self.next_button.disabled = remaining <= 0
        self.note.value = f"<span class='pal-status'>{html.escape(note)}</span>"
