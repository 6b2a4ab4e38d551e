"""The repair loop: question -> prompt -> model -> programs -> child kernels -> vote -> feedback -> next prompt.

:func:`solve` is the one entry point that the ``%%pal`` magic, the CLI and the benchmark all
call. It is a plain function over explicit collaborators (a model backend and a kernel pool),
reports progress to an optional :class:`SolveObserver`, and returns a :class:`Session` holding
a typed :class:`Program` for every program and the :class:`Vote` that chose the answer.

Each round draws ``samples`` programs from one prompt in a single batched generation, runs
each in its own fresh kernel, and takes a vote over their answers (PAL's self-consistency:
see :mod:`pal_jupyter.engine.vote`). The question is settled as soon as a round has an answer; only
when no program of a round worked is one of the failures fed back for repair (LeTI), and the
next round draws ``samples`` corrections of it.
"""

from __future__ import annotations

import contextlib
import dataclasses
import logging
import time
import uuid
from collections.abc import Callable, Iterator, Mapping, Sequence
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from ..backends import Generation, GenerationOptions, ModelBackend, generate_candidates, generate_each
from ..errors import EmptyQuestionError, KernelError, NoCodeError, PalError
from ..kernels import ExecutionResult, ExecutorLimits, KernelPool, pickling_problem
from .. import prompts
from . import data_look, reasoning, views
from .extraction import extract_code, free_names, replaced_variables, replacement_started
from .filters import NamedValue, named_values
from .options import OPTIONS, Settings
from .records import DataLook, Program, ProgramAnswer, PromptContext, SecondOpinion, Session, Vote, WeakVote
from .trace import TraceWriter
from .vote import doubt_about, mark_off_target, read_answer, take_vote

log = logging.getLogger(__name__)

Checker = Callable[[ExecutionResult], bool]

_UNFIXABLE = {"Timeout", "KernelDied", "OutputLimit"}  # errors a repair prompt explains badly


class SolveObserver:
    """Receives progress while :func:`solve` runs. Override what you need; all are no-ops.

    Per round: ``program_started`` for each candidate, then ``token`` as they are written (the
    candidates of a round stream together), ``code_ready`` and ``output`` per program,
    ``program_finished`` per program, and ``vote_taken`` once the round is tallied. When the
    vote is weak, ``reasoning_started`` and ``reasoning_token`` follow the words answer of
    :mod:`.reasoning`, and ``more_programs`` says when more programs are written; the programs
    that follow go through the same steps and join the round (and its vote).
    """

    def session_started(self, session: Session) -> None: ...
    def program_started(self, program: Program) -> None: ...
    def token(self, program: Program, text: str) -> None: ...
    def code_ready(self, program: Program) -> None: ...
    def output(self, program: Program, output: dict[str, Any]) -> None: ...
    def program_finished(self, program: Program) -> None: ...
    def vote_taken(self, session: Session, vote: Vote) -> None: ...
    def reasoning_started(self, session: Session, vote: Vote) -> None: ...
    def reasoning_token(self, session: Session, text: str) -> None: ...
    def more_programs(self, session: Session, vote: Vote, count: int) -> None: ...
    def looked_at_data(self, session: Session, look: DataLook) -> None: ...
    def session_finished(self, session: Session) -> None: ...


def weak_vote(vote: Vote) -> bool:
    """Whether a round's answer is too doubtful to stop at: fewer than 3 in 5 of its programs agree,
    and no words answer (:mod:`.reasoning`) agrees with it.

    In the GSM8K run of docs/decisions.md, "The vote method" (default model, k=5), answers that 1
    or 2 of 5 programs agreed on were right 25 % and 22 % of the time, those of 5 of 5 94 %. When
    the words answer agrees the effort stops (two ways of solving it agree), but the doubt shown stays
    that of the programs.
    """
    return vote.winner is not None and vote.confidence == "low" and not vote.winner.words


