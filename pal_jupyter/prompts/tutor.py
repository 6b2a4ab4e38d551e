"""The tutor's chats (:mod:`pal_jupyter.classroom.tutor`): a plan of guiding questions, and explanations
of a student's failed program or of an error that already happened.

The plan is asked after one worked example (a GSM8K train question with guiding questions in the
Socratic split's style) and is shown the tutor's verified program "for you only"; the tutor scrubs
the answer from what comes back. A student's program is explained from the interpreter's feedback
(:mod:`.feedback`); an error, from its text, with a fix or (as a hint) with a question that leads to it.
"""

from __future__ import annotations

from ..backends import ChatMessage
from ..kernels import ExecutionResult
from .feedback import execution_feedback
from .styles import SYSTEM

PLAN_SYSTEM = (
    "You are a patient math tutor for beginners. You never give the final answer. You help a "
    "student find the steps themselves by asking short guiding questions."
)
# GSM8K train question 1 (MIT licence), with guiding questions in the Socratic split's style.
PLAN_EXAMPLE = (
    "Natalia sold clips to 48 of her friends in April, and then she sold half as many clips in May. "
    "How many clips did Natalia sell altogether in April and May?",
    "1. How many clips did Natalia sell in May, if it was half as many as in April?\n"
    "2. How do you combine the clips from April and May to get the total?",
)

EXPLAIN_ASK = ("Explain in two or three plain sentences what went wrong and how to fix it. Do not write the "
               "whole program; at most show the one corrected line.")
# Tutor mode: the student should make the fix, so the explanation names the line and asks.
EXPLAIN_HINT = ("Explain in two or three short sentences what went wrong on that line, as you would to a child: "
                "use short, common words (say 'join' not 'concatenate', 'number' not 'integer' or 'float', "
                "'name' not 'variable'). Then ask one question that leads the student to the fix. Do not write "
                "any code and do not give the corrected line.")


def plan_messages(question: str, program: str) -> list[ChatMessage]:
    """Level 1 of the hint ladder: guiding sub-questions for ``question``, written from ``program``
    (the tutor's working program, which the model is told not to show)."""
    return [
        {"role": "system", "content": PLAN_SYSTEM},
        {"role": "user", "content": _plan_request(PLAN_EXAMPLE[0])},
        {"role": "assistant", "content": PLAN_EXAMPLE[1]},
        {"role": "user", "content": _plan_request(question, program)},
    ]


def _plan_request(question: str, program: str | None = None) -> str:
    steps = f"\n\nA correct solution, for you only (do not show it):\n{program}" if program else ""
    return (f"Question: {question}{steps}\n\nWrite 2 to 4 short numbered questions that guide a student "
            "through the steps. Do not give the final answer and do not write code.")


def check_messages(code: str, result: ExecutionResult, question: str = "",
                   expected: float | None = None) -> list[ChatMessage]:
    """A student's program explained from its run: what the interpreter said, and for a wrong answer
    (``expected``, the answer it should have printed; None for a program that failed) that answer."""
    feedback = execution_feedback(result, correct=None if expected is None else False, code=code)
    if expected is not None:
        feedback += f"\nThe expected answer is {expected:g}."
    about = f"The exercise: {question}\n\n" if question else ""
    return [
        {"role": "system", "content": SYSTEM},
        {"role": "user", "content": (
            f"{about}A beginner wrote this program:\n```python\n{code}\n```\n\nRunning it gave:\n```text\n"
            f"{feedback.strip()}\n```\n\nExplain in two or three plain sentences, for a beginner, what went "
            "wrong and why (start with 'Explanation:'). Do not use jargon. Then give the corrected program "
            "in one ```python block."
        )},
    ]


def explanation_messages(code: str, error_text: str, as_hint: bool = False) -> list[ChatMessage]:
    """An error that already happened, explained with its fix (``as_hint``: in short words, with a
    question that leads to the fix instead)."""
    return [
        {"role": "system", "content": SYSTEM},
        {"role": "user", "content": (
            f"A beginner ran this code:\n```python\n{code}\n```\n\nand got this error:\n```text\n{error_text.strip()}\n```\n\n"
            + (EXPLAIN_HINT if as_hint else EXPLAIN_ASK)
        )},
    ]
