"""The repair prompts: the failed program and the interpreter's feedback, then a request.

After a failed attempt the model is shown what went wrong (:mod:`.feedback`) and asked for a short
plain-language explanation followed by a corrected program (LeTI: learning from the interpreter's
error text). The careful method goes on with the failed program's own conversation
(:func:`follow_up_messages`): its prompt, worked examples and data included, is still in the view's
llama.cpp slot, so only the reply and the feedback are read. The vote method asks afresh
(:func:`repair_messages`): the question, the program and the feedback in one turn.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from ..backends import ChatMessage
from .data import question_text
from .questions import notebook_block
from .styles import SYSTEM

# One short sentence and no comments: as often right as "one or two sentences" with comments (4 of 30
# failed programs repaired either way), writing 132 tokens, not 202 (docs/decisions.md, "A shorter repair").
REPAIR_REQUEST = (
    "First explain in one short plain sentence, for a beginner, what went wrong (start with "
    "'Explanation:'). Then give the whole corrected program from its first line, imports included (any data "
    "it was given is still there: use it as it is), with no comments, in one ```python block that prints the answer."
)

MAX_FEEDBACK_CHARS = 2000  # keep the prompt short: the end of a traceback says the most


def repair_messages(
    question: str,
    program: str | None,
    feedback: str,
    variables: Mapping[str, Any] | None = None,
    *,
    repeated: bool = False,
    look: str | None = None,
    notebook_text: str | None = None,
) -> list[ChatMessage]:
    """The prompt after a failed attempt: question (after the notebook's cells, ``notebook_text``, when
    there are any), failed program, interpreter feedback.

    ``repeated``: the last "correction" was the same program as before. Saying so changes the
    prompt, which matters with greedy decoding: the same prompt would get the same reply again.
    """
    parts = [notebook_block(notebook_text)] if notebook_text and notebook_text.strip() else []
    parts.append(f"Question: {question_text(question, variables, look)}")
    if program is None:
        parts.append("Your previous reply contained no Python code.")
    else:
        parts.append(f"This program was written to answer it:\n```python\n{program}\n```")
    parts += _what_happened(feedback, repeated)
    return [{"role": "system", "content": SYSTEM}, {"role": "user", "content": "\n\n".join(parts)}]


def follow_up_messages(messages: Sequence[ChatMessage], reply: str, feedback: str, *,
                       repeated: bool = False, request: str = REPAIR_REQUEST) -> list[ChatMessage]:
    """The failed program's conversation continued: its prompt ``messages``, its ``reply`` as the model
    wrote it, then what running it gave (``feedback``) and the ``request`` for an explanation and a
    corrected program. ``repeated``: as in :func:`repair_messages`."""
    if not reply.strip():
        reply = "(no reply)"  # a chat template may drop an empty turn; the feedback says what was missing
    follow_up = "\n\n".join(_what_happened(feedback, repeated, request))
    return [*messages, {"role": "assistant", "content": reply}, {"role": "user", "content": follow_up}]


def _what_happened(feedback: str, repeated: bool, request: str = REPAIR_REQUEST) -> list[str]:
    """The feedback (its end, when long: the end of a traceback says the most) and the request."""
    if len(feedback) > MAX_FEEDBACK_CHARS:
        feedback = "...\n" + feedback[-MAX_FEEDBACK_CHARS:]
    parts = [f"Running it gave this result:\n```text\n{feedback.rstrip()}\n```"]
    if repeated:
        parts.append("This program is unchanged from the previous attempt, which failed the same way. "
                     "Change the line the error points at.")
    return [*parts, request]
