"""Tutor mode: hints before answers, and explanations of a student's own code.

A tutor that hands over the finished program is a vending machine. Here the tutor first solves
the question privately (the ordinary repair loop, hidden), then reveals help one level at a
time:

1. a plan, as guiding sub-questions in the Socratic style of GSM8K's Socratic split;
2. a skeleton of the working program with the computed values left blank (``___``);
3. the full working program (only where the teacher's policy allows solutions).

Levels 1 and 2 never contain the final answer: the plan is scrubbed of it and the skeleton is
cut from the verified program mechanically, so neither depends on a model behaving. A teacher's
tutor pack (:mod:`.pack`, made before class by :mod:`.prepare`) holds the same ladder, verified
against the teacher's key, and a :class:`TutorPlan` made from it needs no model at all.

:func:`check_code` runs a student's own program in a child kernel and, when it fails or gives
a wrong answer, explains what went wrong in beginner's words and points at the line.
:func:`explain_error` does the same for an exception that already happened elsewhere (the
user's own kernel), without running anything.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from ..backends import GenerationOptions, ModelBackend
from ..engine.answers import numbers_match, parse_number
from ..engine.extraction import clean_explanation, extract_code
from ..engine.records import ProgramAnswer, Session
from ..errors import NoCodeError
from ..kernels import ExecutionResult, ExecutorLimits, KernelPool
from ..prompts.tutor import check_messages, explanation_messages, plan_messages
from .answer_key import AnswerKey
from .cell_error import CellError, located_error
from .error_hints import plain_hint, typo_hint
from .steps import step_to_recheck

BLANK = "___"
LEVEL_TITLES = {1: "A plan: questions to guide you", 2: "A skeleton: fill in the blanks", 3: "The full program"}


@dataclass
class Hint:
    level: int
    title: str
    text: str  # the sub-questions (level 1) or a program (levels 2 and 3)
    is_code: bool


@dataclass
class TutorPlan:
    """What the tutor prepared for one question: its private solution and the hint ladder."""

    question: str
    session: Session | None  # the hidden solve (its program is session.final.code); None for a pack's question
    hints: list[Hint] = field(default_factory=list)
    shown: int = 0  # hint levels revealed so far
    question_id: str = ""  # for the class log
    origin: str | None = None  # the %%pal cell's id, where a level-3 program is inserted
    widget: Any = None  # the TutorWidget showing this plan, if any
    started: float = 0.0  # time.time() when the question was asked
    min_agreement: float = 0.0  # below this share of agreeing programs the tutor is not sure
    key: AnswerKey | None = None  # a pack's key (a salted hash): what --check compares with
    pack: str = ""  # where a pack question's hints came from, e.g. "week3.pal-pack.json, question q2"

    @classmethod
    def from_pack(cls, question: str, hints: list[Hint], key: AnswerKey | None, pack: str) -> TutorPlan:
        """A question the teacher's pack prepared: verified hints, no model run."""
        return cls(question, None, hints=list(hints), key=key, pack=pack)

    @property
    def solvable(self) -> bool:
        return self.session.succeeded if self.session is not None else bool(self.hints)

    @property
    def sure(self) -> bool:
        """Enough of the tutor's own programs agree on the answer to guide a student towards it (a
        pack's hints were verified against the teacher's key)."""
        if self.session is None:
            return True
        agreement, vote = self.session.agreement, self.session.vote
        single = vote is None or vote.candidates <= 1  # one program: nothing to disagree with
        return single or agreement is None or agreement >= self.min_agreement

    @property
    def answer_value(self) -> float | None:
        return parse_number(self.session.answer) if self.session is not None else None

    @property
    def reference(self) -> str | None:
        """The tutor's verified program, when it has one to compare a student's steps with."""
        return self.session.final.code if self.session is not None and self.session.final else None

    @property
    def expected(self) -> float | None:
        """The number ``--check`` compares with where there is no key: the tutor's own answer, when sure."""
        return None if self.key is not None or not self.sure else self.answer_value

    @property
    def checkable(self) -> bool:
        """Whether ``--check`` can say right or not yet: the teacher's key, or a sure answer."""
        return self.key is not None or self.expected is not None

    def next_hint(self) -> Hint | None:
        """Reveal the next level (None when the ladder, as capped by policy, is used up)."""
        if self.shown >= len(self.hints):
            return None
        self.shown += 1
        return self.hints[self.shown - 1]


# ---------------------------------------------------------------------- the hint ladder