def solve(
    question: str,
    settings: Settings | None = None,
    *,
    model: ModelBackend | str | None = None,
    executor: KernelPool | None = None,
    variables: Mapping[str, Any] | None = None,
    namespace: Mapping[str, Any] | None = None,
    checker: Checker | None = None,
    trace: str | Path | TraceWriter | None = None,
    observer: SolveObserver | None = None,
    prompt_style: str | None = None,
    guard_data: bool = True,
    generation: GenerationOptions | None = None,
    limits: ExecutorLimits | None = None,
    context: PromptContext | str | None = None,
    **options: Any,
) -> Session:
    """Answer ``question`` with programs, checking them against each other and repairing failures.

    The default (``method="careful"``, :mod:`.views`): two greedy programs written two independent
    ways at once (a word problem: after worked examples, and from none; a question about
    ``variables``: after fixed pandas examples, and from the data described alone), then run. When
    they agree the answer is shown as sure; when they disagree the first that worked stands, not
    sure. When both failed (an error, or no usable answer: :func:`~.vote.mark_off_target`), a chart
    gets one more program after the pandas idioms most like it, and then the failed program's own
    conversation is continued with what running it gave, for an explanation and a corrected
    program, up to ``max_attempts`` rounds.

    ``method="vote"``: each round samples ``samples`` programs in one batch and the answer most of
    them print wins; while that vote is weak (:func:`weak_vote`) the answer is worked out in words
    first (``second_opinion="words"``, word problems) or the data is looked at (``"look"``,
    :mod:`.data_look`), then more programs are drawn, up to ``max_programs`` in the round.

    ``settings`` (:class:`~pal_jupyter.engine.options.Settings`) holds every option of a question;
    options of the same names given as keywords adjust it (``solve(question, max_attempts=1)``),
    checked by the same declarations. The other arguments are what a question is solved *with*: a
    loaded ``model`` (else ``settings.model`` is loaded), a
    :class:`~pal_jupyter.kernels.KernelPool` as ``executor`` (else a private pool with the settings'
    limits), the user's ``variables``, ... The question is done at the first round where a program
    works (and ``checker``, when given, accepts it).

    ``generation`` and ``limits`` replace what the settings would give (a benchmark measuring a
    knob the options do not offer). Per-run limits come from the settings when the caller chose
    them (``settings`` given, or an option that shapes the limits, such as ``timeout=5``); else the
    pool's own apply. ``variables`` are copied into the child kernels and
    described in the prompt, and a program that replaces one of them with invented data is
    refused before it runs (``guard_data=False`` runs it anyway: the benchmark measures the guard
    that way); of ``namespace`` (e.g. a notebook's globals) only the names a program actually
    uses are copied in. Every program is appended to ``trace`` (a JSONL path) when given.
    ``prompt_style`` picks the worked examples (:data:`pal_jupyter.prompts.PROMPT_STYLES`);
    by default the backend's own ``prompt_style`` (a fine-tuned adapter is asked the way it was
    trained), else the measured default. ``context`` (a notebook's last cells and error:
    :mod:`pal_jupyter.notebook.context`) is shown before the question in its own turn of every prompt,
    for reference, and kept in ``session.context``; the ``context`` *option* (how many cells) is the
    notebook's to read, not this function's.
    """
    chosen = settings is not None
    settings = _adjusted(settings or Settings(), options)
    if limits is None and (chosen or settings.limits() != Settings().limits()):
        limits = settings.limits()
    samples = settings.samples
    question = (question or "").strip()
    if not question:
        raise EmptyQuestionError()
    if prompt_style is not None:
        prompts.prompt_style(prompt_style)  # an unknown style fails before anything starts
    shown = _prompt_context(context)
    notebook_text = shown.text if shown is not None else None  # what every prompt puts before the question
    generation = generation or settings.generation()
    careful = settings.method == "careful"
    generation.temperature_for(1 if careful else samples)  # greedy decoding cannot draw several programs
    observer = observer or SolveObserver()
    writer = TraceWriter(trace) if isinstance(trace, (str, Path)) else trace
    with _pool(executor, limits) as pool:  # starts warming kernels while the model loads
        pool.ensure_warm(2 if careful else samples)
        if model is None or isinstance(model, str):
            backend = dataclasses.replace(settings, model=model or settings.model).load_model()
        else:
            backend = model
        session = Session(
            id=uuid.uuid4().hex[:12],
            question=question,
            model=backend.name,
            runtime=backend.runtime,
            started_at=datetime.now(timezone.utc).isoformat(timespec="seconds"),
            variables=sorted(variables or {}),
            samples=samples,
            method=settings.method,
            context=shown,
        )
        observer.session_started(session)
        start = time.perf_counter()
        # A fine-tuned adapter is asked the way it was trained (see backends.adapters); questions
        # about the user's variables get worked examples about data.
        style = (prompt_style or backend.prompt_style
                 or (prompts.DATA_STYLE if variables else prompts.DEFAULT_STYLE))
        messages = prompts.pal_messages(question, variables, style=style, notebook_text=notebook_text)
        repaired: list[str | None] = []  # the programs fed back so far
        repair_key: str | None = None  # the careful method's repair: the prompt cache of the program it repairs
        round_ = _Round(backend, pool, samples, checker, variables, namespace, generation, observer, guard_data, limits,
                        named_values(question, variables), started=start)
        for index in range(1, settings.max_attempts + 1):
            if careful:
                candidates = _careful_round(session, round_, index, messages, notebook_text, style=prompt_style or
                                            backend.prompt_style, repair_key=repair_key)
            else:
                candidates, messages = _vote_round(session, round_, index, messages, settings, style, notebook_text)
            session.seconds = time.perf_counter() - start
            winner = session.vote.winner if session.vote is not None else None
            session.doubt = doubt_about(winner.answer if winner else None, question, about_data=bool(variables))
            if writer is not None:
                for program in candidates:
                    _record(writer, session, program)
            observer.vote_taken(session, session.vote)
            if session.vote.winner is not None or any(a.good for a in candidates):
                break
            basis = repair_basis(candidates)
            repeated = basis.code in repaired and basis.code is not None
            if careful:  # its own conversation goes on, in its own slot: only the reply and feedback are read
                messages = prompts.follow_up_messages(basis.messages, basis.completion, basis.feedback,
                                                      repeated=repeated)
                repair_key = basis.cache_key
            else:
                messages = prompts.repair_messages(question, basis.code, basis.feedback, variables, repeated=repeated,
                                                   look=_look_output(session), notebook_text=notebook_text)
            repaired.append(basis.code)
    observer.session_finished(session)
    if not any(a.code is not None for a in session.programs):
        raise NoCodeError(
            f"The model wrote no Python code in {len(session.programs)} program(s); "
            f"last reply: {(session.programs[-1].no_code_reason or '').rstrip('.')}. "
            "Try rephrasing the question or a larger model."
        )
    return session


