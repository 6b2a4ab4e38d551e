"""The notebook side of tutor mode: ``%%pal --tutor``, ``%%pal --check``, ``%pal_hint``, ``%pal_explain``.

The teaching logic lives in :mod:`pal_jupyter.classroom.tutor`; this module connects it to the
notebook: the teacher's policy (how far hints may go), the class log (every question, hint,
attempt, check, reveal and explanation), the tutor widget, cell insertion and the teacher's tutor
pack (:mod:`pal_jupyter.classroom.pack`: prepared hints, no model run). Every function
takes the session's :class:`~pal_jupyter.notebook.runtime.NotebookRuntime`.
"""

from __future__ import annotations

import html
import inspect
import time
from typing import Any

from IPython.display import display

from ..classroom.pack import PackMatch
from ..classroom.tutor import (TutorPlan, check_code, competing_approaches, explain_error, prepare_hints,
                               scrub_answer, scrub_numbers)
from ..engine.loop import SolveObserver
from ..classroom.cell_error import CellError
from ..engine.records import Vote
from ..errors import NoCodeError, PalError
from .error_help import CellRun
from .runtime import NotebookRuntime, Request
from .session_html import STYLE, highlight, notice_bundle
from .tutor_widget import TutorWidget, hint_text

COPY = " (copy it into a new cell)"
CANNOT_SOLVE = ("I could not write a working program for this question myself, so I cannot guide you "
                "reliably. Please ask your teacher.")


class _Progress(SolveObserver):
    """Keeps the student informed while the tutor solves the question privately."""

    def __init__(self, widget: TutorWidget | None):
        self.widget = widget

    def program_started(self, program: Any) -> None:
        if self.widget is not None and program.index > 1:
            self.widget.set_status(f"checking that I can solve it myself (attempt {program.index}) ...")


def run_tutor(runtime: NotebookRuntime, request: Request) -> None:
    """Solve privately (several programs must agree), then reveal hints level by level within
    the policy's cap. When the tutor's own programs disagree it says so and, instead of hints,
    offers the competing approaches for a discussion with the teacher. A question of the teacher's
    tutor pack gets its prepared hints at once, with no model run; an unverified one is solved live
    but checked with the pack's key."""
    policy = runtime.policy
    cap = policy.effective_hint_cap()
    match = runtime.pack_match(request.question)
    if match is not None and match.question.hints:
        _from_pack(runtime, request, match, cap)
        return
    widget = _widget(runtime, request)
    log = runtime.classlog
    question_id = _new_id("q")
    log.question(question_id, request.question)
    try:
        backend = runtime.backend(request.settings)
        session = runtime.solve(request, observer=_Progress(widget), backend=backend)
        if session.context is not None:  # what the notebook sent with the question, said out loud
            display(notice_bundle(session.context.note), raw=True)
        plan = TutorPlan(request.question, session, min_agreement=policy.min_agreement,
                         key=match.question.key if match is not None else None)  # the teacher's key checks
        if plan.solvable and plan.sure:
            prepare_hints(plan, backend, cap, request.settings.generation())
    except NoCodeError:
        log.gave_up(question_id, tutor_solved=False, details={"reason": "no code"})
        _say(widget, CANNOT_SOLVE)
        return
    except PalError as exc:
        if widget is not None:
            widget.set_status(str(exc))
        raise
    for program in session.programs:
        log.attempt(question_id, error_type=program.error_type, succeeded=program.good,
                    seconds=round(program.generate_s + program.execute_s, 2), details={"by": "tutor"})
    _open(runtime, request, plan, widget, question_id)
    if not plan.solvable:
        log.gave_up(question_id, tutor_solved=False)
        _say(widget, CANNOT_SOLVE)
        return
    if not plan.sure:
        log.gave_up(question_id, tutor_solved=False, agreement=session.agreement,
                    details={"reason": "programs disagree", "votes": [g.votes for g in session.vote.groups]})
        _decline_unsure(widget, plan, cap)
        return
    log.record("question", question_id, tutor_solved=True, agreement=session.agreement,
               details={"ready": True, "hint_cap": cap})
    _say(widget, f"I have worked it out. Hints available: {cap} level(s). Try it yourself first!")
    _reveal_first(runtime, request, plan, levels=cap)