def prepare_hints(plan: TutorPlan, backend: ModelBackend, cap: int, generation: GenerationOptions | None = None) -> None:
    """Fill ``plan.hints`` up to level ``cap`` (0-3) from the tutor's verified program."""
    program = plan.reference
    if not plan.solvable or not program:
        return
    answers = [p.program_answer for p in plan.session.programs if p.program_answer is not None]
    opinion = plan.session.second_opinion  # the words' answer is a candidate answer too
    if opinion is not None and opinion.answer is not None:
        answers.append(opinion.answer)
    plan.hints = hint_ladder(plan.question, program, plan.answer_value, backend, cap, generation, others=answers)


def hint_ladder(question: str, program: str, answer: float | None, backend: ModelBackend, cap: int,
                generation: GenerationOptions | None = None, others: Iterable[ProgramAnswer] = ()) -> list[Hint]:
    """The hints up to level ``cap`` from a verified ``program``: the answer, and each of ``others``
    (answers other programs gave), blanked from every level but the whole program."""
    makers = {
        1: lambda: plan_hint(question, program, answer, backend, generation),
        2: lambda: Hint(2, LEVEL_TITLES[2], skeleton(program, answer), True),
        3: lambda: Hint(3, LEVEL_TITLES[3], program, True),
    }
    hints = [makers[level]() for level in range(1, cap + 1)]
    for hint in hints:
        if hint.level < 3:
            for other in others:
                hint.text = _scrub_candidate(hint.text, other)
    return hints


def plan_hint(
    question: str, program: str, answer: float | None, backend: ModelBackend, generation: GenerationOptions | None = None
) -> Hint:
    """Level 1: guiding sub-questions written by the model from the working program."""
    messages = plan_messages(question, program)
    options = GenerationOptions(max_new_tokens=160, stop_after_code=False,
                                temperature=generation.temperature if generation else 0.0,
                                seed=generation.seed if generation else None)
    text = backend.generate(messages, options).text
    questions = [line.strip() for line in text.strip().splitlines() if line.strip()][:5]
    return Hint(1, LEVEL_TITLES[1], scrub_answer("\n".join(questions), answer), False)


def scrub_answer(text: str, answer: float | None) -> str:
    """Replace every number equal to the final answer by a blank (a hint must not give it away)."""
    if answer is None:
        return text
    return scrub_numbers(text, lambda value: numbers_match(value, answer))


def scrub_numbers(text: str, is_answer: Callable[[float | None], bool]) -> str:
    """Replace every number ``is_answer`` takes for the answer by a blank (a pack's key: :meth:`AnswerKey.matches`)."""

    def replace(match: re.Match[str]) -> str:
        if match.group("marker"):
            return match.group(0)  # "2. How ..." numbers a list; it is not a quantity
        value = parse_number(match.group("number").replace("_", ""))
        return BLANK if value is not None and is_answer(value) else match.group(0)

    # Python's digit separators too: a skeleton's ``total = 4_800`` is the answer 4800.
    return re.sub(r"(?m)(?P<marker>^\s*\d+\.(?=\s))|(?P<number>\$?-?\d+(?:,\d{3}|_\d+)*(?:\.\d+)?)", replace, text)


def skeleton(program: str, answer: float | None = None) -> str:
    """Level 2: the program with every computed value blanked out, comments and prints kept.

    Assignments of plain literals (the numbers given in the question) stay: finding them is the
    student's first step and the skeleton shows that it was done. Everything computed from
    them becomes ``___`` (a valid name, so the skeleton parses; running it unfilled says
    "name '___' is not defined", which is the point).
    """
    try:
        tree = ast.parse(program)
    except SyntaxError:
        return "# (no skeleton: the program does not parse)"
    lines = program.splitlines()
    spans = sorted(
        ((node.value.lineno, node.value.col_offset, node.value.end_lineno, node.value.end_col_offset)
         for node in ast.walk(tree)
         if isinstance(node, (ast.Assign, ast.AugAssign, ast.AnnAssign, ast.Return)) and node.value is not None
         and not _is_literal(node.value)),
        reverse=True,
    )
    for start, col, end, end_col in spans:  # from the bottom up, so earlier offsets stay valid
        head, tail = lines[start - 1][:col], lines[end - 1][end_col:]
        lines[start - 1 : end] = [head + BLANK + tail]
    text = "\n".join(lines)
    return scrub_answer(text, answer) if answer is not None else text


