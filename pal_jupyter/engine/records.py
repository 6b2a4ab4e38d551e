"""Typed records that flow through the repair loop, and their JSON form.

``ExecutionResult`` is what the kernel pool returns for one program run;
``Program`` is one program (prompt -> completion -> code -> execution -> answer); the programs
drawn together from one prompt form a *round* and share its ``index``; ``Vote`` is the tally of
a round's answers; ``Session`` is one question with all its programs and the deciding vote. All
of them serialise to plain JSON via :func:`to_jsonable`.
"""

from __future__ import annotations

import dataclasses
import enum
from dataclasses import dataclass, field
from typing import Any

from ..kernels.results import ErrorInfo, ExecutionResult, StopReason
from ..prompts.feedback import (DREW_NO_DATA, IGNORES, MISSING_PARTS, NUMBER_FOR_NAME, OTHER_KIND, PRINTED_NOTHING,
                                TABLE_FOR_NUMBER, TEMPLATE, TOO_MANY_BARS)
from .answers import numbers_match


def to_jsonable(value: Any) -> Any:
    """Convert records (dataclasses, enums, nested containers) into JSON-ready data."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: to_jsonable(getattr(value, f.name)) for f in dataclasses.fields(value)}
    if isinstance(value, enum.Enum):
        return value.value
    if isinstance(value, dict):
        return {str(k): to_jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [to_jsonable(v) for v in value]
    return value


@dataclass(frozen=True)
class ProgramAnswer:
    """What one program answered (read by :func:`pal_jupyter.engine.vote.read_answer`)."""

    kind: str  # "number", "text", "table", "figure" or "parts" (several values, each printed as @name[value])
    # for people: the last line printed, "mean 3.5, std 1.2", "a table (5 lines)", "a bar chart (East 134, ...)"
    text: str
    value: float | None = None  # the number, for kind "number"
    key: str = ""  # what equal answers share (numbers compare by value instead)

    def part_values(self) -> list[str]:
        """The values of an answer of kind "parts" (``@name[value]`` each), as its key holds them."""
        return [part.partition("=")[2] for part in self.key.split("; ")] if self.kind == "parts" else []

    def same_as(self, other: ProgramAnswer) -> bool:
        if self.kind != other.kind:
            return False
        if self.kind == "number":
            return numbers_match(self.value, other.value)
        return self.key == other.key


NO_DATA_KEY = "no data"  # the ProgramAnswer key of a chart that drew no data (engine.charts)
UNREAD_FIGURE_KEY = "figure"  # the key of a figure whose data could not be read back (all such agree)


@dataclass
class VoteGroup:
    """Programs of one round that gave the same answer."""

    answer: ProgramAnswer
    samples: list[int] = field(default_factory=list)  # 1-based candidate numbers within the round
    shortest: int = 0  # characters of the group's shortest program (the tie-break)
    words: bool = False  # the step-by-step answer in words (engine.reasoning) gives this answer too

    @property
    def votes(self) -> int:
        return len(self.samples)


HIGH_AGREEMENT = 0.8  # e.g. 4 or 5 of 5 programs agree
MEDIUM_AGREEMENT = 0.6  # e.g. 3 of 5


def confidence_level(votes: int, candidates: int) -> str:
    """'high', 'medium' or 'low' agreement; 'single' when one program was drawn (nothing to compare)."""
    if candidates <= 1:
        return "single"
    agreement = votes / candidates
    if agreement >= HIGH_AGREEMENT:
        return "high"
    return "medium" if agreement >= MEDIUM_AGREEMENT else "low"


@dataclass
class Vote:
    """The tally of one round of candidate programs."""

    round: int
    candidates: int  # programs drawn, whether they ran or not
    groups: list[VoteGroup] = field(default_factory=list)  # the winner first
    second_opinion: ProgramAnswer | None = None  # the words answer that joined this vote, if any

    @property
    def winner(self) -> VoteGroup | None:
        return self.groups[0] if self.groups else None

    @property
    def votes(self) -> int:
        """The winner's programs (the words answer only adds weight: it is no program)."""
        return self.winner.votes if self.winner is not None else 0

    @property
    def agreement(self) -> float:
        """Votes for the winner over programs drawn (0.0 when none was)."""
        return self.votes / self.candidates if self.candidates else 0.0

    @property
    def confidence(self) -> str:
        """How far the answer can be trusted, from the agreement of the programs: a words answer that
        joined a weak vote does not lift it (measured: docs/decisions.md, "Reason first")."""
        return confidence_level(self.votes, self.candidates)

    @property
    def tally(self) -> str:
        """'4 of 5 programs agree' (or why there was nothing to agree on)."""
        if self.winner is None:
            return f"none of the {self.candidates} programs printed an answer"
        if self.candidates == 1:
            return "one program (not cross-checked)"
        return f"{self.votes} of {self.candidates} programs {self.agreeing}"

    @property
    def agreeing(self) -> str:
        """What the agreeing programs did: 'agree', or for charts 'draw the same chart data'."""
        answer = self.winner.answer if self.winner is not None else None
        charts = answer is not None and answer.kind == "figure" and answer.key != UNREAD_FIGURE_KEY
        return "draw the same chart data" if charts else "agree"


