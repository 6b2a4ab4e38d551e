"""The question's chat: the first prompt for a new question, and the question's turn every chat shares.

:func:`question_turn` is the question as the model reads it: the question, the user's data described
when it is about them (:mod:`.data`), and the notebook's cells before it, labelled as reference
(:func:`with_notebook`). :func:`pal_messages` asks it after a prompt style's worked examples
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


def notebook_block(notebook_text: str) -> str:
    """The notebook's cells and last error as the model is shown them, labelled as reference."""
    return f"{CONTEXT_INTRO}\n\n{notebook_text.strip()}"


def with_notebook(text: str, notebook_text: str | None) -> str:
    """The question's turn with the notebook's cells and last error before it
    (:mod:`pal_jupyter.notebook.context`), or ``text`` as it is without any. Only ever the final user
    turn: the system message and the worked examples before it stay the same, and with them the
    backend's cached prefix."""
    if not notebook_text or not notebook_text.strip():
        return text
    return f"{notebook_block(notebook_text)}\n\n{CONTEXT_QUESTION}\n{text}"


def question_turn(
    question: str, variables: Mapping[str, Any] | None = None, look: str | None = None,
    notebook_text: str | None = None, data_first: bool = False, examples: str | None = None,
) -> str:
    """The question's user turn: the question with the user's data (:func:`~.data.question_text`, the
    data first when ``data_first``, then ``examples``), after the notebook's cells (``notebook_text``)
    when there are any."""
    return with_notebook(question_text(question, variables, look, data_first, examples), notebook_text)


def pal_messages(
    question: str, variables: Mapping[str, Any] | None = None, style: str = DEFAULT_STYLE, look: str | None = None,
    notebook_text: str | None = None,
) -> list[ChatMessage]:
    """The first prompt for a question: the style's system message and worked examples, then the question
    (after the notebook's cells, ``notebook_text``, when there are any).

    For a fixed style everything before the question is the same for every question, which is
    what lets the backend reuse its key/value cache; a similar-examples style shares the system
    message only, and pays for reading its examples once per question.
    """
    chosen = prompt_style(style)
    turn = question_turn(question, variables, look, notebook_text, chosen.data_first, chosen.inline_examples(question))
    return chosen.chat(question, turn)