def _is_literal(node: ast.AST) -> bool:
    if isinstance(node, ast.Constant):
        return True
    if isinstance(node, ast.UnaryOp) and isinstance(node.operand, ast.Constant):
        return True
    if isinstance(node, (ast.List, ast.Tuple, ast.Set)):
        return all(_is_literal(e) for e in node.elts)
    if isinstance(node, ast.Dict):
        return all(_is_literal(v) for v in node.values if v is not None)
    return False


@dataclass
class Approach:
    """One of the competing answers when the tutor's programs disagree, for a class discussion."""

    label: str  # "Approach A (2 of 5 programs)"
    skeleton: str | None  # the group's shortest program, every computed value blanked


def competing_approaches(session: Session, with_skeletons: bool, limit: int = 3) -> list[Approach]:
    """The vote's groups as approaches to discuss with a teacher. No group's answer is given
    away: computed values are blanked and every competing answer, number or words, is scrubbed
    from every skeleton (a literal ``best = "North"`` or a comment may hold one)."""
    vote = session.vote
    if vote is None:
        return []
    answers = [g.answer for g in vote.groups]
    approaches = []
    for letter, group in zip("ABCDEFGH", vote.groups[:limit]):
        programs = [a.code for a in session.round(vote.round) if a.sample in group.samples and a.code]
        text = None
        if with_skeletons and programs:
            text = skeleton(min(programs, key=len))
            for answer in answers:
                text = _scrub_candidate(text, answer)
        approaches.append(Approach(f"Approach {letter} ({group.votes} of {vote.candidates} programs)", text))
    return approaches


def _scrub_candidate(text: str, answer: ProgramAnswer) -> str:
    """A number or a text answer blanked, each part of an answer of several; a table or a chart is printed
    or drawn, never in the code."""
    if answer.kind == "number":
        return scrub_answer(text, answer.value)
    if answer.kind == "parts":
        for value in answer.part_values():
            number = parse_number(value) if _NUMBER_ONLY.fullmatch(value) else None
            text = scrub_answer(text, number) if number is not None else scrub_words(text, value)
        return text
    return scrub_words(text, answer.key) if answer.kind == "text" else text


_NUMBER_ONLY = re.compile(r"-?\d+(?:\.\d+)?(?:e[-+]?\d+)?")


def scrub_words(text: str, key: str) -> str:
    """Blank a text answer (its vote key, ``"east"``) wherever its words stand on their own, in any
    case and with any punctuation between them, as the vote compares them."""
    if not key.split():
        return text
    words = r"[\s\"'`.,;:!?]+".join(map(re.escape, key.split()))
    return re.sub(rf"(?<!\w){words}(?!\w)", BLANK, text, flags=re.IGNORECASE)


# ---------------------------------------------------------------------- checking a student's code


@dataclass
class CheckResult:
    """The verdict on a student's program, with help fitted to the policy."""

    code: str
    execution: ExecutionResult
    expected: float | None = None
    got: float | None = None
    keyed: bool = False  # checked against a pack's key (a hash of the answer) rather than ``expected``
    verdict: str = "ok"  # "ok", "error" or "wrong_answer"
    line: int | None = None  # the line the error points at (1-based)
    line_text: str = ""
    explanation: str = ""
    hint: str = ""
    corrected: str | None = None  # only when the policy allows solutions and the fix was verified

    @property
    def passed(self) -> bool:
        return self.verdict == "ok"

    @property
    def against_answer(self) -> bool:
        """Whether the program was compared with a known answer (not only run)."""
        return self.expected is not None or self.keyed

    @property
    def error_type(self) -> str | None:
        """For the class log: the exception's name, "WrongAnswer", or None when it passed."""
        if self.verdict == "wrong_answer":
            return "WrongAnswer"
        error = self.execution.error
        return error.ename if self.verdict == "error" and error else None


