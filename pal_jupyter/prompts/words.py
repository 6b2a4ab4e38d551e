"""Reason first, then program: the chats of the second strategy (:mod:`pal_jupyter.engine.reasoning`).

The model is asked to solve the question step by step **in words**, ending with ``Answer: <number>``;
then, in the same conversation, to write a program that **follows its own steps**. Both ask the
question in the turn every chat shares (:func:`~.questions.question_turn`).

The words (asked by the vote method when its programs disagree) are asked in the careful method's
word-problem prompt (:data:`~.styles.WORD_PROBLEM_STYLE`), which shows two worked programs and two
worked answers in words, in GSM8K's own terse style (a line per step, the arithmetic written out), and
whose reply is begun with :data:`~.styles.WORDS_OPENING`. Why that prompt: its worked examples are in
llama.cpp's cache (the careful method's "shots" slot) once any word problem has been asked, so the
words read only the question and their opening. Why worked examples: without them the model writes
about twice as many words (195 tokens on average against 98 on GSM8K test rows 300-327:
docs/decisions.md, "Word problems: the words as the second view"), and every token decoded is a tenth
of a second of the user's wait.
"""

from __future__ import annotations

from ..backends import ChatMessage
from .questions import question_turn
from .styles import SYSTEM, WORD_PROBLEM_STYLE, WORDS_OPENING, prompt_style

FOLLOW_YOUR_STEPS = (
    "Now write a short Python program that follows your steps, computes the answer and prints it. "
    "Reply with exactly one ```python code block."
)


def words_messages(question: str, notebook_text: str | None = None) -> list[ChatMessage]:
    """The prompt for a step-by-step answer in words (and the notebook ``notebook_text``, when there is
    one): the word-problem prompt, the reply begun with :data:`WORDS_OPENING` for the model to go on."""
    style = prompt_style(WORD_PROBLEM_STYLE)
    chat = style.chat(question, question_turn(question, notebook_text=notebook_text))
    return [*chat, {"role": "assistant", "content": WORDS_OPENING}]


def program_messages(question: str, reasoning: str, notebook_text: str | None = None) -> list[ChatMessage]:
    """The prompt for a program that follows ``reasoning`` (the model's own words answer)."""
    return [
        {"role": "system", "content": SYSTEM},
        {"role": "user", "content": question_turn(question, notebook_text=notebook_text)},
        {"role": "assistant", "content": reasoning},
        {"role": "user", "content": FOLLOW_YOUR_STEPS},
    ]
