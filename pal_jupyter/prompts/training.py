"""The chats a model is fine-tuned on (:mod:`pal_jupyter.training`), built as the chats it is asked in.

An example is learned in the chat its question is asked in at inference: :data:`TRAINED_STYLE`'s
system message and worked examples (:meth:`~.styles.PromptStyle.chat`, which builds the question's
chat too), the question's turn as :func:`~.questions.question_turn` writes it, and the program as the
reply. The adapter is stamped with :data:`TRAINED_STYLE` (``AdapterInfo.prompt``), which is the style it
is then asked in. So the two agree by construction, not by two copies of the same words.

Two formats (see :mod:`pal_jupyter.backends.adapters`):

* **LeTI**: every program, good or bad. The question's turn comes behind the reward token and the
  interpreter's feedback (``<|good|><|feedback|>It printed: 72<|/feedback|>``); at inference the
  question is conditioned on ``<|good|>`` alone.
* **SFT** (PAL fine-tuning): verified programs only, the question's turn as it is.
"""

from __future__ import annotations

from typing import Protocol

from ..backends import ChatMessage
from ..backends.adapters import BAD, FEEDBACK_BEGIN, FEEDBACK_END, GOOD
from .styles import prompt_style

#: The style adapters are trained in, and asked in (``pal-jupyter train`` writes it into the adapter).
TRAINED_STYLE = "chat-0shot"


class Learned(Protocol):
    """What a chat is learned from (:class:`pal_jupyter.training.examples.Example`)."""

    @property
    def question(self) -> str: ...  # the question's turn, as question_turn() wrote it

    @property
    def program(self) -> str: ...

    @property
    def feedback(self) -> str: ...

    @property
    def good(self) -> bool: ...


def program_reply(program: str) -> str:
    """A program as the assistant's reply."""
    return f"```python\n{program.strip()}\n```"


def leti_user_turn(example: Learned) -> str:
    """The user turn LeTI learns from: the reward token and the interpreter's feedback, then the question."""
    return f"{GOOD if example.good else BAD}{FEEDBACK_BEGIN}{example.feedback.strip()}{FEEDBACK_END}{example.question}"


def leti_text(example: Learned) -> str:
    """An example as ``pal-jupyter leti`` shows it: the user turn and the program that ``pal-jupyter
    train --format leti`` learns from, before the model's chat template wraps them."""
    return f"{leti_user_turn(example)}\n{program_reply(example.program)}\n"


def training_messages(example: Learned, fmt: str) -> list[ChatMessage]:
    """The chat ``example`` is learned from in format ``fmt`` ("leti" or "sft"): the chat its question
    is asked in (behind the reward and feedback, for LeTI), then its program as the reply."""
    turn = leti_user_turn(example) if fmt == "leti" else example.question
    chat = prompt_style(TRAINED_STYLE).chat(example.question, turn)
    return [*chat, {"role": "assistant", "content": program_reply(example.program)}]