def _open(runtime: NotebookRuntime, request: Request, plan: TutorPlan, widget: TutorWidget | None,
          question_id: str) -> None:
    """Make ``plan`` the open tutor question: ``%pal_hint``, ``--check`` and ``%pal_explain`` use it."""
    plan.question_id, plan.origin, plan.widget, plan.started = question_id, request.origin, widget, time.time()
    runtime.tutor_plan = plan
    if widget is not None:
        widget.plan = plan  # its "Next hint" button reveals this question's hints, whatever is asked later


def _reveal_first(runtime: NotebookRuntime, request: Request, plan: TutorPlan, levels: int) -> None:
    """The hints shown at once: the first, or up to ``--hint-level`` (at most ``levels``)."""
    for _ in range(max(1, min(request.hint_level or 1, levels))):
        reveal_next(runtime, from_button=plan.widget is not None, plan=plan)


def _widget(runtime: NotebookRuntime, request: Request) -> TutorWidget | None:
    """The live tutor widget, where a frontend can show one (not for ``--quiet``)."""
    if request.quiet or getattr(runtime.shell, "kernel", None) is None:
        return None
    widget = TutorWidget(request.question, on_next=lambda: reveal_next(runtime, plan=widget.plan))
    widget.show()
    return widget


def _from_pack(runtime: NotebookRuntime, request: Request, match: PackMatch, cap: int) -> None:
    """A question of the teacher's pack: its verified hints at once, the same for every student, no model run."""
    prepared, pack = match.question, runtime.pack
    plan = TutorPlan.from_pack(prepared.question, [h for h in prepared.hints if h.level <= cap], prepared.key,
                               pack=f"{pack.name if pack else 'the pack'}, question {prepared.id}")
    widget = _widget(runtime, request)
    question_id = _new_id("q")
    runtime.classlog.question(question_id, request.question, tutor_solved=True,
                              details={"ready": True, "hint_cap": cap, "pack": plan.pack})
    _open(runtime, request, plan, widget, question_id)
    took = "" if match.exact else f"I took this for your teacher's question {prepared.id}: \"{prepared.question}\" "
    _say(widget, f"{took}Your teacher prepared hints for this question: {len(plan.hints)} level(s). "
                 "Try it yourself first!")
    _reveal_first(runtime, request, plan, levels=len(plan.hints))


def unsure_message(vote: Vote) -> str:
    """Why no hints follow, counting the competing answers without naming one: a list of them is a
    multiple-choice key with the right answer likely among it. (The class log, a file the student
    can read, keeps only the counts too.)"""
    answers = len(vote.groups)
    found = "one answer" if answers == 1 else f"{answers} different answers"
    silent = vote.candidates - sum(g.votes for g in vote.groups)
    none = f", and {silent} found none" if silent else ""
    return (f"I am not sure about this one: my {vote.candidates} programs found {found}{none}. I will not "
            "guide you towards an answer I am not sure of. These are the approaches my programs took, with "
            "the results left blank: talk them through with your teacher.")


def _decline_unsure(widget: TutorWidget | None, plan: TutorPlan, cap: int) -> None:
    """No hints: say why, and show the competing approaches (as skeletons when hints may show code)."""
    approaches = competing_approaches(plan.session, with_skeletons=cap >= 2)
    message = unsure_message(plan.session.vote)
    plan.hints = []  # %pal_hint and "Next hint" have nothing to reveal
    if widget is not None:
        widget.set_status(message)
        widget.show_approaches(approaches)
        widget.set_next(0, "No hints for this question: please ask your teacher.")
    else:
        print(message)
        for approach in approaches:
            print(f"\n{approach.label}" + (f"\n{approach.skeleton}" if approach.skeleton else ""))