@dataclass
class Program:
    """One program: prompt -> completion -> program -> run -> answer. A training example in waiting.

    The ``samples`` programs drawn together from one prompt form round ``index`` and are told
    apart by ``sample``.
    """

    index: int  # the round, 1-based: 1 is the first prompt, 2 the first repair ...
    kind: str  # "initial" (PAL prompt), "repair" (after interpreter feedback) or "reasoned" (after a words answer)
    messages: list[dict[str, str]]  # the chat prompt given to the model
    sample: int = 1  # which of the round's candidates, 1-based
    samples: int = 1  # candidates drawn in this round
    view: str | None = None  # the careful view that wrote it greedily (engine.views); None: sampled, or a repair
    cache_key: str | None = None  # the prompt cache its prompt was kept in (GenerationOptions.cache_key)
    shared_messages: int = 0  # its prompt's start that every question shares (GenerationOptions.shared_messages)
    completion: str = ""  # the model's raw reply
    code: str | None = None  # the program extracted from it (None: the reply held no code)
    explanation: str = ""  # the model's plain-language account of the previous error
    no_code_reason: str | None = None
    replaced: list[str] = field(default_factory=list)  # variables handed over that the program overwrote
    refusal: str | None = None  # why the program was not run (it replaced the user's data)
    execution: ExecutionResult | None = None
    program_answer: ProgramAnswer | None = None  # what it answered, when it ran and showed something
    off_target: str | None = None  # it ran, but gave no usable answer (nothing, NaN, a table for a number)
    correct: bool | None = None  # checker's verdict; None when no checker was given
    feedback: str = ""  # what the interpreter said, as given to the next prompt
    prompt_tokens: int = 0
    completion_tokens: int = 0
    generate_s: float = 0.0  # the whole batch's time when candidates were drawn together
    first_token_s: float | None = None
    execute_s: float = 0.0

    @property
    def label(self) -> str:
        """'attempt 2' for a lone program, 'attempt 2, program 3 of 5' for a candidate."""
        return f"attempt {self.index}" + (f", program {self.sample} of {self.samples}" if self.samples > 1 else "")

    @property
    def answer(self) -> str | None:
        """The answer as shown to people (the last line printed, 'a table', 'a figure')."""
        return self.program_answer.text if self.program_answer else None

    @property
    def ran_cleanly(self) -> bool:
        return self.execution is not None and self.execution.ok

    @property
    def good(self) -> bool:
        return self.ran_cleanly and self.correct is not False and self.off_target is None

    @property
    def reward(self) -> str:
        """LeTI's reward token for this program."""
        return "<|good|>" if self.good else "<|bad|>"

    @property
    def error_type(self) -> str | None:
        """A short label for what went wrong: exception name, stop reason, NoCode, ReplacedData,
        NoOutput (it ran and printed nothing), MissingValue (it printed nan or None), NotANumber (a
        table where one number was asked for), NotAName (a number where a name was asked for), EmptyChart
        (a chart that drew no data), Template (a field's name in braces: an f-string without its f),
        NotInFormat (not the ``@name[value]`` parts the question asks for), NotGrouped (more bars than the
        column it is per has values),
        WrongChartKind (a bar chart where the question asks for a line chart, and so on), IgnoresFilter
        (it never uses a value or a period of the data the question names) or WrongAnswer."""
        if self.code is None:
            return "NoCode"
        if self.refusal is not None:
            return "ReplacedData"
        if self.execution is None:
            return None
        if self.execution.error is not None:
            return self.execution.error.ename
        if not self.execution.ok:
            return self.execution.reason.value
        if self.off_target is not None:
            if self.off_target.startswith(IGNORES):
                return "IgnoresFilter"
            if self.off_target.startswith(NUMBER_FOR_NAME):
                return "NotAName"
            if self.off_target.startswith(TEMPLATE):
                return "Template"
            if self.off_target.startswith(MISSING_PARTS):
                return "NotInFormat"
            if self.off_target.startswith(TOO_MANY_BARS):
                return "NotGrouped"
            if self.off_target.startswith(OTHER_KIND):
                return "WrongChartKind"
            return {PRINTED_NOTHING: "NoOutput", TABLE_FOR_NUMBER: "NotANumber",
                    DREW_NO_DATA: "EmptyChart"}.get(self.off_target, "MissingValue")
        return "WrongAnswer" if self.correct is False else None


