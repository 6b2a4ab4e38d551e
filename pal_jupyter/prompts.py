"""Prompts: the PAL prompt for a new question and the repair prompt after a failed run.

The PAL prompt is a chat: a system message, worked examples as earlier turns (GSM8K training
questions rewritten as programs that print their answer), then the question. The repair prompt
shows the question, the failed program and the interpreter's feedback, and asks for a short
plain-language explanation followed by a corrected program (LeTI: learning from the
interpreter's error text).
"""

from __future__ import annotations

import ast
import difflib
import re
import textwrap
from collections.abc import Mapping, Sequence
from typing import Any

from .model import ChatMessage
from .records import ExecutionResult

SYSTEM = (
    "You are a patient Python tutor. You answer questions by writing a short Python program "
    "that computes the answer and prints it, so the computer does the arithmetic. Use clear "
    "variable names and brief comments. Reply with exactly one ```python code block."
)

# GSM8K train questions 1 and 3 (MIT licence, ../shared/data/gsm8k), rewritten as programs.
FEW_SHOT: tuple[tuple[str, str], ...] = (
    (
        "Natalia sold clips to 48 of her friends in April, and then she sold half as many clips "
        "in May. How many clips did Natalia sell altogether in April and May?",
        "```python\n"
        "clips_april = 48\n"
        "clips_may = clips_april / 2  # half as many in May\n"
        "total_clips = clips_april + clips_may\n"
        "print(total_clips)\n"
        "```",
    ),
    (
        "Betty is saving money for a new wallet which costs $100. Betty has only half of the "
        "money she needs. Her parents decided to give her $15 for that purpose, and her "
        "grandparents twice as much as her parents. How much more money does Betty need to buy "
        "the wallet?",
        "```python\n"
        "wallet_cost = 100\n"
        "betty_has = wallet_cost / 2\n"
        "from_parents = 15\n"
        "from_grandparents = 2 * from_parents  # twice as much as her parents\n"
        "still_needed = wallet_cost - betty_has - from_parents - from_grandparents\n"
        "print(still_needed)\n"
        "```",
    ),
)

REPAIR_REQUEST = (
    "First explain in one or two plain sentences, for a beginner, what went wrong and why "
    "(start with 'Explanation:'). Then give the complete corrected program in one ```python "
    "block that prints the answer."
)

MAX_FEEDBACK_CHARS = 2000  # keep the prompt short: the end of a traceback says the most


def describe_variables(variables: Mapping[str, Any]) -> str:
    """One entry per variable the program can use: type, shape, columns and, for tables, the
    first rows (a model that sees '2026-07' in a column writes a filter that matches it)."""
    lines = []
    for name, value in variables.items():
        kind = type(value).__name__
        detail = ""
        if hasattr(value, "columns") and hasattr(value, "shape") and hasattr(value, "head"):
            cols = ", ".join(f"{c} ({t})" for c, t in zip(value.columns, getattr(value, "dtypes", [])))
            preview = textwrap.indent(value.head(3).to_string(max_colwidth=30), "    ")
            detail = f" with shape {value.shape} and columns: {cols}\n  first rows:\n{preview}"
        elif hasattr(value, "shape"):
            detail = f" with shape {value.shape}"
        elif isinstance(value, (int, float, str, bool)):
            detail = f" = {value!r}"[:80]
        elif hasattr(value, "__len__"):
            detail = f" of length {len(value)}"
        lines.append(f"- `{name}`: {kind}{detail}")
    return "\n".join(lines)


def _question_text(question: str, variables: Mapping[str, Any] | None) -> str:
    if not variables:
        return question
    return (
        f"{question}\n\nThese variables already exist; use them, do not recreate them:\n"
        f"{describe_variables(variables)}"
    )


def pal_messages(question: str, variables: Mapping[str, Any] | None = None) -> list[ChatMessage]:
    """The first prompt for a question."""
    messages: list[ChatMessage] = [{"role": "system", "content": SYSTEM}]
    for example_question, example_answer in FEW_SHOT:
        messages.append({"role": "user", "content": example_question})
        messages.append({"role": "assistant", "content": example_answer})
    messages.append({"role": "user", "content": _question_text(question, variables)})
    return messages


def repair_messages(
    question: str,
    program: str | None,
    feedback: str,
    variables: Mapping[str, Any] | None = None,
    *,
    repeated: bool = False,
) -> list[ChatMessage]:
    """The prompt after a failed attempt: question, failed program, interpreter feedback.

    ``repeated``: the last "correction" was the same program as before. Saying so changes the
    prompt, which matters with greedy decoding: the same prompt would get the same reply again.
    """
    if len(feedback) > MAX_FEEDBACK_CHARS:
        feedback = "...\n" + feedback[-MAX_FEEDBACK_CHARS:]
    parts = [f"Question: {_question_text(question, variables)}"]
    if program is None:
        parts.append("Your previous reply contained no Python code.")
    else:
        parts.append(f"This program was written to answer it:\n```python\n{program}\n```")
    parts.append(f"Running it gave this result:\n```text\n{feedback.rstrip()}\n```")
    if repeated:
        parts.append("This program is unchanged from the previous attempt, which failed the same way. "
                     "Change the line the error points at.")
    parts.append(REPAIR_REQUEST)
    return [{"role": "system", "content": SYSTEM}, {"role": "user", "content": "\n\n".join(parts)}]


def render_for_trace(messages: Sequence[ChatMessage]) -> str:
    """A readable single-string form of a chat, used as the LeTI 'instruction' text."""
    return "\n\n".join(f"<|{m['role']}|>\n{m['content']}" for m in messages)


def execution_feedback(
    result: ExecutionResult, correct: bool | None = None, code: str | None = None, output_limit: int = 600
) -> str:
    """What the interpreter 'said' about a run, as text for the repair prompt and the trace."""
    printed = result.text_output().strip()
    if len(printed) > output_limit:
        printed = printed[:output_limit] + " ...[cut]"
    if result.error is not None:
        head = f"It printed:\n{printed}\n\n" if printed else ""
        error = result.error.traceback.strip() or f"{result.error.ename}: {result.error.evalue}"
        suggestion = name_suggestion(result.error.ename, result.error.evalue, code)
        return head + error + (f"\n{suggestion}" if suggestion else "")
    if not result.ok:
        return f"The run stopped: {result.reason.value}."
    if correct is False:
        return f"The program ran and printed:\n{printed or '(nothing)'}\nThat is not the correct answer."
    if not printed and not result.outputs:
        return "The program ran but printed nothing. Print the answer."
    return f"The program ran and printed:\n{printed}" if printed else "The program ran without errors."


def name_suggestion(ename: str, evalue: str, code: str | None) -> str | None:
    """Python's own "Did you mean ...?" for a misspelt name, which IPython's tracebacks omit."""
    if ename != "NameError" or not code:
        return None
    match = re.search(r"name '(\w+)' is not defined", evalue)
    if not match:
        return None
    try:
        tree = ast.parse(code)
    except SyntaxError:
        return None
    known = {n.id for n in ast.walk(tree) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)}
    known |= {n.name for n in ast.walk(tree) if isinstance(n, (ast.FunctionDef, ast.ClassDef))}
    close = difflib.get_close_matches(match.group(1), sorted(known), n=1, cutoff=0.6)
    return f"Did you mean: '{close[0]}'?" if close else None
