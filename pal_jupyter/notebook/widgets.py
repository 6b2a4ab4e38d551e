"""The live attempt widget: a question's programs shown as the model writes and runs them.

:class:`PalWidget` is a :class:`~pal_jupyter.engine.loop.SolveObserver`: the repair loop drives it.
It shows a header (question, status, answer, how many programs agree and, when they do not,
the competing answers) and one Accordion page per attempt. An attempt that drew several
programs has the vote's tally and a tab per program; each program shows the tokens as the model
writes them, then the highlighted program, the child kernel's output (text, DataFrame HTML,
plots), the error, and the model's plain-language explanation.

Where no widget frontend is present (nbclient, nbconvert, a terminal), the same display carries
a text/plain and a text/html summary (:mod:`.session_html`), updated when the question is done, so
a saved notebook shows the final state rather than "starting".
"""

from __future__ import annotations

import html
import time
from collections.abc import Callable
from typing import Any

from ..engine.loop import SolveObserver
from ..engine.records import DataLook, Program, Session, Vote
from ..engine.vote import more_programs_reason, reasoning_reason, second_opinion_note
from .session_html import (STYLE, attempt_title, candidate_title, context_html, data_look_html, error_html,
                           explanation_html, highlight, program_status, reasoning_html, round_title, status_html,
                           summary_html, summary_text, tally_html)

_TOKEN_REFRESH_S = 0.1  # stream tokens to the browser at most ten times a second


class LiveDisplay:
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


class _ProgramPage:
    """The widgets of one program: status, explanation, streamed tokens, code, output, error."""

    def __init__(self, program: Program, on_insert: Callable[[Program], None] | None):
        import ipywidgets as w

        self.program = program
        self.status = w.HTML(f"<span class='pal-status'>{html.escape('the model is writing ...')}</span>")
        self.explanation = w.HTML()
        self.stream = w.HTML()
        self.code = w.HTML()
        self.output = w.Output()
        self.error = w.HTML()
        # The default button width (148 px) cuts the label to "Insert this atte..."
        label = "Insert this program" if program.samples > 1 else "Insert this attempt"
        self.insert = w.Button(description=label, icon="plus", layout=w.Layout(display="none", width="max-content"))
        if on_insert is not None:
            self.insert.on_click(lambda _button: on_insert(self.program))
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

    def __init__(self, first: Program):
        import ipywidgets as w

        self.index = first.index
        self.pages: dict[int, _ProgramPage] = {}
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

    def add(self, page: _ProgramPage) -> None:
        self.pages[page.program.sample] = page
        if self.tabs is None:
            self.box.children = [page.box]
            return
        self.tabs.children = [*self.tabs.children, page.box]
        self.tabs.set_title(len(self.tabs.children) - 1, candidate_title(page.program))

    def retitle(self, program: Program) -> None:
        if self.tabs is not None:
            self.tabs.set_title(program.sample - 1, candidate_title(program))


