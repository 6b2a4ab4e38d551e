"""Reason first, then program: the chats of the second strategy (:mod:`pal_jupyter.engine.reasoning`).

The model is asked to solve the question step by step **in words**, ending with ``Answer: <number>``,
after three worked examples in GSM8K's own terse style (a line per step, the arithmetic written
out: :data:`WORDS_STYLE`); then, in the same conversation, to write a program that **follows its
own steps**. Both ask the question in the turn every chat shares (:func:`~.questions.question_turn`).

Why the worked examples: without them the model writes about twice as many words (195 tokens on
average against 98 on GSM8K test rows 300-327, docs/benchmarks.md), and on two AVX2 cores
every token decoded is a tenth of a second of the user's wait. The examples' prefix is the same
for every question, so the backend's prompt cache reads it once.
"""

from __future__ import annotations

from ..backends import ChatMessage
from .questions import question_turn
from .styles import SYSTEM, PromptStyle
from .worked_examples import WORKED_EXAMPLES

WORDS_SYSTEM = (
    "You are a careful math tutor. Solve the question step by step in a few short sentences. "
    "End with a last line of the form 'Answer: <number>'."
)
#: The words' system message and worked examples: GSM8K train rows 0, 2 and 3, solved in the data
#: set's own words. Not one of PROMPT_STYLES, which are the styles programs are asked in.
WORDS_STYLE = PromptStyle("words", "step by step in words, 3 worked examples", WORDS_SYSTEM,
                          tuple((example.question, example.as_words()) for example in WORKED_EXAMPLES if example.words))
FOLLOW_YOUR_STEPS = (
    "Now write a short Python program that follows your steps, computes the answer and prints it. "
    "Reply with exactly one ```python code block."
)


def words_messages(question: str, notebook_text: str | None = None) -> list[ChatMessage]:
    """The prompt for a step-by-step answer in words, after the worked examples (and the notebook
    ``notebook_text``, when there is one)."""
    return WORDS_STYLE.chat(question, question_turn(question, notebook_text=notebook_text))


def program_messages(question: str, reasoning: str, notebook_text: str | None = None) -> list[ChatMessage]:
    """The prompt for a program that follows ``reasoning`` (the model's own words answer)."""
    return [
        {"role": "system", "content": SYSTEM},
        {"role": "user", "content": question_turn(question, notebook_text=notebook_text)},
        {"role": "assistant", "content": reasoning},
        {"role": "user", "content": FOLLOW_YOUR_STEPS},
    ]