def _prompt_context(context: PromptContext | str | None) -> PromptContext | None:
    """``solve``'s ``context`` as a record; a number is the notebook's option (how many cells), which
    only the notebook can turn into text, so it is refused rather than sent as "3"."""
    if context is None or isinstance(context, PromptContext):
        return context
    if isinstance(context, str):
        return PromptContext(context)
    raise TypeError(f"solve()'s context is the text shown before the question (a PromptContext or str), not "
                    f"{context!r}; the number of notebook cells is the notebook's option (%%pal --context N).")


def _notebook_text(session: Session) -> str | None:
    return session.context.text if session.context is not None else None


def _adjusted(settings: Settings, options: Mapping[str, Any]) -> Settings:
    """``settings`` with the options given by keyword, each checked by its declaration; a name that
    is no option is a TypeError, as for any unknown keyword."""
    unknown = sorted(set(options) - set(OPTIONS))
    if unknown:
        raise TypeError(f"solve() got unknown option(s) {', '.join(unknown)}; the options are {', '.join(OPTIONS)}.")
    return settings.updated(options)


def _vote_round(session: Session, round_: _Round, index: int, messages: list[dict[str, str]], settings: Settings,
                style: str, notebook_text: str | None) -> tuple[list[Program], list[dict[str, str]]]:
    """A round of the vote method: ``samples`` sampled programs; while their vote is weak, the words
    answer first (``second_opinion``), a look at the data (``look``), then more programs up to
    ``max_programs``. Returns the round's programs and the prompt later rounds build on (with what
    the look printed, when there was one)."""
    question, variables, max_programs = session.question, round_.variables, settings.max_programs
    candidates = round_.run(index, messages, question)
    session.programs.extend(candidates)
    session.vote = take_vote(candidates)
    if weak_vote(session.vote) and settings.second_opinion in ("words", "look") and not variables \
            and session.second_opinion is None and len(candidates) < max_programs:
        _reason_first(session, round_, candidates, round_.started)
    looked = False
    if variables and settings.second_opinion == "look" and session.data_look is None \
            and (weak_vote(session.vote) or session.vote.winner is None):
        looked = _look_at_data(session, round_, index)
        if looked:  # every later program is written knowing what the data holds
            messages = prompts.pal_messages(question, variables, style=style, look=_look_output(session),
                                            notebook_text=notebook_text)
    while weak_vote(session.vote) and len(candidates) < max_programs:
        _more_programs(session, round_, messages, candidates, max_programs, round_.started,
                       how="look" if looked else "more")
        looked = False
    return candidates, messages


