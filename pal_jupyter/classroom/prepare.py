"""``pal-jupyter prepare``: an assignment turned into a tutor pack of verified hints, before class.

For each question a program that gives the key's answer is looked for, cheapest first, within a
budget of seconds: the careful views (repaired up to twice, told when the answer is not the expected
one), four programs sampled at 0.7 (repaired once), six sampled at 1.0 without worked examples. A
program counts as verified only when it *computes* the answer (:func:`copied_or_fixed`): one whose
answer does not change when the question's numbers do (a copied literal) never counts. With an
nbgrader solution cell the teacher's own program is the verified one; its output is the key.

The hint ladder is then cut from the verified program (:func:`.tutor.hint_ladder`): a plan, a skeleton,
and the program itself only when the teacher allows solutions. Every answer any program printed
on the way is blanked from the hints, so the pack holds no candidate answer either.
"""

from __future__ import annotations

import ast
import re
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from ..backends import GenerationOptions, ModelBackend
from ..engine.answers import numbers_match, parse_number
from ..engine.loop import solve
from ..engine.records import ProgramAnswer
from ..errors import NoCodeError
from ..kernels import ExecutionResult, KernelPool
from .answer_key import AnswerKey
from .assignment import AssignmentQuestion, answer_name
from .pack import PackQuestion, TutorPack
from .tutor import hint_ladder

TEACHER = "the teacher's solution"
#: Where a program is looked for, cheapest first: (what the pack says verified it, solve()'s options).
SEARCH: tuple[tuple[str, dict[str, Any]], ...] = (
    ("the careful views", {"method": "careful", "max_attempts": 3}),
    ("sampled programs", {"method": "vote", "samples": 4, "max_programs": 4, "temperature": 0.7,
                          "second_opinion": "off", "max_attempts": 2}),
    ("programs sampled without worked examples", {"method": "vote", "samples": 6, "max_programs": 6,
                                                  "temperature": 1.0, "second_opinion": "off", "max_attempts": 1,
                                                  "prompt_style": "chat-0shot"}),
)
_GIVEN = re.compile(r"\d[\d,]*(?:\.\d+)?|\.\d+")
_NUMBER = r"(?P<number>[-+]?\$?[\d,]*\.?\d+)\s*%?"
#: A teacher's printed answer that is a number with a label ("Girls: 360", "total = $12.50") or a
#: unit ("360 girls"): the key is the number, as the tutor reads a student's printed answer.
_LABELLED = (re.compile(rf"[^\d:=]*[:=]\s*{_NUMBER}\s*[A-Za-z ]*"), re.compile(rf"{_NUMBER}\s+[A-Za-z][A-Za-z ]*"))
MUTATIONS = 4  # the question's numbers varied, at most, to see the answer follow them


@dataclass
class Verification:
    """How one question was verified: the program, by what, and every answer met on the way."""

    program: str | None = None
    by: str = ""
    problem: str = ""
    value: float | None = None  # the answer, when a number: blanked from the hints
    answers: list[ProgramAnswer] = field(default_factory=list)  # every answer a program gave: blanked too


def prepare_pack(
    questions: list[AssignmentQuestion],
    backend: ModelBackend,
    pool: KernelPool,
    *,
    assignment: str = "",
    solutions: bool = False,
    budget_s: float = 240.0,
    progress: Callable[[PackQuestion], None] | None = None,
) -> TutorPack:
    """Verify every question and build its hints (``solutions``: level 3, the whole program, too)."""
    pack = TutorPack([], assignment=assignment, model=backend.name, solutions=solutions)
    for question in questions:
        start = time.perf_counter()
        prepared = prepare_question(question, backend, pool, solutions=solutions, budget_s=budget_s)
        prepared.seconds = time.perf_counter() - start
        pack.questions.append(prepared)
        if progress is not None:
            progress(prepared)
    return pack


def prepare_question(question: AssignmentQuestion, backend: ModelBackend, pool: KernelPool, *,
                     solutions: bool = False, budget_s: float = 240.0) -> PackQuestion:
    key, found = None, Verification()
    if question.solution is not None:
        key, found = teachers_key(question, pool)
    elif question.answer is not None:
        key = AnswerKey.of(question.answer)
        found = find_program(question.question, key, backend, pool, budget_s)
        found.value = question.answer if isinstance(question.answer, float) else None
    prepared = PackQuestion(question.id, question.question, key, verified_by=found.by, problem=found.problem)
    if found.program is not None:
        prepared.hints = hint_ladder(question.question, found.program, found.value, backend, 3 if solutions else 2,
                                     GenerationOptions(temperature=0.0), others=found.answers)
    return prepared