def check_code(
    code: str,
    *,
    backend: ModelBackend,
    pool: KernelPool,
    expected: float | None = None,
    question: str = "",
    allow_solution: bool = False,
    variables: dict[str, Any] | None = None,
    generation: GenerationOptions | None = None,
    limits: ExecutorLimits | None = None,
    reference: str | None = None,
    key: AnswerKey | None = None,
) -> CheckResult:
    """Run a student's program; on an error or a wrong answer, explain it for a beginner.

    ``reference`` (the tutor's verified program) lets a wrong answer's hint name the step to
    re-check (:mod:`~pal_jupyter.classroom.steps`). Unless solutions are allowed, the expected
    answer is scrubbed from the model's explanation: the model is told it, the student is not.
    ``key`` (a tutor pack's) stands for ``expected`` where only a hash of the answer is known; the
    model is then not told the answer at all.
    """
    result = pool.run(code, variables, limits=limits)
    printed = result.text_output()
    if key is not None and key.name and result.ok and parse_number(printed) is None:
        # an nbgrader-style answer: left in the name the teacher's solution assigns, not printed
        named = pool.run(f"{code}\nprint({key.name})", variables, limits=limits)
        printed = named.text_output() if named.ok else printed
    check = CheckResult(code=code, execution=result, expected=expected, got=parse_number(printed),
                        keyed=key is not None)
    if not result.ok:
        check.verdict = "error"
        check.line = result.error.lineno if result.error else None
    elif key is not None and not key.matches(printed):
        check.verdict = "wrong_answer"
    elif expected is not None and not numbers_match(check.got, expected):
        check.verdict = "wrong_answer"
    else:
        return check
    if check.line and 0 < check.line <= len(code.splitlines()):
        check.line_text = code.splitlines()[check.line - 1].strip()
    messages = check_messages(code, result, question, expected if check.verdict == "wrong_answer" else None)
    reply = backend.generate(messages, generation or GenerationOptions())
    check.explanation, fixed = _split_reply(reply.text)
    if check.verdict == "wrong_answer" and not allow_solution:
        check.explanation = scrub_answer(check.explanation, expected)
        if key is not None and key.kind == "number":  # the model was not told it, but may have found it
            check.explanation = scrub_numbers(check.explanation, key.matches)
    check.hint = _hint_from(check)
    if check.verdict == "wrong_answer" and reference:
        pointer = step_to_recheck(code, reference, pool, limits)
        if pointer is not None:
            check.hint = pointer.hint()
            check.line = pointer.step.line if pointer.step is not None else None
            check.line_text = pointer.code_line
    if allow_solution and fixed:
        verified = pool.run(fixed, variables, limits=limits)
        right = key.matches(verified.text_output()) if key is not None else \
            expected is None or numbers_match(parse_number(verified.text_output()), expected)
        if verified.ok and right:
            check.corrected = fixed
    return check


def _split_reply(text: str) -> tuple[str, str | None]:
    try:
        extracted = extract_code(text)
    except NoCodeError:
        return prompts_clean(text), None
    return extracted.explanation or prompts_clean(text.split("```")[0]), extracted.code


def prompts_clean(text: str) -> str:
    return clean_explanation(text)


def _hint_from(check: CheckResult) -> str:
    """A nudge that names the line but not the fix."""
    if check.verdict == "wrong_answer":
        got = "nothing" if check.got is None else f"{check.got:g}"
        return (f"Your program runs, but it prints {got}. Go through it line by line and check each step "
                "against the question: which quantity is computed in a different way than the question says?")
    error = check.execution.error
    if error is not None:
        plain = plain_hint(check.code, located_error(error.ename, error.evalue, check.line, check.line_text))
        if plain is not None:
            return plain
    if check.line:
        return f"Look at line {check.line}: `{check.line_text}`. What does Python know at that point?"
    return "Read the last line of the error message first: it names the kind of problem."


# ---------------------------------------------------------------------- explaining an exception


def explain_error(
    code: str, error: CellError, backend: ModelBackend, generation: GenerationOptions | None = None,
    *, as_hint: bool = False, known: Iterable[str] = (),
) -> str:
    """A plain-language explanation of ``error``, raised by ``code``, that already happened; nothing is run.

    ``as_hint`` (tutor mode without solutions): a hint that names the line and asks, no fix; the
    commonest errors get it without the model (:func:`~.error_hints.plain_hint`). A misspelt name
    (of ``code`` or of ``known``, the notebook's names) is :func:`~.error_hints.typo_hint` either way.
    """
    without_model = (plain_hint if as_hint else typo_hint)(code, error, known)
    if without_model is not None:
        return without_model
    return model_explanation(code, error.report(), backend, generation, as_hint=as_hint)


def model_explanation(
    code: str, error_text: str, backend: ModelBackend, generation: GenerationOptions | None = None,
    *, as_hint: bool = False,
) -> str:
    """The model's explanation of an error (``as_hint``: in short words, no code), for the errors
    :func:`explain_error` has no words of its own for."""
    messages = explanation_messages(code, error_text, as_hint)
    options = GenerationOptions(max_new_tokens=200, stop_after_code=False,
                                temperature=generation.temperature if generation else 0.0)
    text = backend.generate(messages, options).text
    if as_hint:  # a hint holds no code, whatever the model wrote: the code block ends the hint
        text = text.split("```")[0]
    return prompts_clean(text)