@dataclass
class WeakVote:
    """A vote too weak to stop at, which made the round write more programs: what the answer
    would have been, and when (seconds into the question), had the question stopped there."""

    round: int
    votes: int
    candidates: int
    answer: ProgramAnswer  # the weak winner
    seconds: float
    more: int  # programs then added
    how: str = "more"  # "more": more programs from the same prompt; "reason": a words answer, then its program;
    # "look": more programs from a prompt that adds what a look at the data printed (DataLook)


@dataclass
class DataLook:
    """What a look at the user's data printed (:mod:`pal_jupyter.engine.data_look`), asked for when a
    round of programs about it disagreed or failed; every later prompt carries its output."""

    round: int  # the round whose vote asked for it
    code: str
    output: str  # what it printed (its error, should it have failed)
    seconds: float


@dataclass
class SecondOpinion:
    """The step-by-step answer in words (:mod:`pal_jupyter.engine.reasoning`): what the vote method asks
    for when a round's programs disagreed, with the program then written to follow it."""

    round: int
    text: str  # the model's reasoning, in words
    answer: ProgramAnswer | None  # the number it ends on
    seconds: float  # how long the words took
    program: int | None  # the round's sample number of the program that follows these steps (None: none does)


@dataclass(frozen=True)
class PromptContext:
    """What the model is shown before the question, for reference only: in a notebook, its last cells
    and last error (:mod:`pal_jupyter.notebook.context`). ``text`` is put in the question's own turn
    (:func:`pal_jupyter.prompts.questions.with_notebook`); ``note`` says in one line what it holds and what
    a cap left out, for whoever reads the answer. An empty ``text`` sends nothing; its note says why."""

    text: str
    note: str = ""