def teachers_key(question: AssignmentQuestion, pool: KernelPool) -> tuple[AnswerKey | None, Verification]:
    """Run the teacher's solution after its notebook's set-up: what it prints (or leaves in the
    name it assigns last) is the key."""
    solution = question.solution or ""
    name = answer_name(solution)
    marker, named = "<<pal-jupyter: the solution's output>>", "<<pal-jupyter: its last name's value>>"
    parts = [*question.setup, f"print({marker!r})", solution]
    if name is not None:  # read in the same run, in case the solution prints nothing
        parts.append(f"print({named!r})\ntry:\n    print({name})\nexcept NameError:\n    pass")
    result = pool.run("\n\n".join(parts))
    own, _, value = result.text_output().split(marker, 1)[-1].partition(named)
    printed = own.strip() or value.strip()
    name = name if printed and not own.strip() else None  # the key names the variable only when read from it
    if not result.ok or not printed:
        why = f"it stopped with {result.error.ename}" if result.error else "it printed nothing and assigns no name"
        return None, Verification(problem=f"The teacher's solution gave no answer: {why}.")
    answer = printed.splitlines()[-1].strip()
    key = AnswerKey.of(_key_answer(answer), name=name)
    return key, Verification(program=solution, by=TEACHER, value=parse_number(answer) if key.kind == "number" else None)


def _key_answer(line: str) -> float | str:
    """The answer in the teacher's last printed line: the number of a labelled one, else the line."""
    match = next((m for pattern in _LABELLED if (m := pattern.fullmatch(line))), None)
    number = parse_number(match.group("number")) if match else None
    return number if number is not None else line


def find_program(question: str, key: AnswerKey, backend: ModelBackend, pool: KernelPool,
                 budget_s: float) -> Verification:
    """The first program that prints the key's answer and computes it, searched for within ``budget_s``."""
    found = Verification()
    start = time.perf_counter()
    accepts = lambda result: key.matches(result.text_output())  # noqa: E731  (the checker solve() calls)
    problems = []
    for by, options in SEARCH:
        if time.perf_counter() - start > budget_s:
            break
        try:
            session = solve(question, model=backend, executor=pool, checker=accepts, **options)
        except NoCodeError:
            continue
        found.answers.extend(p.program_answer for p in session.programs if p.program_answer is not None)
        for program in session.programs:
            if program.correct and program.code:
                problem = copied_or_fixed(program.code, question, key, pool, program.execution)
                if problem is None:
                    found.program, found.by = program.code, f"a program that computes it ({by})"
                    return found
                problems.append(problem)
    found.problem = (problems[-1] if problems else
                     f"No program gave the key's answer within {budget_s:g} s. Check the key, or write a hint.")
    return found


def copied_or_fixed(code: str, question: str, key: AnswerKey, pool: KernelPool,
                    execution: ExecutionResult | None) -> str | None:
    """Why a program that prints the key's answer does not compute it, or None when it does.

    It is refused when it uses none of the question's numbers, or when its answer stays the same as
    each of them is changed in turn (a few, the first it uses): a copied ``print(360)`` does, however
    much it computes around it. (A literal equal to the answer proves nothing: a key of 2 or 4 is
    in many honest programs.)"""
    try:
        tree = ast.parse(code)
    except SyntaxError:
        return "It does not parse."
    given = given_numbers(question)
    if not given:
        return None  # nothing to vary: a question without numbers
    used = [node for node in ast.walk(tree) if isinstance(node, ast.Constant) and not isinstance(node.value, bool)
            and isinstance(node.value, (int, float)) and _given(node.value, given)]
    if not used:
        return "Its program uses none of the question's numbers: the answer was copied, not computed."
    answer = _answer_of((execution or pool.run(code)).text_output(), key)
    for node in used[:MUTATIONS]:
        varied = pool.run(_replaced(code, node, node.value + 1))
        if varied.ok and _answer_of(varied.text_output(), key) != answer:
            return None
    return "Its answer stays the same when the question's numbers change: it was copied, not computed from them."


def _answer_of(printed: str, key: AnswerKey) -> str | float | None:
    """What a run answered, as the key reads it: the last number, or the last line."""
    if key.kind == "number":
        return parse_number(printed)
    lines = [line.strip() for line in printed.splitlines() if line.strip()]
    return lines[-1] if lines else None


def given_numbers(question: str) -> list[float]:
    """The numbers a question gives (a percentage as written too: 40 % may be 40 or 0.4 in a program)."""
    values = []
    for raw in _GIVEN.findall(question):
        value = float(raw.replace(",", ""))
        values += [value, value / 100]
    return values


def _given(value: float, given: Iterable[float]) -> bool:
    return any(numbers_match(value, number) for number in given)


def _replaced(code: str, node: ast.Constant, value: float) -> str:
    """``code`` with the literal ``node`` written as ``value`` (by its position, so one place changes)."""
    lines = code.splitlines()
    line = lines[node.lineno - 1]
    lines[node.lineno - 1] = f"{line[:node.col_offset]}{value!r}{line[node.end_col_offset:]}"
    return "\n".join(lines)


def summary_lines(pack: TutorPack) -> list[str]:
    """``verified N of M``, then a line for every question a teacher must look at."""
    lines = [f"verified {pack.verified} of {len(pack.questions)}"]
    for question in pack.questions:
        if not question.verified:
            lines.append(f"  not verified: {question.id}: {question.question[:70]!r}: {question.problem}")
    return lines

