"""Reason first, then program: the chats of the second strategy (:mod:`pal_jupyter.engine.reasoning`).

The model is asked to solve the question step by step **in words**, ending with ``Answer: <number>``;
then, in the same conversation, to write a program that **follows its own steps**. Both ask the
question in the turn every chat shares (:func:`~.questions.question_turn`).
"""

from __future__ import annotations

from ..backends import ChatMessage
from .questions import question_turn
from .styles import SYSTEM

WORDS_SYSTEM = (
    "You are a careful math tutor. Solve the question step by step in a few short sentences. "
    "End with a last line of the form 'Answer: <number>'."
)
FOLLOW_YOUR_STEPS = (
    "Now write a short Python program that follows your steps, computes the answer and prints it. "
    "Reply with exactly one ```python code block."
)


def words_messages(question: str, context: str | None = None) -> list[ChatMessage]:
    """The prompt for a step-by-step answer in words (after the notebook ``context``, when there is one)."""
    return [{"role": "system", "content": WORDS_SYSTEM},
            {"role": "user", "content": question_turn(question, context=context)}]


def program_messages(question: str, reasoning: str, context: str | None = None) -> list[ChatMessage]:
    """The prompt for a program that follows ``reasoning`` (the model's own words answer)."""
    return [
        {"role": "system", "content": SYSTEM},
        {"role": "user", "content": question_turn(question, context=context)},
        {"role": "assistant", "content": reasoning},
        {"role": "user", "content": FOLLOW_YOUR_STEPS},
    ]