def _careful_round(session: Session, round_: _Round, index: int, messages: list[dict[str, str]],
                   notebook_text: str | None, style: str | None, repair_key: str | None = None) -> list[Program]:
    """A round of the careful method (:mod:`.views`). The first: two independent greedy views (written
    at once, then run); when they do not agree, the answer of the first view whose program worked
    stands if the plan says so; else the plan's third view (a chart: the idioms most like the question),
    when it has one, writes a greedy program that joins the vote. A repair round: one greedy correction, ``messages``
    the failed program's conversation continued, in its prompt cache (``repair_key``)."""
    if index > 1:
        candidates = round_.run(index, messages, session.question, count=1, cache_key=repair_key)
        session.programs.extend(candidates)
        session.vote = take_vote(candidates)
        return candidates
    plan = views.plan_for(session.question, round_.variables, style)
    candidates = _write_views(session, round_, plan.views, 0, notebook_text)
    session.programs.extend(candidates)
    preferred = candidates[0].sample  # a tie goes to the first view, each plan's best alone
    _join_round(session, round_, candidates, [], None, preferred=preferred)
    vote = session.vote
    agreed = vote is not None and vote.winner is not None and vote.votes == len(plan.views)
    session.views_disagreed = not agreed
    # A word problem whose two programs worked is worked out in words: they check an agreement and
    # break a disagreement. Not where a ``checker`` knows the answer, nor for an answer in doubt already.
    if plan.ask_words and round_.checker is None and all(c.good for c in candidates) \
            and not (agreed and doubt_about(vote.winner.answer, session.question, False) is not None):
        _ask_words(session, round_, candidates, preferred, agreed)
    # The first view whose program worked keeps its answer (not sure): on the DataFrame suite the first
    # view was the right one each time the plain view disagreed, 11 of 11 in two collections, and the
    # idioms' program after a first view that failed changed no answer where the second worked
    # (docs/decisions.md, "A fourth fixed example; the first view stands", "A slot per set of data").
    if agreed or plan.then is None or (plan.worked_stands and any(c.good for c in candidates)):
        return candidates
    if vote is not None and vote.winner is not None:
        session.weak_votes.append(WeakVote(1, vote.votes, vote.candidates, vote.winner.answer,
                                           time.perf_counter() - round_.started, 1))
        round_.observer.more_programs(session, vote, 1)
    third = _write_views(session, round_, [plan.then], len(candidates), notebook_text)
    _join_round(session, round_, candidates, third, None, preferred=preferred)
    return candidates


def _ask_words(session: Session, round_: _Round, candidates: list[Program], preferred: int, agreed: bool) -> None:
    """A word problem's two programs, both worked, checked by the question worked out in words (in the
    worked examples' slot, whose prompt the words share up to the reply's opening). An answer they
    ``agreed`` on is shown for checking, not as sure, when the words end elsewhere or on nothing
    (``Session.words_disagreed``); when they disagree, the words' answer joins the vote and breaks the
    tie (else the first view's stands). Measured on GSM8K test rows 400-611: docs/decisions.md, "The
    plain program answers word problems; the words check it"."""
    vote = session.vote
    assert vote is not None and vote.winner is not None
    written = _work_out_in_words(session, round_, vote)
    if written is None:  # the programs' answer stands, unchecked
        session.words_disagreed = agreed
        return
    words, seconds = written
    answer = reasoning.read_words_answer(words)
    session.second_opinion = SecondOpinion(vote.round, words.strip(), answer, seconds, None)
    _join_round(session, round_, candidates, [], answer, preferred=preferred)
    winner = session.vote.winner if session.vote is not None else None
    session.words_disagreed = agreed and (winner is None or not winner.words)


def _write_views(session: Session, round_: _Round, chosen: Sequence[views.View], drawn: int,
                 notebook_text: str | None) -> list[Program]:
    """The programs of the ``chosen`` greedy views, written at once (llama.cpp decodes them as one batch:
    two views take less time than one after the other) and run; numbered after the ``drawn`` ones."""
    samples = drawn + len(chosen)
    programs = [Program(index=1, kind="initial", messages=views.view_messages(view, session.question, round_.variables,
                                                                              notebook_text),
                        sample=drawn + number, samples=samples, view=view.name,
                        cache_key=view.cache_key_for(round_.variables), shared_messages=view.shared_messages)
                for number, view in enumerate(chosen, start=1)]
    for program in programs:
        round_.observer.program_started(program)
    round_.write(programs, session.question)
    return programs


