"""A session as static HTML and text: what a saved notebook, nbconvert and a terminal show, and
what the live widgets (:mod:`.widgets`, :mod:`.tutor_widget`) build their views from.

Everything here is a pure function of the records (:mod:`pal_jupyter.engine.records`): the header
(question, status, answer, how many programs agree and, when they do not, the competing answers),
each attempt's code, output, error and explanation, and the summary shown once a question is done.
"""

from __future__ import annotations

import html
from typing import Any

from ..engine.records import DataLook, Program, PromptContext, Session, Vote
from ..engine.vote import doubt_message, effort_note, more_programs_reason, reasoning_reason, second_opinion_note
from ..prompts import missing_module, notebook_block

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
.pal-error-reason {color: #8c1d18; font-weight: 600; margin: 2px 0;}
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


def program_status(program: Program) -> str:
    if program.code is None:
        return "no code in the reply"
    if program.refusal is not None:
        return "not run: it replaced your data"
    if program.execution is None:
        return "running ..."
    verdict = ("worked" if program.answer is None else f"answer {program.answer}") if program.good \
        else (program.error_type or "failed")
    return f"{verdict} (model {program.generate_s:.1f} s, run {program.execute_s:.2f} s)"


def _finished(program: Program) -> bool:
    return program.execution is not None or program.no_code_reason is not None or program.refusal is not None


def attempt_title(program: Program) -> str:
    """The accordion title of a round: 'Attempt 1: program' / 'Attempt 2: repair · 5 programs'."""
    kind = "program" if program.kind == "initial" else "repair"
    if program.samples > 1:
        kind += f" · {program.samples} programs"
    mark = ("✓ " if program.good else "✗ ") if _finished(program) else ""  # no verdict while written or run
    return f"{mark}Attempt {program.index}: {kind}"


def round_title(programs: list[Program], vote: Vote | None) -> str:
    first = programs[0]
    if first.samples == 1:
        return attempt_title(first)
    kind = "programs" if first.kind == "initial" else "repairs"
    if vote is None:
        return f"Attempt {first.index}: {first.samples} {kind}"
    mark = "✓ " if vote.winner is not None else "✗ "
    return f"{mark}Attempt {first.index}: {first.samples} {kind} · {vote.tally}"


def candidate_title(program: Program) -> str:
    """A candidate's tab: '3 ✓ 150' / '2 ✗ NameError' / '4 …' while it is written."""
    if not _finished(program):
        return f"{program.sample} …"
    if program.good:
        return f"{program.sample} ✓ {_short(program.answer or 'ran')}"
    return f"{program.sample} ✗ {program.error_type or 'failed'}"


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
            f"<pre class='pal-stream'>{html.escape(notebook_block(context.text))}</pre></details>")


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
        for program in session.programs:
            lines.append(f"  {program.label}: {program_status(program)}")
            if program.explanation and program.sample == 1:
                lines.append(f"    explanation: {program.explanation}")
        final = session.final
        if final is not None and final.code:
            lines += ["", final.code]
    return "\n".join(lines)


def summary_html(session: Session | None, question: str, status: str, finished: bool = True) -> str:
    """A static rendering of the whole session (for saved notebooks and HTML exports)."""
    parts = [STYLE, f"<div class='pal-header'><b>%%pal</b> {html.escape(question)}</div>",
             context_html(session.context if session is not None else None), status_html(session, status, finished)]
    if session is not None:
        parts.append(tally_html(session))
    for index in range(1, (session.rounds if session else 0) + 1):
        programs = session.round(index)  # type: ignore[union-attr]
        vote = session.vote if session.vote is not None and session.vote.round == index else None  # type: ignore[union-attr]
        is_last = index == session.rounds  # type: ignore[union-attr]
        title = html.escape(round_title(programs, vote))
        parts.append(f"<details {'open' if is_last else ''}><summary>{title}</summary>")
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
        for program in programs:
            if program.samples > 1:
                opened = "open" if program is session.final else ""  # type: ignore[union-attr]
                parts.append(f"<details {opened} class='pal-candidate'><summary>Program {program.sample}: "
                             f"<span class='pal-status'>{html.escape(program_status(program))}</span></summary>")
            else:
                parts.append(f"<div class='pal-status'>{html.escape(program_status(program))}</div>")
            parts.append(_program_body_html(program))
            if program.samples > 1:
                parts.append("</details>")
        parts.append("</details>")
    return "\n".join(parts)


