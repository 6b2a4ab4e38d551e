"""Training examples: what a model learns from, and which tokens carry the loss.

Sources: ``programs.jsonl`` from ``pal-jupyter collect`` (verdicts known), and JSONL traces of
``%%pal``, ``pal-jupyter ask`` and ``bench --trace`` (only whether a program ran is known).

Two formats (see :mod:`pal_jupyter.backends.adapters`); the chats are the prompts package's
(:mod:`pal_jupyter.prompts.training`), the chats the model is asked in:

* **LeTI**: every program, good or bad. The user turn starts with the reward token and the
  interpreter's feedback (``<|good|><|feedback|>It printed: 72<|/feedback|>``), then the
  question; the assistant turn is the program. The reward token and the feedback are context:
  no loss. The question and the program carry the loss, as in LeTI.
* **SFT** (PAL fine-tuning): verified programs only (the answer was right); the plain prompt is
  context, the program carries the loss.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..backends.adapters import FEEDBACK_END
from ..engine.trace import read_trace
from ..errors import PalError
from ..prompts.questions import question_turn
from ..prompts.training import training_messages

IGNORE = -100  # label of a token that carries no loss
MAX_FEEDBACK_CHARS = 600


@dataclass(frozen=True)
class Example:
    question: str  # the question's turn, as the model was asked it (prompts.questions.question_turn)
    program: str
    feedback: str
    ran: bool
    correct: bool | None  # None: nobody knows (a trace of a real user's question)

    @property
    def good(self) -> bool:
        """LeTI's reward: right when that is known, else ran cleanly."""
        return self.correct if self.correct is not None else self.ran


@dataclass
class Tokenized:
    input_ids: list[int]
    labels: list[int]  # IGNORE where the token is context


def load_examples(paths: Iterable[str | Path]) -> tuple[list[Example], dict[str, int]]:
    """Examples from collected programs and traces; counts of what was read and left out."""
    examples: list[Example] = []
    counts = {"records": 0, "without_program": 0, "duplicates": 0}
    seen: set[tuple[str, str]] = set()
    for path in paths:
        for record in _records(Path(path)):
            counts["records"] += 1
            example = _example(record)
            if example is None:
                counts["without_program"] += 1
                continue
            if (example.question, example.program) in seen:
                counts["duplicates"] += 1
                continue
            seen.add((example.question, example.program))
            examples.append(example)
    return examples, counts


def _records(path: Path) -> Iterable[dict[str, Any]]:
    if not path.is_file():
        raise PalError(f"No training data at {path}: give programs.jsonl from pal-jupyter collect, or a trace file.")
    return read_trace(path)  # the same JSONL reading (torn lines skipped) as every trace


def _example(record: dict[str, Any]) -> Example | None:
    question = str(record.get("question") or "").strip()
    shown = record.get("context") or {}  # a notebook's cells the model was shown before the question
    if question and isinstance(shown, dict) and shown.get("text"):
        question = question_turn(question, notebook_text=str(shown["text"]))  # learn from what the model saw
    if "program" in record:  # pal-jupyter collect
        program = record.get("program")
        ran, correct = bool(record.get("ran")), record.get("correct")
    elif "code" in record:  # a trace line (%%pal, ask, bench --trace)
        program = record.get("code")
        execution = record.get("execution") or {}
        ran = execution.get("reason") == "ok"
        correct = record.get("correct")  # only set where a checker knew the answer
    else:
        return None
    if not question or not program:
        return None
    feedback = str(record.get("feedback") or "")[-MAX_FEEDBACK_CHARS:]
    return Example(question, str(program), feedback, ran, correct if isinstance(correct, bool) else None)


def select(examples: list[Example], fmt: str) -> list[Example]:
    """LeTI learns from every program; SFT only from programs whose answer was verified right."""
    if fmt == "sft":
        return [e for e in examples if e.correct is True]
    return list(examples)


def tokenize(tokenizer: Any, example: Example, fmt: str, max_length: int) -> Tokenized:
    """Token ids and labels of one example; context tokens are labelled IGNORE."""
    messages = training_messages(example, fmt)
    text = _render(tokenizer, messages)
    if fmt == "leti":
        split = text.index(FEEDBACK_END) + len(FEEDBACK_END)
    else:
        context = _render(tokenizer, messages[:-1], generation=True)
        if not text.startswith(context):
            raise PalError("The model's chat template renders a prompt that is not a prefix of the full chat.")
        split = len(context)
    context_ids = tokenizer(text[:split], add_special_tokens=False)["input_ids"]
    target_ids = tokenizer(text[split:], add_special_tokens=False)["input_ids"]
    ids = (context_ids + target_ids)[:max_length]
    labels = ([IGNORE] * len(context_ids) + target_ids)[:max_length]
    return Tokenized(ids, labels)


def _render(tokenizer: Any, messages: list[dict[str, str]], generation: bool = False) -> str:
    if getattr(tokenizer, "chat_template", None):
        return tokenizer.apply_chat_template(messages, tokenize=False, add_generation_prompt=generation)
    text = "\n\n".join(f"### {m['role'].capitalize()}\n{m['content']}" for m in messages)
    return text + ("\n\n### Assistant\n" if generation else "")
