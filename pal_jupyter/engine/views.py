"""The careful method: two greedy programs from independent prompts first, more only when they disagree.

A question is first answered by two *views*: each is one greedy program, written code-only (the
reply begins with the code fence and ends at the closing one: no token spent on words around it),
from a prompt that does not share the other's worked examples. When both run and print the same
answer, the question is done and the answer is shown as sure (two independent careful programs
agree). When they disagree, or one fails, ``samples`` programs are sampled at a low temperature
from the first view's prompt and join the vote, where every program counts one (counting the greedy
ones twice changed no answer in the measurement).

Why not five sampled programs from the start, as before: on 2 CPU cores five programs cost about
2.5 times one, and on questions about data the sampled programs of the 1.5B default model are worse
than its greedy one, so a vote over them often chose an answer several bad samples shared. How the
views, the temperature and the weight were chosen: ``benchmarks/bench_views.py`` (docs/benchmarks.md,
"Careful first").
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from ..backends import ChatMessage
from .. import prompts


@dataclass(frozen=True)
class View:
    """One careful way to ask for a program."""

    name: str
    help: str
    style: str | None = None  # the prompt style; None for "reasoned" (words first: engine.reasoning)

    @property
    def reasons_first(self) -> bool:
        return self.style is None


SHOTS = View("shots", "worked examples, one greedy program", style=prompts.DEFAULT_STYLE)
ZERO = View("zero", "no worked examples, one greedy program", style="chat-0shot")
REASONED = View("reasoned", "the question worked out in words, then one greedy program that follows the steps")
DATA_SHOTS = View("shots", "pandas idioms like the question's, one greedy program", style=prompts.DATA_STYLE)
DATA_ZERO = View("zero", "the data described, no worked examples, one greedy program", style="data-0shot")

#: The two views of a word problem and of a question about the user's data (``--use``), first one first.
WORD_VIEWS = (SHOTS, REASONED)
DATA_VIEWS = (DATA_SHOTS, DATA_ZERO)
#: The temperature of the programs sampled when the two views disagree (unless one was asked for).
ESCALATION_TEMPERATURE = 0.4


def views_for(variables: Mapping[str, Any] | None, style: str | None = None) -> tuple[View, View]:
    """The two views of a question: about data or not. A chosen prompt ``style`` (an adapter's own, or
    the caller's) replaces the first view's worked examples; the second stays independent of it."""
    first, second = DATA_VIEWS if variables else WORD_VIEWS
    if style is not None and style != first.style:
        first = View(first.name, f"prompt style {style}, one greedy program", style=style)
    return first, second


def view_messages(view: View, question: str, variables: Mapping[str, Any] | None,
                  context: str | None) -> list[ChatMessage]:
    """The prompt of a view that asks for the program directly (not one that reasons first)."""
    assert view.style is not None, "a view that reasons first is asked in two steps (engine.reasoning)"
    return prompts.pal_messages(question, variables, style=view.style, context=context)