def notice_bundle(text: str) -> dict[str, str]:
    """A one-line notice of its own above a cell's output (no sandbox ...), readable in every frontend
    and in saved notebooks."""
    return {"text/plain": text,
            "text/html": f"{STYLE}<div class='pal-doubt pal-check pal-notice'>{html.escape(text)}</div>"}


def reasoning_html(text: str) -> str:
    """The answer worked out in words, folded (after the vote method's weak vote it explains the program
    that follows it)."""
    if not text.strip():
        return ""
    return (f"<details class='pal-reasoning' open><summary>Worked out in words</summary>"
            f"<pre class='pal-stream'>{html.escape(text.strip())}</pre></details>")


def data_look_html(look: DataLook) -> str:
    """The look at the data (engine.data_look), folded: the program and what it printed, which the
    programs after it were given."""
    return (f"<details class='pal-reasoning'><summary>Looked at the data first ({look.seconds:.1f} s)</summary>"
            f"<div class='pal-code'>{highlight(look.code)}</div>"
            f"<pre class='pal-stream'>{html.escape(look.output.strip())}</pre></details>")


def _program_body_html(program: Program) -> str:
    parts = [explanation_html(program)]
    if program.code:
        parts.append(f"<div class='pal-code'>{highlight(program.code)}</div>")
    if program.execution is not None:
        text = program.execution.stdout + program.execution.stderr
        if text.strip():
            parts.append(f"<pre class='pal-stream'>{html.escape(text)}</pre>")
        for bundle in program.execution.outputs:
            parts.append(_bundle_html(bundle))
    parts.append(error_html(program))
    return "\n".join(parts)


def status_html(session: Session | None, status: str, finished: bool = True) -> str:
    if session is not None and session.succeeded and session.answer is not None:
        css = "pal-answer pal-unsure-answer" if session.confidence == "low" else "pal-answer"
        return (f"<div class='{css}'>Answer: {html.escape(session.answer)}</div>{doubt_html(session)}"
                f"<div class='pal-status'>{html.escape(status)}</div>")
    # Failure styling only once the question is over: a repair in progress is not a failure.
    failed = finished and session is not None and bool(session.programs) and not session.succeeded
    css = "pal-failed" if failed else "pal-status"
    return f"<div class='{css}'>{html.escape(status)}</div>"


def explanation_html(program: Program) -> str:
    if not program.explanation:
        return ""
    return f"<div class='pal-explanation'><b>What went wrong:</b> {html.escape(program.explanation)}</div>"


def error_html(program: Program) -> str:
    if program.code is None:
        return f"<pre class='pal-error'>{html.escape(program.no_code_reason or 'No code in the reply.')}</pre>"
    if program.refusal is not None:
        return f"<pre class='pal-error'>{html.escape(program.refusal)}</pre>"
    error = program.execution.error if program.execution else None
    if error is not None:
        missing = missing_module(error.ename, error.evalue)  # the one line that says why, above the trace
        reason = f"<div class='pal-error-reason'>{html.escape(missing)}</div>" if missing else ""
        trace = html.escape(error.traceback or error.ename + ": " + error.evalue)
        return f"{reason}<pre class='pal-error'>{trace}</pre>"
    if program.off_target is not None:
        return f"<pre class='pal-error'>The program {html.escape(program.off_target)}.</pre>"
    if program.correct is False:
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