def reveal_next(runtime: NotebookRuntime, from_button: bool = True, plan: TutorPlan | None = None) -> None:
    """Show the next hint of ``plan`` (a widget's own question), else of the last tutor question
    (``%pal_hint``)."""
    plan = plan or runtime.tutor_plan
    if plan is None:
        raise PalError("There is no tutor question yet: ask one with %%pal --tutor first.")
    widget = plan.widget
    if not plan.sure:
        note = "No hints for this question: my programs disagreed about the answer, so please ask your teacher."
        if widget is not None:
            widget.set_next(0, note)
        if not from_button:
            print(note)
        return
    hint = plan.next_hint()
    cap = len(plan.hints)
    if hint is None:
        note = _ladder_note(0, cap)
        if widget is not None:
            widget.set_next(0, note)
        if not from_button:
            print(note)
        return
    runtime.classlog.hint(plan.question_id, level=hint.level)
    if hint.level == 3:
        runtime.classlog.reveal(plan.question_id, level=3)
        route = runtime.insert(plan.session, plan.origin, allow_payload=not from_button) if plan.session else None
        if (route is None or route.route == "none") and not hint.title.endswith(COPY):
            hint.title += COPY
    remaining = cap - plan.shown
    note = _ladder_note(remaining, cap)
    if widget is not None:
        widget.reveal(hint)
        widget.set_next(remaining, note)
    if widget is None or not from_button:  # %pal_hint answers in its own cell too
        print(hint_text(hint))
        print(note)


def _ladder_note(remaining: int, cap: int) -> str:
    if remaining:
        return f"{remaining} more hint(s) available."
    return "That was the last hint your teacher's policy allows." if cap < 3 else "All hints are shown."


def _new_id(prefix: str) -> str:
    """An id for a class-log entry, unique per question asked (millisecond clock, in hex)."""
    return f"{prefix}-{int(time.time() * 1000):x}"


def _say(widget: TutorWidget | None, message: str) -> None:
    if widget is not None:
        widget.set_status(message)
    else:
        print(message)


def run_check(runtime: NotebookRuntime, request: Request) -> None:
    """Run the student's own code; explain an error or a wrong answer in beginner's words."""
    plan = runtime.tutor_plan
    code = request.question  # the cell body is the student's program
    question = plan.question if plan is not None else ""
    # An answer the tutor is not sure of is no yardstick: "not right" would tell which candidate won.
    verified = plan if plan is not None and plan.checkable else None
    expected = request.expect
    if expected is None and verified is not None:
        expected = verified.expected
    question_id = plan.question_id if plan is not None else _new_id("check")
    result = _check(runtime, request.settings, code, expected, question, verified,
                    keyed=request.expect is None)
    runtime.classlog.check(question_id, question=question, succeeded=result.passed, error_type=result.error_type,
                           details={"line": result.line})
    if result.passed and verified is not None:  # running is not solving when no answer is known
        runtime.classlog.solved(question_id, seconds=round(time.time() - verified.started, 1))
    display({"text/plain": check_text(result), "text/html": check_html(result)}, raw=True,
            metadata={"pal_jupyter": {"check": result.verdict}})


def _check(runtime: NotebookRuntime, settings: Any, code: str, expected: float | None, question: str,
           plan: TutorPlan | None, keyed: bool = True) -> Any:
    """``check_code`` as the notebook runs it: the policy's solutions, the tutor's program as reference,
    a pack's key (unless ``--expect`` named the answer)."""
    return check_code(code, backend=runtime.backend(settings), pool=runtime.pool(settings), expected=expected,
                      question=question, allow_solution=runtime.policy.solutions_allowed,
                      generation=settings.generation(), limits=settings.limits(),
                      reference=plan.reference if plan is not None else None,
                      key=plan.key if plan is not None and keyed else None)


def check_text(result: Any) -> str:
    if result.passed:
        shown = "" if result.got is None else f" It prints {result.got:g}."
        return "Well done: your program runs" + (" and gives the expected answer." if result.against_answer else ".") + shown
    printed = "nothing" if result.got is None else f"{result.got:g}"
    lines = [f"Your program runs, but the answer is not right: it prints {printed}." if result.verdict == "wrong_answer"
             else f"Your program stopped with an error{f' on line {result.line}' if result.line else ''}."]
    if result.line_text:
        lines.append(f"  line {result.line}: {result.line_text}")
    if result.explanation:
        lines.append(f"What went wrong: {result.explanation}")
    lines.append(f"Hint: {result.hint}")
    if result.corrected:
        lines += ["A corrected program (try the hint first):", result.corrected]
    return "\n".join(lines)


