"""The live attempt widget, and the static summary shown where no widget can render.

:class:`PalWidget` is a :class:`~pal_jupyter.engine.loop.SolveObserver`: the repair loop drives it.
It shows a header (question, status, answer, how many programs agree and, when they do not,
the competing answers) and one Accordion page per attempt. An attempt that drew several
programs has the vote's tally and a tab per program; each program shows the tokens as the model
writes them, then the highlighted program, the child kernel's output (text, DataFrame HTML,
plots), the error, and the model's plain-language explanation.

Where no widget frontend is present (nbclient, nbconvert, a terminal), the same display carries
a text/plain and a text/html summary, updated when the question is done, so a saved notebook
shows the final state rather than "starting".
"""

from __future__ import annotations

import html
import time
from collections.abc import Callable
from typing import Any

from ..engine.loop import SolveObserver
from ..engine.prompts import context_block
from ..engine.records import Attempt, DataLook, PromptContext, Session, Vote
from ..engine.vote import doubt_message, effort_note, more_programs_reason, reasoning_reason, second_opinion_note

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
.pal-doubt {padding: 0.3em 0.6em; border-radius: 4px; margin: 0.2em 0;}
.pal-sure {background: #eaf7ee; color: #1a5c2e;}
.pal-check {background: #fff8e1; color: #6b4e00;}
.pal-unsure {background: #fff1e6; color: #8a3b00; font-weight: 600;}
.pal-unsure-answer {color: #8a3b00;}
.pal-tally {border-collapse: collapse; margin: 0.3em 0; font-size: 0.9em;}
.pal-tally td, .pal-tally th {padding: 0.1em 0.8em 0.1em 0; text-align: left;}
.pal-tally .pal-winner {font-weight: 600;}
.pal-tally .pal-silent {color: #777;}
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
    if attempt.refusal is not None:
        return "not run: it replaced your data"
    if attempt.execution is None:
        return "running ..."
    verdict = ("worked" if attempt.answer is None else f"answer {attempt.answer}") if attempt.good \
        else (attempt.error_type or "failed")
    return f"{verdict} (model {attempt.generate_s:.1f} s, run {attempt.execute_s:.2f} s)"


def _finished(attempt: Attempt) -> bool:
    return attempt.execution is not None or attempt.no_code_reason is not None or attempt.refusal is not None


def attempt_title(attempt: Attempt) -> str:
    """The accordion title of a round: 'Attempt 1: program' / 'Attempt 2: repair · 5 programs'."""
    kind = "program" if attempt.kind == "initial" else "repair"
    if attempt.samples > 1:
        kind += f" · {attempt.samples} programs"
    mark = ("✓ " if attempt.good else "✗ ") if _finished(attempt) else ""  # no verdict while written or run
    return f"{mark}Attempt {attempt.index}: {kind}"


def round_title(attempts: list[Attempt], vote: Vote | None) -> str:
    first = attempts[0]
    if first.samples == 1:
        return attempt_title(first)
    kind = "programs" if first.kind == "initial" else "repairs"
    if vote is None:
        return f"Attempt {first.index}: {first.samples} {kind}"
    mark = "✓ " if vote.winner is not None else "✗ "
    return f"{mark}Attempt {first.index}: {first.samples} {kind} · {vote.tally}"


def candidate_title(attempt: Attempt) -> str:
    """A candidate's tab: '3 ✓ 150' / '2 ✗ NameError' / '4 …' while it is written."""
    if not _finished(attempt):
        return f"{attempt.sample} …"
    if attempt.good:
        return f"{attempt.sample} ✓ {_short(attempt.answer or 'ran')}"
    return f"{attempt.sample} ✗ {attempt.error_type or 'failed'}"


def _short(text: str, limit: int = 14) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


def tally_html(session: Session) -> str:
    """The vote in a small table: each answer, how many programs gave it, which ones."""
    vote = session.vote
    if vote is None or vote.candidates <= 1:
        return ""
    rows = "".join(
        f"<tr class='{'pal-winner' if group is vote.winner else ''}'><td>{html.escape(group.answer.text)}</td>"
        f"<td>{group.votes} of {vote.candidates}</td><td>programs {', '.join(map(str, group.samples))}</td></tr>"
        for group in vote.groups
    )
    silent = vote.candidates - sum(g.votes for g in vote.groups)
    if silent:
        rows += f"<tr class='pal-silent'><td>(no answer)</td><td>{silent} of {vote.candidates}</td><td>failed or printed nothing</td></tr>"
    return f"<table class='pal-tally'><tr><th>answer</th><th>programs</th><th></th></tr>{rows}</table>"


def doubt_html(session: Session) -> str:
    message = doubt_message(session)
    if not message:
        return ""
    css = {"high": "pal-sure", "medium": "pal-check", "low": "pal-unsure"}[session.confidence]
    return f"<div class='pal-doubt {css}' data-confidence='{session.confidence}'>{html.escape(message)}</div>"


def context_html(context: PromptContext | None) -> str:
    """The line saying what the notebook sent with the question (notebook.context), and, folded under
    it, exactly the text the model was shown before the question."""
    if context is None:
        return ""
    if not context.text.strip():
        return f"<div class='pal-status pal-context'>{html.escape(context.note)}</div>"
    return (f"<details class='pal-context'><summary class='pal-status'>{html.escape(context.note)}</summary>"
            f"<pre class='pal-stream'>{html.escape(context_block(context.text))}</pre></details>")


def summary_text(session: Session | None, question: str, status: str) -> str:
    lines = [f"%%pal: {question}"]
    if session is not None and session.context is not None:
        lines.append(session.context.note)
    if session is not None and session.succeeded and session.answer is not None:
        lines.append(f"Answer: {session.answer}")
    if session is not None and doubt_message(session):
        lines.append(doubt_message(session))
    if session is not None:
        lines += [effort_note(weak) for weak in session.weak_votes]
        if session.vote is not None and second_opinion_note(session.vote):
            lines.append(second_opinion_note(session.vote))
    lines.append(status)
    if session is not None:
        for attempt in session.attempts:
            lines.append(f"  {attempt.label}: {attempt_status(attempt)}")
            if attempt.explanation and attempt.sample == 1:
                lines.append(f"    explanation: {attempt.explanation}")
        final = session.final
        if final is not None and final.code:
            lines += ["", final.code]
    return "\n".join(lines)


def summary_html(session: Session | None, question: str, status: str, finished: bool = True) -> str:
    """A static rendering of the whole session (for saved notebooks and HTML exports)."""
    parts = [STYLE, f"<div class='pal-header'><b>%%pal</b> {html.escape(question)}</div>",
             context_html(session.context if session is not None else None), _status_html(session, status, finished)]
    if session is not None:
        parts.append(tally_html(session))
    for index in range(1, (session.rounds if session else 0) + 1):
        attempts = session.round(index)  # type: ignore[union-attr]
        vote = session.vote if session.vote is not None and session.vote.round == index else None  # type: ignore[union-attr]
        is_last = index == session.rounds  # type: ignore[union-attr]
        parts.append(f"<details {'open' if is_last else ''}><summary>{html.escape(round_title(attempts, vote))}</summary>")
        parts += [f"<div class='pal-status'>{html.escape(effort_note(weak))}</div>"
                  for weak in session.weak_votes if weak.round == index]  # type: ignore[union-attr]
        look = session.data_look  # type: ignore[union-attr]
        if look is not None and look.round == index:
            parts.append(data_look_html(look))
        opinion = session.second_opinion  # type: ignore[union-attr]
        if opinion is not None and opinion.round == index:
            if vote is not None and second_opinion_note(vote):
                parts.append(f"<div class='pal-status'>{html.escape(second_opinion_note(vote))}</div>")
            parts.append(reasoning_html(opinion.text))
        for attempt in attempts:
            if attempt.samples > 1:
                opened = "open" if attempt is session.final else ""  # type: ignore[union-attr]
                parts.append(f"<details {opened} class='pal-candidate'><summary>Program {attempt.sample}: "
                             f"<span class='pal-status'>{html.escape(attempt_status(attempt))}</span></summary>")
            else:
                parts.append(f"<div class='pal-status'>{html.escape(attempt_status(attempt))}</div>")
            parts.append(_attempt_body_html(attempt))
            if attempt.samples > 1:
                parts.append("</details>")
        parts.append("</details>")
    return "\n".join(parts)


def notice_bundle(text: str) -> dict[str, str]:
    """A one-line notice of its own above a cell's output (no sandbox ...), readable in every frontend
    and in saved notebooks."""
    return {"text/plain": text,
            "text/html": f"{STYLE}<div class='pal-doubt pal-check pal-notice'>{html.escape(text)}</div>"}


def reasoning_html(text: str) -> str:
    """The answer worked out in words, folded: it explains the program that follows it."""
    if not text.strip():
        return ""
    return (f"<details class='pal-reasoning' open><summary>Worked out in words first</summary>"
            f"<pre class='pal-stream'>{html.escape(text.strip())}</pre></details>")


def data_look_html(look: DataLook) -> str:
    """The look at the data (engine.data_look), folded: the program and what it printed, which the
    programs after it were given."""
    return (f"<details class='pal-reasoning'><summary>Looked at the data first ({look.seconds:.1f} s)</summary>"
            f"<div class='pal-code'>{highlight(look.code)}</div>"
            f"<pre class='pal-stream'>{html.escape(look.output.strip())}</pre></details>")


def _attempt_body_html(attempt: Attempt) -> str:
    parts = [_explanation_html(attempt)]
    if attempt.code:
        parts.append(f"<div class='pal-code'>{highlight(attempt.code)}</div>")
    if attempt.execution is not None:
        text = attempt.execution.stdout + attempt.execution.stderr
        if text.strip():
            parts.append(f"<pre class='pal-stream'>{html.escape(text)}</pre>")
        for bundle in attempt.execution.outputs:
            parts.append(_bundle_html(bundle))
    parts.append(_error_html(attempt))
    return "\n".join(parts)


def _status_html(session: Session | None, status: str, finished: bool = True) -> str:
    if session is not None and session.succeeded and session.answer is not None:
        css = "pal-answer pal-unsure-answer" if session.confidence == "low" else "pal-answer"
        return (f"<div class='{css}'>Answer: {html.escape(session.answer)}</div>{doubt_html(session)}"
                f"<div class='pal-status'>{html.escape(status)}</div>")
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
    if attempt.refusal is not None:
        return f"<pre class='pal-error'>{html.escape(attempt.refusal)}</pre>"
    error = attempt.execution.error if attempt.execution else None
    if error is not None:
        return f"<pre class='pal-error'>{html.escape(error.traceback or error.ename + ': ' + error.evalue)}</pre>"
    if attempt.off_target is not None:
        return f"<pre class='pal-error'>The program {html.escape(attempt.off_target)}.</pre>"
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
    """The widgets of one program: status, explanation, streamed tokens, code, output, error."""

    def __init__(self, attempt: Attempt, on_insert: Callable[[Attempt], None] | None):
        import ipywidgets as w

        self.attempt = attempt
        self.status = w.HTML(f"<span class='pal-status'>{html.escape('the model is writing ...')}</span>")
        self.explanation = w.HTML()
        self.stream = w.HTML()
        self.code = w.HTML()
        self.output = w.Output()
        self.error = w.HTML()
        # The default button width (148 px) cuts the label to "Insert this atte..."
        label = "Insert this program" if attempt.samples > 1 else "Insert this attempt"
        self.insert = w.Button(description=label, icon="plus", layout=w.Layout(display="none", width="max-content"))
        if on_insert is not None:
            self.insert.on_click(lambda _button: on_insert(self.attempt))
        self.box = w.VBox([self.status, self.explanation, self.stream, self.code, self.output, self.error, self.insert])
        self.box.add_class("pal-program")
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


class _RoundPage:
    """One accordion page: a lone program's page, or a tab per candidate under the round's tally."""

    def __init__(self, first: Attempt):
        import ipywidgets as w

        self.index = first.index
        self.pages: dict[int, _AttemptPage] = {}
        self.tabs = w.Tab(children=[]) if first.samples > 1 else None
        self.notes = w.HTML()  # why the round grew: "only 1 of 5 programs agree (on 60): writing 5 more"
        self.reasoning = w.HTML()  # the answer worked out in words, streamed (engine.reasoning)
        self.reasoning_tokens: list[str] = []
        self.last_refresh = 0.0
        self.box = w.VBox([self.notes, self.reasoning, self.tabs] if self.tabs is not None else [])

    def add_reasoning(self, text: str, final: bool = False) -> None:
        self.reasoning_tokens.append(text)
        now = time.monotonic()
        if final or now - self.last_refresh >= _TOKEN_REFRESH_S:
            self.reasoning.value = reasoning_html("".join(self.reasoning_tokens))
            self.last_refresh = now

    def note(self, text: str) -> None:
        self.notes.value += f"<div class='pal-status'>{html.escape(text)}</div>"

    def add(self, page: _AttemptPage) -> None:
        self.pages[page.attempt.sample] = page
        if self.tabs is None:
            self.box.children = [page.box]
            return
        self.tabs.children = [*self.tabs.children, page.box]
        self.tabs.set_title(len(self.tabs.children) - 1, candidate_title(page.attempt))

    def retitle(self, attempt: Attempt) -> None:
        if self.tabs is not None:
            self.tabs.set_title(attempt.sample - 1, candidate_title(attempt))


class PalWidget(_LiveDisplay, SolveObserver):
    """Live view of one ``%%pal`` question, updated by the repair loop as it works.

    Each view holds its own session: its "Insert this program" buttons insert programs of the
    question it shows, however many questions were asked since.
    """

    def __init__(self, question: str, *, model: str = "", on_insert: Callable[[Session, Attempt], None] | None = None):
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
        self.rounds: list[_RoundPage] = []
        self.box = w.VBox([w.HTML(STYLE), self.header, self.accordion])
        self.box.add_class("pal-widget")
        self._render_header()

    @property
    def pages(self) -> list[_AttemptPage]:
        """Every program's page, in order."""
        return [page for round_ in self.rounds for page in round_.pages.values()]

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
        tally = tally_html(self.session) if self.session is not None and self.finished else ""
        context = context_html(self.session.context) if self.session is not None else ""
        self.header.value = (
            f"<div class='pal-header'><b>%%pal</b> {html.escape(self.question)}{model}</div>"
            + context + _status_html(self.session, self.status, self.finished) + tally
        )

    def _page(self, attempt: Attempt) -> _AttemptPage:
        return self.rounds[attempt.index - 1].pages[attempt.sample]

    # ------------------------------------------------------------------ observer

    def session_started(self, session: Session) -> None:
        self.session = session
        self.model = f"{session.model} on {session.runtime}" if session.runtime else session.model
        what = "a program" if session.samples == 1 else f"{session.samples} programs at once"
        if session.method == "careful":
            what = "a program, then a second one another way to check it"
        self.set_status(f"the model is writing {what} ...")

    def attempt_started(self, attempt: Attempt) -> None:
        if attempt.sample == 1:
            round_ = _RoundPage(attempt)
            self.rounds.append(round_)
            self.accordion.children = [*self.accordion.children, round_.box]
            self.accordion.set_title(len(self.rounds) - 1, round_title([attempt], None))
            self.accordion.selected_index = len(self.rounds) - 1
            if attempt.index > 1:
                what = "" if attempt.samples == 1 else f" ({attempt.samples} programs)"
                self.set_status(f"attempt {attempt.index}: the model is explaining the error and repairing{what} ...")
        on_insert = (lambda chosen, session=self.session: self.on_insert(session, chosen)) if self.on_insert else None
        self.rounds[-1].add(_AttemptPage(attempt, on_insert))

    def token(self, attempt: Attempt, text: str) -> None:
        self._page(attempt).add_token(text)

    def code_ready(self, attempt: Attempt) -> None:
        page = self._page(attempt)
        page.refresh_stream()
        page.stream.layout.display = "none"  # the highlighted program replaces the raw stream
        if attempt.explanation:
            page.explanation.value = _explanation_html(attempt)
        page.code.value = f"<div class='pal-code'>{highlight(attempt.code or '')}</div>"
        page.status.value = "<span class='pal-status'>running in a fresh child kernel ...</span>"
        what = "the program" if attempt.samples == 1 else f"{attempt.samples} programs, each in its own kernel"
        self.set_status(f"attempt {attempt.index}: running {what} ...")

    def output(self, attempt: Attempt, output: dict[str, Any]) -> None:
        # Appending output dicts (not `with out:`) works from any thread and keeps MIME types.
        kind = output.get("output_type")
        if kind == "error":
            return  # shown below, cleaned, in the error box
        if kind == "clear_output":  # the program's clear_output, or a redraw of an updated display
            self._page(attempt).output.outputs = tuple(output.get("shown", ()))
            return
        self._page(attempt).output.outputs += (output,)

    def attempt_finished(self, attempt: Attempt) -> None:
        page = self._page(attempt)
        if attempt.code is None or attempt.refusal is not None:
            page.refresh_stream()
            if attempt.code is not None:
                page.stream.layout.display = "none"
                page.code.value = f"<div class='pal-code'>{highlight(attempt.code)}</div>"
        page.status.value = f"<span class='pal-status'>{html.escape(attempt_status(attempt))}</span>"
        page.error.value = _error_html(attempt)
        self.rounds[attempt.index - 1].retitle(attempt)
        if attempt.samples == 1:
            self.accordion.set_title(attempt.index - 1, attempt_title(attempt))
        self._refresh_fallback()

    def vote_taken(self, session: Session, vote: Vote) -> None:
        round_ = self.rounds[vote.round - 1]
        if session.second_opinion is not None and session.second_opinion.round == vote.round:
            round_.add_reasoning("", final=True)
            if second_opinion_note(vote):
                round_.note(second_opinion_note(vote))
        attempts = session.round(vote.round)
        if attempts[0].samples > 1:  # the tally itself is shown once, in the header
            self.accordion.set_title(vote.round - 1, round_title(attempts, vote))
            if vote.winner is not None and round_.tabs is not None and session.final is not None:
                round_.tabs.selected_index = session.final.sample - 1  # show the program that is inserted

    def reasoning_started(self, session: Session, vote: Vote) -> None:
        reason = reasoning_reason(vote)
        self.rounds[vote.round - 1].note(reason[0].upper() + reason[1:])
        self.set_status(f"attempt {vote.round}: {reason} ...")

    def reasoning_token(self, session: Session, text: str) -> None:
        self.rounds[-1].add_reasoning(text)

    def more_programs(self, session: Session, vote: Vote, count: int) -> None:
        reason = more_programs_reason(vote, count)
        self.rounds[vote.round - 1].note(reason[0].upper() + reason[1:])
        self.set_status(f"attempt {vote.round}: {reason} ...")

    def looked_at_data(self, session: Session, look: DataLook) -> None:
        self.rounds[look.round - 1].notes.value += data_look_html(look)
        self.set_status(f"attempt {look.round}: the programs disagree: looked at the data first ...")

    def session_finished(self, session: Session) -> None:
        self.finished = True
        elapsed = time.monotonic() - self.started
        n = session.rounds
        if session.succeeded:
            which = "" if session.samples == 1 else f" (program {session.final.sample} inserted)"  # type: ignore[union-attr]
            self.set_status(f"worked at attempt {n} of {n}{which} · {elapsed:.1f} s")
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
            page.insert.layout.display = "" if enabled and self.on_insert and page.attempt.code else "none"


# ---------------------------------------------------------------------- tutor mode


def hint_html(hint: Any) -> str:
    body = (f"<div class='pal-code'>{highlight(hint.text)}</div>" if hint.is_code
            else f"<div class='pal-explanation'>{html.escape(hint.text).replace(chr(10), '<br>')}</div>")
    return f"<div class='pal-hint' data-level='{hint.level}'><b>Hint {hint.level}: {html.escape(hint.title)}</b>{body}</div>"


def approach_html(approach: Any) -> str:
    body = f"<div class='pal-code'>{highlight(approach.skeleton)}</div>" if approach.skeleton else ""
    return f"<div class='pal-approach'><b>{html.escape(approach.label)}</b>{body}</div>"


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