def _more_programs(session: Session, round_: _Round, messages: list[dict[str, str]], candidates: list[Program],
                   max_programs: int, start: float, how: str = "more") -> None:
    """Adaptive effort: a weak vote gets up to ``samples`` more programs from the same prompt (``how``
    "more"), or from one that adds a look at the data ("look"), which join its round (``candidates``,
    extended in place) and its vote (``session.vote``); ``session.weak_votes`` keeps why and when."""
    vote = session.vote
    assert vote is not None and vote.winner is not None
    more = min(round_.samples, max_programs - len(candidates))
    session.weak_votes.append(WeakVote(vote.round, vote.votes, vote.candidates, vote.winner.answer,
                                       time.perf_counter() - start, more, how=how))
    round_.observer.more_programs(session, vote, more)
    extra = round_.run(vote.round, messages, session.question, drawn=len(candidates), count=more)
    _join_round(session, round_, candidates, extra, vote.second_opinion)


def _look_at_data(session: Session, round_: _Round, index: int) -> bool:
    """The data look (:mod:`.data_look`) for a round whose programs about the user's data disagreed
    or failed: run in a child kernel of its own like any program, kept in ``session.data_look``.
    Whether there is one to go on (a look that could not run says nothing worth a prompt)."""
    code = data_look.look_program(session.question, round_.variables)
    if code is None:
        return False
    try:
        result = round_.pool.run(code, round_.variables, limits=round_.limits)
    except KernelError as exc:
        log.warning("The look at the data could not run (%s); going on without it.", exc)
        return False
    if not result.ok:  # not worth a prompt; the programs go on without it
        log.warning("The look at the data failed (%s); going on without it.", result.error)
        return False
    session.data_look = DataLook(index, code, result.stdout, result.duration_s)
    round_.observer.looked_at_data(session, session.data_look)
    return True


def _look_output(session: Session) -> str | None:
    return session.data_look.output if session.data_look is not None else None


def _reason_first(session: Session, round_: _Round, candidates: list[Program], start: float) -> None:
    """The second strategy for a weak vote (:mod:`.reasoning`): the model solves the question in
    words, greedily, then writes one program that follows its steps. The program joins the round
    (``candidates``, in place) and the words answer joins its vote; ``session.second_opinion``
    keeps both."""
    vote = session.vote
    assert vote is not None and vote.winner is not None
    weak = WeakVote(vote.round, vote.votes, vote.candidates, vote.winner.answer, time.perf_counter() - start, 1,
                    how="reason")
    written = _work_out_in_words(session, round_, vote)
    if written is None:  # the programs' answer stands; more programs may still follow
        return
    words, seconds = written
    session.weak_votes.append(weak)
    reasoned = round_.run(vote.round, reasoning.program_messages(session.question, words, _notebook_text(session)),
                          session.question, drawn=len(candidates), count=1, kind="reasoned")
    opinion = SecondOpinion(vote.round, words.strip(), reasoning.read_words_answer(words), seconds,
                            reasoned[0].sample)
    session.second_opinion = opinion
    _join_round(session, round_, candidates, reasoned, opinion.answer)


def _work_out_in_words(session: Session, round_: _Round, vote: Vote) -> tuple[str, float] | None:
    """The question worked out in words (streamed to the observer) and the seconds it took; None,
    logged, when the model gave none."""
    round_.observer.reasoning_started(session, vote)
    start = time.perf_counter()
    try:
        words = round_.write_words(session, _notebook_text(session))
    except PalError as exc:
        log.warning("No answer in words (%s); going on without it.", exc)
        return None
    return words, time.perf_counter() - start


def _join_round(session: Session, round_: _Round, candidates: list[Program], extra: list[Program],
                second_opinion: ProgramAnswer | None, preferred: int | None = None) -> None:
    """Programs written after a weak vote join its round (``candidates``, extended in place, each
    renumbered "of N") and the round is tallied again, with the words answer when there is one
    (``preferred``: the program whose answer wins a tie, :func:`~.vote.take_vote`)."""
    session.programs.extend(extra)
    candidates.extend(extra)
    for program in candidates:
        program.samples = len(candidates)
    round_.check(candidates, session.question)
    session.vote = take_vote(candidates, second_opinion, preferred=preferred)