class PalWidget(LiveDisplay, SolveObserver):
    """Live view of one ``%%pal`` question, updated by the repair loop as it works.

    Each view holds its own session: its "Insert this program" buttons insert programs of the
    question it shows, however many questions were asked since.
    """

    def __init__(self, question: str, *, model: str = "", on_insert: Callable[[Session, Program], None] | None = None):
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
    def pages(self) -> list[_ProgramPage]:
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
            + context + status_html(self.session, self.status, self.finished) + tally
        )

    def _page(self, program: Program) -> _ProgramPage:
        return self.rounds[program.index - 1].pages[program.sample]

    # ------------------------------------------------------------------ observer

    def session_started(self, session: Session) -> None:
        self.session = session
        self.model = f"{session.model} on {session.runtime}" if session.runtime else session.model
        what = "a program" if session.samples == 1 else f"{session.samples} programs at once"
        if session.method == "careful":
            what = ("a program, then a second one another way to check it" if session.variables
                    else "a program, then will work the question out in words to check it")
        self.set_status(f"the model is writing {what} ...")

    def program_started(self, program: Program) -> None:
        if program.sample == 1:
            round_ = _RoundPage(program)
            self.rounds.append(round_)
            self.accordion.children = [*self.accordion.children, round_.box]
            self.accordion.set_title(len(self.rounds) - 1, round_title([program], None))
            self.accordion.selected_index = len(self.rounds) - 1
            if program.index > 1:
                what = "" if program.samples == 1 else f" ({program.samples} programs)"
                self.set_status(f"attempt {program.index}: the model is explaining the error and repairing{what} ...")
        on_insert = (lambda chosen, session=self.session: self.on_insert(session, chosen)) if self.on_insert else None
        self.rounds[-1].add(_ProgramPage(program, on_insert))

    def token(self, program: Program, text: str) -> None:
        self._page(program).add_token(text)

    def code_ready(self, program: Program) -> None:
        page = self._page(program)
        page.refresh_stream()
        page.stream.layout.display = "none"  # the highlighted program replaces the raw stream
        if program.explanation:
            page.explanation.value = explanation_html(program)
        page.code.value = f"<div class='pal-code'>{highlight(program.code or '')}</div>"
        page.status.value = "<span class='pal-status'>running in a fresh child kernel ...</span>"
        what = "the program" if program.samples == 1 else f"{program.samples} programs, each in its own kernel"
        self.set_status(f"attempt {program.index}: running {what} ...")

    def output(self, program: Program, output: dict[str, Any]) -> None:
        # Appending output dicts (not `with out:`) works from any thread and keeps MIME types.
        kind = output.get("output_type")
        if kind == "error":
            return  # shown below, cleaned, in the error box
        if kind == "clear_output":  # the program's clear_output, or a redraw of an updated display
            self._page(program).output.outputs = tuple(output.get("shown", ()))
            return
        self._page(program).output.outputs += (output,)

    def program_finished(self, program: Program) -> None:
        page = self._page(program)
        if program.code is None or program.refusal is not None:
            page.refresh_stream()
            if program.code is not None:
                page.stream.layout.display = "none"
                page.code.value = f"<div class='pal-code'>{highlight(program.code)}</div>"
        page.status.value = f"<span class='pal-status'>{html.escape(program_status(program))}</span>"
        page.error.value = error_html(program)
        self.rounds[program.index - 1].retitle(program)
        if program.samples == 1:
            self.accordion.set_title(program.index - 1, attempt_title(program))
        self._refresh_fallback()

    def vote_taken(self, session: Session, vote: Vote) -> None:
        round_ = self.rounds[vote.round - 1]
        if session.second_opinion is not None and session.second_opinion.round == vote.round:
            round_.add_reasoning("", final=True)
            if second_opinion_note(vote):
                round_.note(second_opinion_note(vote))
        programs = session.round(vote.round)
        if programs[0].samples > 1:  # the tally itself is shown once, in the header
            self.accordion.set_title(vote.round - 1, round_title(programs, vote))
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
            which = "" if session.samples == 1 else f" (program {session.final.sample} chosen)"  # type: ignore[union-attr]
            self.set_status(f"worked at attempt {n} of {n}{which} · {elapsed:.1f} s")
        else:
            self.set_status(f"no working program after {n} attempt(s) · {elapsed:.1f} s; the last attempt is shown")
        self._refresh_fallback()

    def inserted(self) -> None:
        """The chosen program was put into a new cell below (said only once it was: never under
        --no-insert, nor where no frontend inserts cells)."""
        self.set_status(f"{self.status} · inserted below")
        self._refresh_fallback()

    def fail(self, message: str) -> None:
        """Show an error that ended the question early (model failed to load, interrupted ...)."""
        self.finished = True
        self.set_status(message)
        self.header.value += f"<pre class='pal-error'>{html.escape(message)}</pre>"
        self._refresh_fallback()

    def enable_insert_buttons(self, enabled: bool) -> None:
        for page in self.pages:
            page.insert.layout.display = "" if enabled and self.on_insert and page.program.code else "none"
