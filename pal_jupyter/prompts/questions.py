"""The question's chat: the first prompt for a new question, and the question's turn every chat shares.

:func:`question_turn` is the question as the model reads it: the question, the user's data described
when it is about them (:mod:`.data`), and the notebook's cells before it, labelled as reference
(:func:`with_context`). :func:`pal_messages` asks it after a prompt style's worked examples
(:mod:`.styles`); the words answer (:mod:`.words`) and the training examples (:mod:`.training`) use the
same turn, so what a model is trained on is what it is asked.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..backends import ChatMessage
from .data import question_text
from .styles import DEFAULT_STYLE, prompt_style

CONTEXT_INTRO = (
    "For reference only, the last cells I ran in my notebook, oldest first (do not repeat them unless the "
    "question asks):"
)
CONTEXT_QUESTION = "My question:"


def context_block(context: str) -> str:
    """The notebook's cells and last error as the model is shown them, labelled as reference."""
    return f"{CONTEXT_INTRO}\n\n{context.strip()}"


def with_context(text: str, context: str | None) -> str:
    """The question's turn with the notebook context before it (:mod:`pal_jupyter.notebook.context`),
    or ``text`` as it is without any. Only ever the final user turn: the system message and the worked
    examples before it stay the same, and with them the backend's cached prefix."""
    if not context or not context.strip():
        return text
    return f"{context_block(context)}\n\n{CONTEXT_QUESTION}\n{text}"


def question_turn(
    question: str, variables: Mapping[str, Any] | None = None, look: str | None = None, context: str | None = None,
) -> str:
    """The question's user turn: the question with the user's data (:func:`~.data.question_text`),
    after the notebook ``context`` when there is one."""
    return with_context(question_text(question, variables, look), context)


def pal_messages(
    question: str, variables: Mapping[str, Any] | None = None, style: str = DEFAULT_STYLE, look: str | None = None,
    context: str | None = None,
) -> list[ChatMessage]:
    """The first prompt for a question: the style's system message and worked examples, then the question
    (after the notebook ``context``, when there is one).

    For a fixed style everything before the question is the same for every question, which is
    what lets the backend reuse its key/value cache; a similar-examples style shares the system
    message only, and pays for reading its examples once per question.
    """
    return prompt_style(style).chat(question, question_turn(question, variables, look, context))