@dataclass
class Session:
    """One question, every program tried for it, and the vote that chose the answer."""

    id: str
    question: str
    model: str
    programs: list[Program] = field(default_factory=list)
    runtime: str = ""  # how the model ran, e.g. "llama.cpp (Q4_K_M GGUF, 2 threads)"
    started_at: str = ""  # ISO 8601, UTC
    seconds: float = 0.0
    variables: list[str] = field(default_factory=list)  # names sent into the child kernel
    samples: int = 1  # candidate programs per round of the vote method (the careful method samples none)
    method: str = "vote"  # how the programs were asked for (engine.options.METHODS)
    vote: Vote | None = None  # the tally of the round that ended the question
    weak_votes: list[WeakVote] = field(default_factory=list)  # why more programs were written
    views_disagreed: bool = False  # the careful method's two first views did not agree (engine.views)
    # A word problem's two agreeing views were checked in words (Plan.ask_words), and the words
    # ended elsewhere or on nothing: the answer is shown for checking, not as sure.
    words_disagreed: bool = False
    # Why an answer the programs agree on is still to be checked, without a gold answer
    # (engine.vote.doubt_about): e.g. a word problem asking "how many" answered with -19.
    doubt: str | None = None
    # the words answer asked for when programs disagreed (the vote method), or to check two that agree
    # on a word problem (the careful method)
    second_opinion: SecondOpinion | None = None
    data_look: DataLook | None = None  # what a look at the data printed, when programs about it disagreed
    context: PromptContext | None = None  # what the model was shown before the question (a notebook's cells)

    def round(self, index: int) -> list[Program]:
        """The candidates of round ``index``."""
        return [a for a in self.programs if a.index == index]

    @property
    def rounds(self) -> int:
        return max((a.index for a in self.programs), default=0)

    @property
    def succeeded(self) -> bool:
        """A program ran cleanly (and the checker, if any, accepted it)."""
        return self.final is not None and self.final.good

    @property
    def final(self) -> Program | None:
        """The program to show and insert: the vote's winner (its shortest program), else a
        program of the last round that ran cleanly, else the last round's first program."""
        if not self.programs:
            return None
        last = self.round(self.rounds)
        if self.vote is not None and self.vote.winner is not None:
            winners = [a for a in last if a.sample in self.vote.winner.samples]
            return min(winners, key=lambda a: (len((a.code or "").strip()), a.sample))
        return next((a for a in last if a.good), next((a for a in last if a.code is not None), last[0]))

    @property
    def answer(self) -> str | None:
        return self.final.answer if self.succeeded and self.final else None

    @property
    def agreement(self) -> float | None:
        """Votes for the answer over programs drawn in the deciding round (None: nothing voted)."""
        return self.vote.agreement if self.vote is not None and self.vote.winner is not None else None

    @property
    def confidence(self) -> str:
        """'high', 'medium', 'low' (programs disagree), 'single' (one program: not cross-checked)
        or 'none' (no answer)."""
        if self.vote is None or self.vote.winner is None or not self.succeeded:
            return "none"
        # Once the careful method's two first views disagreed, the programs written after them share
        # the prompt of one of them, and its slips: answers they made look sure were right 8 times in
        # 11 on GSM8K, and on the DataFrame suite one of them was wrong (docs/decisions.md, "Sure
        # only when the first views agree"). Such an answer is shown for checking, never as sure; so is
        # one the programs agree on but the question seldom has (``doubt``).
        if (self.views_disagreed or self.words_disagreed or self.doubt is not None) and self.vote.confidence == "high":
            return "medium"
        return self.vote.confidence

    @property
    def generate_seconds(self) -> float:
        """Time spent generating: each round's batch counted once."""
        return sum(max(a.generate_s for a in self.round(i)) for i in range(1, self.rounds + 1) if self.round(i))

    @property
    def tokens_per_second(self) -> float:
        tokens = sum(a.completion_tokens for a in self.programs)
        seconds = self.generate_seconds
        return tokens / seconds if seconds else 0.0


def program_record(session: Session, program: Program) -> dict[str, Any]:
    """The JSONL trace line for one program (self-contained: it repeats the question)."""
    record = to_jsonable(program)
    if program.execution is not None:
        # Images are large and carry nothing a text model learns from: keep their MIME type only.
        for bundle in record["execution"]["outputs"]:
            bundle["data"] = {k: (v if k.startswith("text/") else f"<{k} omitted>") for k, v in bundle["data"].items()}
    vote = session.vote if session.vote is not None and session.vote.round == program.index else None
    group = next((g for g in vote.groups if program.sample in g.samples), None) if vote else None
    record.update(
        session_id=session.id,
        question=session.question,
        model=session.model,
        answer=program.answer,
        reward=program.reward,
        error_type=program.error_type,
        votes=group.votes if group else 0,  # programs of its round that gave the same answer
        won_vote=bool(vote and group is vote.winner),
        started_at=session.started_at,
        context=to_jsonable(session.context),  # what the model saw besides the question (its messages hold it too)
    )
    return record
