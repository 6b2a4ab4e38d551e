"""The careful method: two independent greedy views first, more only when they disagree.

A question is first answered by two *views*, each greedy (no sampling) and neither sharing the
other's worked examples:

* a question about the user's data: two programs, one from the pandas idioms most like the
  question, one from the plain description of the data;
* a word problem: one program from the worked examples, and the question worked out in words,
  step by step, whose final number votes beside the program (no program is written from it).

Programs are written code-only (the reply begins with the code fence and ends at the closing one:
no token spent on words around it) and each runs as soon as it is written. When the two views give
the same answer, the question is done and the answer is shown as sure. When they disagree, or one
fails, ``samples`` programs are sampled at a low temperature from the first view's prompt and join
the vote, where every program counts one and the words answer one more for the programs it agrees
with.

Why not five sampled programs from the start, as before: on 2 CPU cores five programs cost about
2.5 times one, and on questions about data the sampled programs of the 1.5B default model are worse
than its greedy one, so a vote over them often chose an answer several bad samples shared. Why the
words as the second view of a word problem: on GSM8K two greedy programs that agreed were wrong a
third of the time (the same slip written twice), a program and the words that agreed much less often,
and the words cost less than the words plus a program written from them. How the views, the
temperature and the weight were chosen: ``benchmarks/bench_views.py`` (docs/benchmarks.md, "Careful
first").
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from ..backends import ChatMessage
from .. import prompts


@dataclass(frozen=True)
class View:
    """One careful, greedy way to answer: a program from a prompt ``style``, or (``style`` None) the
    question worked out in words, whose final number is the view's answer (:mod:`.reasoning`)."""

    name: str
    help: str
    style: str | None = None

    @property
    def writes_program(self) -> bool:
        return self.style is not None


SHOTS = View("shots", "worked examples, one greedy program", style=prompts.DEFAULT_STYLE)
WORDS = View("words", "the question worked out in words, step by step; the number it ends on votes")
DATA_SHOTS = View("shots", "pandas idioms like the question's, one greedy program", style=prompts.DATA_STYLE)
DATA_ZERO = View("zero", "the data described, no worked examples, one greedy program", style="data-0shot")

#: The two views of a word problem and of a question about the user's data (``--use``), first one first.
WORD_VIEWS = (SHOTS, WORDS)
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
                  notebook_text: str | None) -> list[ChatMessage]:
    """The prompt of a view that writes a program (the words view is asked by :mod:`.reasoning`)."""
    assert view.style is not None, "the words view writes no program"
    return prompts.pal_messages(question, variables, style=view.style, notebook_text=notebook_text)