def check_html(result: Any) -> str:
    css = "pal-answer" if result.passed else "pal-failed"
    parts = [STYLE, f"<div class='{css}'>{html.escape(check_text(result).splitlines()[0])}</div>"]
    if not result.passed:
        if result.execution.error is not None:
            parts.append(f"<pre class='pal-error'>{html.escape(result.execution.error.traceback)}</pre>")
        if result.explanation:
            parts.append(f"<div class='pal-explanation'><b>What went wrong:</b> {html.escape(result.explanation)}</div>")
        parts.append(f"<div><b>Hint:</b> {html.escape(result.hint)}</div>")
        if result.corrected:
            parts.append(f"<details><summary>A corrected program (try the hint first)</summary>{highlight(result.corrected)}</details>")
    return "\n".join(parts)


def explain(runtime: NotebookRuntime, cell_id: str | None = None) -> None:
    """``%pal_explain``: explain the error of a cell (``cell_id``, else the last cell run), without
    re-running it. A last cell that ran cleanly while a tutor question is open is checked against
    the tutor's verified answer: a wrong number is a mistake too."""
    if cell_id:
        run = runtime.cells.failure(cell_id)
        if run is None:
            raise PalError("No error is recorded for that cell: it ran cleanly since, or the kernel restarted. "
                           "Run the cell again to see its error, then ask again.")
        error = run.error
    else:
        run = runtime.cells.last_run
        # Nothing ran since the watch began: the error from before it (raised before the extension loaded).
        error = run.error if run is not None else runtime.cells.last_error
    if error is not None:
        _explain_error(runtime, error)
        return
    plan = runtime.tutor_plan
    if run is not None and plan is not None and plan.checkable and run.finished >= plan.started:
        _check_result(runtime, plan, [r for r in runtime.cells.runs_since(plan.started) if not r.failed])
        return
    raise PalError("There is no error to explain: the last cell you ran worked. %pal_explain explains the "
                   "error of the cell run before it (or, with a tutor question open, a wrong result).")


def _explain_error(runtime: NotebookRuntime, error: CellError) -> None:
    """The error in plain words; in tutor mode (or without solutions) a hint that names the line."""
    policy = runtime.policy
    as_hint = policy.mode == "tutor" or not policy.solutions_allowed
    text = error.report()
    known = [name for name, value in runtime.shell.user_ns.items() if not callable(value) or inspect.isfunction(value)]
    explanation = explain_error(error.source, error, runtime.backend(runtime.settings()), as_hint=as_hint, known=known)
    plan = runtime.tutor_plan
    if plan is not None and not policy.solutions_allowed:
        explanation = scrub_answer(explanation, plan.answer_value)
        if plan.key is not None and plan.key.kind == "number":
            explanation = scrub_numbers(explanation, plan.key.matches)
    runtime.classlog.explain(_new_id("explain"), question=text.splitlines()[-1], error_type=error.name)
    label = "A hint" if as_hint else "What went wrong"
    display({"text/plain": f"{text}\n{label}: {explanation}",
             "text/html": f"{STYLE}<pre class='pal-error'>{html.escape(text)}</pre>"
                          f"<div class='pal-explanation'><b>{label}:</b> {html.escape(explanation)}</div>"},
            raw=True, metadata={"pal_jupyter": {"explain": error.name}})


def _check_result(runtime: NotebookRuntime, plan: TutorPlan, runs: list[CellRun]) -> None:
    """Re-run the student's cells since the question in a child kernel; compare with the answer."""
    code = "\n\n".join(run.source.rstrip("\n") for run in runs)
    result = _check(runtime, runtime.settings(), code, plan.expected, plan.question, plan)
    result.line = _line_in_cell(runs, result.line)  # the student counts lines per cell
    runtime.classlog.check(plan.question_id, succeeded=result.passed, error_type=result.error_type,
                           details={"line": result.line, "from": "pal_explain"})
    left = len(plan.hints) - plan.shown
    offer = f"\nThe next hint: run %pal_hint ({left} left)." if left and not result.passed else ""
    note = ("" if result.passed or result.verdict == "wrong_answer" else
            "\n(Your cells since the question were run together on their own, and stopped there.)")
    display({"text/plain": check_text(result) + note + offer, "text/html": check_html(result)
             + html.escape(note + offer).replace("\n", "<br>")},
            raw=True, metadata={"pal_jupyter": {"check": result.verdict}})


def _line_in_cell(runs: list[CellRun], line: int | None) -> int | None:
    """A line of the cells joined by blank lines, as the line of the cell it came from."""
    for run in runs:
        count = len(run.source.rstrip("\n").splitlines())
        if line is None or line <= count:
            return line
        line -= count + 1
    return None

