"""The careful method: two independent greedy views first, more only when they disagree.

A question is first answered by two *views*, each greedy (no sampling) and neither sharing the
other's worked examples (a :class:`Plan`):

* a question about the user's data, a chart of it included: two programs, one after four fixed pandas
  examples, one from the plain description of the data, the code alone asked for (its programs had
  been half comments); both put the data before the question, so that the next question about the
  same data prefills only itself (the rest is in llama.cpp's cache);
* a word problem: one program after worked examples, one from no examples (the code alone asked
  for); when they disagree, the answer of the program after the worked examples is shown, as not
  sure, unless only the other one worked; nothing more is written.

Programs are written code-only (the reply begins with the code fence and ends at the closing one:
no token spent on words around it). The two views are written at once, each in its own llama.cpp
slot, which decodes them as one batch (on 2 cores two rows take less time than one after the other),
and their programs run together as soon as both are written. When the two views give
the same answer, the question is done and the answer is shown as sure. When they disagree, a
word problem stops there (above); a question about data keeps the answer of the first view whose
program worked (shown as not sure):
the first view was the right one every time the plain view disagreed on the DataFrame suite (7 of 7,
and 4 of 4 in the collection before the fourth example). When both failed, a question about data
goes straight to the repair (the failed program's conversation continued with what running it gave:
an explanation and a corrected program), and so does a chart unless a third greedy program answers
it first: written from the idioms most like the question placed after the data (``data-inline``, in
the first view's slot: it reads only the idioms and the question), it joins the vote.

Why the idioms for a chart only: on the 22 chart questions, after two failed views, the idioms' program
drew 2 more charts right than the repair did, in about the same time (19 of 22 against 17; 20 against
17 in the collection before); on the DataFrame suite's 40 other questions it answered one more than
the repair, and cost 2.6 s more a question at the AVX2 EPYC's speeds (the suite: 37 of 45 at 1.90
times the baseline's time, where the idioms for every question answered 38 at 2.12 times:
docs/benchmarks.md, "The idioms for a chart only"). Nothing is
sampled: a chart was asked the idioms first and, when its views disagreed, four programs sampled at
0.4, which answered 20 of the 22 chart questions at 1.44 times the time of the plan for data, which
answered the same 20 (docs/benchmarks.md, "Charts asked as any question about data").

Why the fixed examples first for data, not the idioms: the idioms change with the question, so
they are read afresh for every question, where the fixed examples' prompt prefills ~45 tokens. Each
view keeps its prompt in a cache slot of its own (``GenerationOptions.cache_key``, its name), but the
idioms: they come after the data, inside the question's turn (``data-inline``), in the fixed
examples' slot (``cache_key`` "data"), so they read only themselves and the question (~250 tokens on
the DataFrame suite), where as worked examples of their own before the data (``data-similar``) they
read the data's description again too (~950 tokens on the questions that needed them: ~50 s on a
2-core AVX2 CPU). End to end on DataFrame rows 0-39 the default answered 38 either way (the
idioms after the data gained 2 questions and lost 1 where the third view decided) and each third
view after the data took 14-23 s less (docs/benchmarks.md, "The idioms after the data, as the third
view"). That slot is kept per set of
data (:meth:`View.cache_key_for`): a question about a frame asked about before reads only itself,
whatever was asked in between.

When the two first views disagree, the answer is never shown as sure, however many of the programs
written after them agree (:attr:`~.records.Session.confidence`); nor when they agree on an answer of
a shape the question seldom has, such as 0 or less for "how many" (:func:`.vote.doubt_about`).

Why not five sampled programs from the start, as before: on 2 CPU cores five programs cost about
2.5 times one, and on questions about data the sampled programs of the 1.5B default model are worse
than its greedy one, so a vote over them often chose an answer several bad samples shared. Why a
word problem stops at its two programs: a third view asked when they disagreed (the question worked
out in words, deciding between them) gained one answer in one collection of GSM8K test rows 300-399
and lost one in the next, for 5.6-5.8 s per question each time; of the 44 disagreements in the second,
the words backed the right program 4 times, the wrong one 2 times, and neither 12 times
(docs/benchmarks.md, "Two programs, then stop"). How the views, the temperature and the weight were
chosen: ``benchmarks/bench_views.py`` (docs/benchmarks.md, "Careful first").
"""

from __future__ import annotations

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
    is written; only when both failed is ``then`` asked. A plan without ``then`` stops at its two views."""

    first: View
    second: View
    then: View | None = None
    worked_stands: bool = False

    @property
    def views(self) -> tuple[View, View]:
        return self.first, self.second


SHOTS = View("shots", "worked examples, one greedy program", style=prompts.WORD_PROBLEM_STYLE)
ZERO = View("zero", "no worked examples, the code alone asked for, one greedy program", style=prompts.ZERO_STYLE)
DATA_FIXED = View("fixed", "four fixed pandas examples, the data before the question, one greedy program",
                  style=prompts.DATA_FIXED_STYLE, cache="data", slot_per_data=True)
DATA_ZERO = View("zero", "the data described, no worked examples, the code alone asked for, one greedy program",
                 style=prompts.DATA_ZERO_STYLE)
IDIOMS = View("idioms", "the fixed pandas examples, the data, then the idioms like the question's, one greedy "
              "program", style=prompts.IDIOMS_STYLE, cache="data", slot_per_data=True)

#: A word problem; a question about the user's data (``--use``); a chart of it.
WORD_PLAN = Plan(SHOTS, ZERO)
DATA_PLAN = Plan(DATA_FIXED, DATA_ZERO, worked_stands=True)
CHART_PLAN = Plan(DATA_FIXED, DATA_ZERO, then=IDIOMS, worked_stands=True)


def plan_for(question: str, variables: Mapping[str, Any] | None, style: str | None = None) -> Plan:
    """How ``question`` is asked: a word problem (no ``variables``), a question about data, or one that
    asks for a chart of it (:func:`~pal_jupyter.prompts.asks_for_chart`). A chosen prompt ``style`` (an
    adapter's own, or the caller's) replaces the first view's worked examples; the second view stays
    independent of it."""
    plan = WORD_PLAN if not variables else CHART_PLAN if prompts.asks_for_chart(question) else DATA_PLAN
    if style is None or style == plan.first.style:
        return plan
    return Plan(View(plan.first.name, f"prompt style {style}, one greedy program", style=style), plan.second)


def view_messages(view: View, question: str, variables: Mapping[str, Any] | None,
                  notebook_text: str | None) -> list[ChatMessage]:
    """The prompt of a view's program."""
    return prompts.pal_messages(question, variables, style=view.style, notebook_text=notebook_text)
