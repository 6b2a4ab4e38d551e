"""Reason first, then program: the second strategy for a question whose programs disagree.

When a round's programs disagree (:func:`pal_jupyter.engine.loop.weak_vote`), the model is asked
twice more, greedily: first to solve the question step by step **in words**, ending with
``Answer: <number>``; then, in the same conversation, to write a program that **follows its own
steps**. The program joins the round like any other candidate (it is run in its own kernel, and
it is what gets inserted when its answer wins). The words answer never becomes a cell: it is a
second opinion that joins the vote (:func:`pal_jupyter.engine.vote.take_vote`), and the widget says
whether it agrees.

Why: where 5 programs disagree, their vote is right about one time in four (docs/decisions.md,
"The vote method"); working the question out in words is another way in. Measured on 51 GSM8K
questions (docs/decisions.md, "Reason first"): 2 answers gained and none lost, at 1.5-1.6x the time of
stopping at the vote. The words and the program written after them agree with each other far more
often than two independent programs, so together they count as two votes, not more. Questions about
the user's variables skip this step: a words answer about a DataFrame would be a guess from its
preview.

The two chats are built by :mod:`pal_jupyter.prompts.words`; this module reads the words answer.
"""

from __future__ import annotations

import re

from ..prompts.words import program_messages, words_messages  # the two chats (loop.py asks for them here)
from .answers import parse_number
from .records import ProgramAnswer
from .vote import format_number

__all__ = ["WORDS_TOKENS", "program_messages", "read_words_answer", "words_messages"]

#: Words answers in the worked examples' style run to 92 tokens on average (GSM8K test rows 300-399);
#: 1 of those 100 reached this cap.
WORDS_TOKENS = 256

_ANSWER_LINE = re.compile(r"Answer:\s*\**\s*\$?\s*(-?[\d,]*\.?\d+)", re.IGNORECASE)
_BOXED = re.compile(r"\\boxed\{\s*\\?\$?\s*(-?[\d,]*\.?\d+)")


def read_words_answer(text: str) -> ProgramAnswer | None:
    """The number a words answer ends on: its last ``Answer:`` line, else its last ``\\boxed{}``,
    else the last number of its last line; None when it gives none."""
    found = _ANSWER_LINE.findall(text) or _BOXED.findall(text)
    lines = [line for line in text.strip().splitlines() if line.strip()]
    value = parse_number(found[-1]) if found else parse_number(lines[-1]) if lines else None
    if value is None:
        return None
    return ProgramAnswer("number", format_number(value), value, key=format_number(value))