def repair_basis(candidates: Sequence[Program]) -> Program:
    """The failed program of a round that is most worth repairing.

    A program that ran but answered in the wrong form is closest to right; then one that raised
    an error the interpreter explains (not a timeout or a dead kernel); then any program; then
    a reply without code.
    """
    return (
        next((a for a in candidates if a.off_target), None)
        or next((a for a in candidates if a.code is not None and a.error_type not in _UNFIXABLE), None)
        or next((a for a in candidates if a.code is not None), None)
        or candidates[0]
    )


class _Round:
    """One prompt -> ``samples`` programs -> runs -> answers. Holds what every round shares."""

    def __init__(
        self,
        backend: ModelBackend,
        pool: KernelPool,
        samples: int,
        checker: Checker | None,
        variables: Mapping[str, Any] | None,
        namespace: Mapping[str, Any] | None,
        generation: GenerationOptions,
        observer: SolveObserver,
        guard_data: bool = True,
        limits: ExecutorLimits | None = None,
        named: Sequence[NamedValue] = (),
        started: float = 0.0,
    ):
        self.backend, self.pool, self.samples, self.checker = backend, pool, samples, checker
        self.variables, self.namespace = dict(variables or {}), namespace
        self.generation, self.observer = generation, observer
        self.guard_data, self.limits = guard_data, limits
        self.named = named  # values of the data the question names: a program must use them (engine.filters)
        self.started = started  # when the question began (perf_counter): what WeakVote.seconds count from

    def run(self, index: int, messages: list[dict[str, str]], question: str, drawn: int = 0,
            count: int | None = None, kind: str | None = None, cache_key: str | None = None) -> list[Program]:
        """``count`` (default ``samples``) programs for round ``index``, numbered after the ``drawn``
        ones the round already has, their prompt kept in the prompt cache ``cache_key``. A "reasoned"
        program (after a words answer) is written greedily."""
        kind = kind or ("initial" if index == 1 else "repair")
        count = self.samples if count is None else count
        programs = [
            Program(index=index, kind=kind, messages=messages, sample=drawn + i + 1, samples=drawn + count,
                    cache_key=cache_key)
            for i in range(count)
        ]
        for program in programs:
            self.observer.program_started(program)
        options = self._options(drawn, greedy=kind == "reasoned")
        if cache_key is not None:
            options = dataclasses.replace(options, cache_key=cache_key)
        replies = generate_candidates(self.backend, messages, count, options,
                                      on_token=lambda row, text: self.observer.token(programs[row], text))
        for program, reply in zip(programs, replies):
            self._read_reply(program, reply)
        self._complete(programs, question)
        return programs

    def write(self, programs: Sequence[Program], question: str) -> None:
        """Write the ``programs`` greedily, code only, each from its own prompt (careful views: their
        ``messages`` and ``cache_key``, the llama.cpp slot each prompt is kept in, are set), all at once,
        and run them. Each is checked alone, as a view of its own."""
        options = dataclasses.replace(self._options(greedy=True), code_only=True)
        requests = [(program.messages, dataclasses.replace(options, cache_key=program.cache_key,
                                                           shared_messages=program.shared_messages))
                    for program in programs]
        replies = generate_each(self.backend, requests,
                                on_token=lambda index, text: self.observer.token(programs[index], text))
        for program, reply in zip(programs, replies):
            self._read_reply(program, reply)
        self._complete(list(programs), question, alone=True)

    def write_words(self, session: Session, notebook_text: str | None) -> str:
        """The question worked out in words, greedily (:mod:`.reasoning`), streamed to the observer; in the
        worked examples' slot, since its prompt is theirs up to the reply's opening (prompts.words_messages)."""
        options = dataclasses.replace(self.generation, temperature=None, seed=None, stop_after_code=False,
                                      stop_when=None, code_only=False, max_new_tokens=reasoning.WORDS_TOKENS,
                                      cache_key=views.SHOTS.cache_key)
        asked = reasoning.words_messages(session.question, notebook_text)
        return generate_candidates(self.backend, asked, 1, options,
                                   on_token=lambda _row, text: self.observer.reasoning_token(session, text))[0].text

    def _complete(self, programs: list[Program], question: str, alone: bool = False) -> None:
        """Run the ``programs``, read what they answered, check the answers against the
        ``question`` (``off_target``; ``alone``: each program by itself, not seen with the others) and
        write their feedback."""
        self._execute([a for a in programs if a.code is not None and a.refusal is None])
        for program in programs:
            program.program_answer = read_answer(program.execution)
        for checked in ([program] for program in programs) if alone else [programs]:
            self.check(checked, question)
        for program in programs:
            self.observer.program_finished(program)

    def check(self, programs: Sequence[Program], question: str) -> None:
        """Mark the programs that gave no usable answer (``off_target``: seen together, since whether a
        table may answer depends on what the others printed) and write what each run said."""
        mark_off_target(programs, question, self.named)
        for program in programs:
            if program.execution is not None:
                program.feedback = prompts.execution_feedback(
                    program.execution, program.correct, program.code, off_target=program.off_target
                )

    def _options(self, drawn: int = 0, greedy: bool = False) -> GenerationOptions:
        """The generation options of a batch: a program that starts replacing the data handed over
        is stopped at that line (it would be refused anyway), so nobody waits for its invented table;
        and a seeded batch that adds to ``drawn`` programs gets its own seed (the same seed would
        write the same programs again)."""
        options = self.generation
        if greedy:
            options = dataclasses.replace(options, temperature=None, seed=None)
        elif options.seed is not None and drawn:
            options = dataclasses.replace(options, seed=options.seed + drawn)
        names = frozenset(self.variables)
        if not (self.guard_data and names):
            return options
        return dataclasses.replace(options, stop_when=lambda text: replacement_started(text, names) is not None)

    def _read_reply(self, program: Program, reply: Generation) -> None:
        program.completion = reply.text
        program.prompt_tokens, program.completion_tokens = reply.prompt_tokens, reply.completion_tokens
        program.generate_s, program.first_token_s = reply.seconds, reply.first_token_s
        try:
            extracted = extract_code(reply.text)
        except NoCodeError as exc:
            program.no_code_reason = str(exc)
            program.feedback = "No Python code block was found in the reply."
            return
        program.code, program.explanation = extracted.code, extracted.explanation
        names = frozenset(self.variables)
        replaced = replaced_variables(program.code, names)
        if not replaced and (started := replacement_started(reply.text, names)) is not None:
            replaced = [started]  # stopped as it began to replace the data: its code is unfinished
        program.replaced = [r.name for r in replaced]
        if replaced and self.guard_data:
            program.refusal = program.feedback = prompts.replaced_data_feedback(replaced)

    def _execute(self, runnable: list[Program]) -> None:
        for program in runnable:
            self.observer.code_ready(program)
        jobs = [(a.code or "", {**_used_from(self.namespace, a.code or ""), **self.variables}) for a in runnable]
        results = self.pool.run_many(jobs, on_output=lambda i, out: self.observer.output(runnable[i], out),
                                     limits=self.limits)
        for program, result in zip(runnable, results):
            if isinstance(result, KernelError):
                raise result  # no kernel could start: not the program's fault, nothing to repair
            program.execution, program.execute_s = result, result.duration_s
            if self.checker is not None and result.ok:
                program.correct = bool(self.checker(result))


@contextlib.contextmanager
def _pool(pool: KernelPool | None, limits: ExecutorLimits | None) -> Iterator[KernelPool]:
    """Use the caller's pool, or a private one that is closed when the question is done."""
    if pool is not None:
        yield pool
        return
    private = KernelPool(limits)
    try:
        yield private
    finally:
        private.close()


def _record(writer: TraceWriter, session: Session, program: Program) -> None:
    """Append to the trace; a full disk, a read-only path or text that cannot be encoded must not
    cost the user their answer."""
    try:
        writer.write(session, program)
    except (OSError, ValueError) as exc:
        log.warning("Could not append to the trace %s: %s", writer.path, exc)


def _used_from(namespace: Mapping[str, Any] | None, code: str) -> dict[str, Any]:
    """The values of ``namespace`` that ``code`` reads without defining, when they can be copied."""
    used = {}
    for name in free_names(code) & set(namespace or {}):
        if pickling_problem(namespace[name]) is None:  # type: ignore[index]
            used[name] = namespace[name]  # type: ignore[index]
        else:  # the program will raise NameError: feedback the model can use
            log.info("not copying %s into the child kernel: it cannot be pickled", name)
    return used
