"""The careful method (the default): two independent greedy views first, more only when they disagree.

A question is first answered by two greedy programs from prompts that share no worked examples (a
:class:`Plan` of two views), each asked for the code alone (the reply begins with the code fence and
stops at the closing one), written at once (llama.cpp decodes them as one batch) and run together:

* a word problem: one program from no worked examples (the plainest prompt: its answer stands when the
  two disagree), one after worked examples;
* a question about the user's data, a chart included: one after four fixed pandas examples, one from the
  data described alone; the data comes before the question in both, so that the next question about the
  same data reads only itself (the first view keeps a cache slot per set of data: :meth:`View.cache_key_for`).

When the two agree, the answer is shown as sure (unless of a shape the question seldom has:
:func:`.vote.doubt_about`); a word problem's only when the question worked out in words ends on it too
(two programs of a small model share slips that the words less often repeat). When they disagree, the
first view whose program worked stands, never shown as sure (:attr:`~.records.Session.confidence`);
for a word problem whose two programs both worked, the other's answer when the words end on it. When both failed, a chart gets a
third greedy program after the idioms most like it, placed after the data in the first view's slot
(:data:`IDIOMS`); then the loop repairs a failed program. Nothing is sampled: on 2 CPU cores five programs
cost about 2.5 times one, and on questions about data the 1.5B model's samples are worse than its greedy
one. What was measured, and tried instead: docs/decisions.md, "Careful first: two independent greedy views".
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from ..backends import ChatMessage
from .. import prompts


@dataclass(frozen=True)
class View:
    """One careful, greedy way to answer: a program from a prompt ``style``."""

    name: str
    help: str
    style: str
    # The llama.cpp cache slot its prompt is kept in (GenerationOptions.cache_key); its name unless it
    # shares one with a view whose prompt begins the same way (then each reads only what differs).
    cache: str | None = None
    # A slot per set of data (the variables' names), for a prompt whose worked examples come before
    # the data: see cache_key_for.
    slot_per_data: bool = False

    @property
    def cache_key(self) -> str:
        return self.cache or self.name

    @property
    def shared_messages(self) -> int:
        """The leading messages of its prompt that every question shares (kept between sessions by
        llama.cpp: ``GenerationOptions.shared_messages``)."""
        return prompts.shared_messages(self.style)

    def cache_key_for(self, variables: Mapping[str, Any] | None) -> str:
        """The cache key of this view's prompt about ``variables``.

        Why a slot per set of data: a prompt that begins with ~1,700 tokens of worked examples keeps
        more than half of its slot when the data changes, and llama.cpp then drops the old data's part
        without saving it to its RAM cache (it saves a slot only when a new prompt keeps less than half
        of it), so going back to a frame read its whole description again (300-450 tokens, 16-24 s on a
        2-core AVX2 CPU; 11 times in the DataFrame suite's 45 questions). The zero-shot view, whose
        prompt begins with the data, is saved and restored by llama.cpp as it is."""
        if self.slot_per_data and variables:
            return f"{self.cache_key}:{','.join(sorted(variables))}"
        return self.cache_key


@dataclass(frozen=True)
class Plan:
    """What a question is asked: two independent greedy views, ``first`` first (a tie goes to it);
    when they disagree, ``then`` (when there is one) writes a third greedy program, which joins the vote.

    ``worked_stands``: when the two views disagree and a program of theirs worked (it ran, and its
    answer is on target), the answer of the first that worked is shown, as not sure, and nothing more
    is written; only when both failed is ``then`` asked. A plan without ``then`` stops at its two views.

    ``ask_words``: when both views' programs worked, the question is worked out in words
    (:mod:`.reasoning`, in the worked examples' slot): an answer the two agree on is shown as sure only
    when the words end on it too, and when they disagree the words break the tie (never sure)."""

    first: View
    second: View
    then: View | None = None
    worked_stands: bool = False
    ask_words: bool = False

    @property
    def views(self) -> tuple[View, View]:
        return self.first, self.second


SHOTS = View("shots", "worked examples, one greedy program", style=prompts.WORD_PROBLEM_STYLE)
ZERO = View("zero", "no worked examples (the plainest prompt), the code alone asked for, one greedy program",
            style=prompts.ZERO_STYLE)
DATA_FIXED = View("fixed", "four fixed pandas examples, the data before the question, one greedy program",
                  style=prompts.DATA_FIXED_STYLE, cache="data", slot_per_data=True)
DATA_ZERO = View("zero", "the data described, no worked examples, the code alone asked for, one greedy program",
                 style=prompts.DATA_ZERO_STYLE)
IDIOMS = View("idioms", "the fixed pandas examples, the data, then the idioms like the question's, one greedy "
              "program", style=prompts.IDIOMS_STYLE, cache="data", slot_per_data=True)

#: A word problem; a question about the user's data (``--use``); a chart of it.
WORD_PLAN = Plan(ZERO, SHOTS, ask_words=True)
DATA_PLAN = Plan(DATA_FIXED, DATA_ZERO, worked_stands=True)
CHART_PLAN = Plan(DATA_FIXED, DATA_ZERO, then=IDIOMS, worked_stands=True)


def plan_for(question: str, variables: Mapping[str, Any] | None, style: str | None = None) -> Plan:
    """How ``question`` is asked: a word problem (no ``variables``), a question about data, or one that
    asks for a chart of it (:func:`~pal_jupyter.prompts.asks_for_chart`). A chosen prompt ``style`` (an
    adapter's own, or the caller's) replaces the view with worked examples (a word problem's second, a
    data question's first); the other view stays independent of it. A style one of the views already
    asks in (an adapter trained on the plainest prompt) leaves the plan as it is: two views of one
    prompt would agree on every slip."""
    plan = WORD_PLAN if not variables else CHART_PLAN if prompts.asks_for_chart(question) else DATA_PLAN
    styled = plan.second if plan is WORD_PLAN else plan.first
    if style is None or style in (plan.first.style, plan.second.style):
        return plan
    restyled = View(styled.name, f"prompt style {style}, one greedy program", style=style)
    return dataclasses.replace(plan, second=restyled) if plan is WORD_PLAN else Plan(restyled, plan.second)


def view_messages(view: View, question: str, variables: Mapping[str, Any] | None,
                  notebook_text: str | None) -> list[ChatMessage]:
    """The prompt of a view's program."""
    return prompts.pal_messages(question, variables, style=view.style, notebook_text=notebook_text)
