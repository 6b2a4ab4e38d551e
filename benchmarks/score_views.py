"""Score selection rules offline on the views ``collect_views.py`` collected: right, seconds, tokens, sure.

    python benchmarks/score_views.py FILE [FILE ...] [--rates bench-results/rates.json] [--rows 462-699]

A question's lines are merged across FILEs (views collected in several passes). Each program's
record is rebuilt and read with the product's own reading of answers, its off-target checks and its
vote (``ProgramAnswer.same_as``, as :func:`pal_jupyter.engine.vote.take_vote` groups answers, with
a weight per view; the answer a ``words`` view ends on votes like a program that printed it). Prints,
per suite, each view alone and each selection rule: right %, seconds and tokens per question, and
how often answers shown as sure were right.

Seconds: each view's wall seconds as collected; with ``--rates`` (from ``calibrate.py``, run with
nothing else on the machine) each view is priced by llama.cpp's own counts (prompt tokens prefilled,
tokens decoded per row) at those speeds, so that a view written while something else used the cores
costs what it would have cost alone. ``PAL_BENCH_SURE_AFTER_DISAGREEMENT=1`` counts an answer the
samples agree on after a disagreement as sure, as the product showed it before. Why the default
rules are the product's: docs/decisions.md.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from pal_jupyter import prompts
from pal_jupyter.engine.filters import named_values
from pal_jupyter.engine.vote import doubt_about, mark_off_target

from views_common import DATA_SUITES, REPAIRS, USES, Candidate, _words_program  # this folder's


def _candidates(record: dict[str, Any], frames: dict[str, Any]) -> dict[str, list[Candidate]]:
    question, expected = record["question"], record["expected"]
    variables = {name: frames[name] for name in USES[question]} if record["suite"] in DATA_SUITES else {}
    named = named_values(question, variables)
    views: dict[str, list[Candidate]] = {}
    for name, view in record["views"].items():
        if "programs" in view:
            views[name] = [Candidate(name, p, expected) for p in view["programs"]]
            mark_off_target([c.program for c in views[name]], question, named)
        elif "texts" in view:  # words: the answer they end on votes like a program that printed it
            views[name] = [Candidate(name, _words_program(text), expected) for text in view["texts"]]
    everything = [c.program for cs in views.values() for c in cs]
    mark_off_target(everything, question, named)  # "a number where others printed one" sees every view
    return views


#: Whether an answer the samples agree on (80 % of the vote) after the first views disagreed counts as
#: sure, as the product showed it until the change "Sure only when the first views agree"
#: (docs/decisions.md); set PAL_BENCH_SURE_AFTER_DISAGREEMENT=1 to score the rules that way.
SURE_AFTER_DISAGREEMENT = os.environ.get("PAL_BENCH_SURE_AFTER_DISAGREEMENT") == "1"

#: Questions where a rule wanted samples that were not collected (it then stopped at its two views).
MISSING_SAMPLES: set[int] = set()


def _first_good(pair: Sequence[Candidate]) -> Candidate | None:
    """What a rule shows when its views disagree and nothing more is asked: the first program that
    worked (an answer in words is no program: the product never shows it alone)."""
    return next((c for c in pair if c.program.good and not c.words), None)


Rule = Callable[[dict[str, list[Candidate]], dict[str, Any]], tuple[Any, bool, list[str]]]


def _vote(candidates: Sequence[Candidate], weights: dict[str, float] | None = None) -> tuple[Candidate | None, float, float]:
    """The winning candidate (its group's shortest program), its weight and the total weight; the
    product's own grouping of answers (``ProgramAnswer.same_as``), each view weighted."""
    groups: list[list[Any]] = []  # [answer, weight, candidates]
    total = 0.0
    for c in candidates:
        weight = (weights or {}).get(c.view, 1.0)
        total += weight
        a = c.program
        if a.program_answer is None or not a.good:
            continue
        group = next((g for g in groups if g[0].same_as(a.program_answer)), None)
        if group is None:
            group = [a.program_answer, 0.0, []]
            groups.append(group)
        group[1] += weight
        group[2].append(c)
    if not groups:
        return None, 0.0, total
    # Ties go to the shortest program, as in the product (the words are no program: they never break a tie).
    best = sorted(groups, key=lambda g: (-g[1], min((len(c.program.code or "") for c in g[2] if not c.words),
                                                    default=10**9)))[0]
    return min(best[2], key=lambda c: len(c.program.code or "")), best[1], total


def _single(view: str) -> Rule:
    def rule(views: dict[str, list[Candidate]], record: dict[str, Any]) -> tuple[Any, bool, list[str]]:
        winner, _, _ = _vote(views[view][:1])
        return winner, False, [view]
    return rule


def _careful(first: str, second: str, escalate: str | None, n: int = 5, greedy_weight: float = 1.0) -> Rule:
    """Two greedy views; when they agree, done and sure. Else (with ``escalate``) ``n`` samples of that
    view join a vote where each greedy view weighs ``greedy_weight``; sure only if the samples agree too."""
    def rule(views: dict[str, list[Candidate]], record: dict[str, Any]) -> tuple[Any, bool, list[str]]:
        pair = views[first][:1] + views[second][:1]
        winner, weight, _ = _vote(pair)
        if winner is not None and weight >= 2:
            return winner, True, [first, second]
        if escalate is None:
            fallback = _first_good(pair)
            return fallback, False, [first, second]
        weights = {first: greedy_weight, second: greedy_weight}
        return _with_samples(views, record, pair, [first, second], escalate, n, weights)
    return rule


def _with_samples(views: dict[str, list[Candidate]], record: dict[str, Any], greedy: list[Candidate], used: list[str],
                  escalate: str, n: int, weights: dict[str, float] | None = None) -> tuple[Any, bool, list[str]]:
    """When the ``greedy`` views left it open: ``n`` samples of ``escalate`` join their vote, sure only
    if 80 % of it agrees. They were collected only where the greedy views disagreed: where they are
    missing, the first greedy view that worked (and the question is counted in MISSING_SAMPLES)."""
    if escalate not in views:
        MISSING_SAMPLES.add(record["i"])
        return _first_good(greedy), False, used
    winner, weight, total = _vote(greedy + views[escalate][:n], weights)
    # As the product now shows it (Session.confidence): never sure once the first views disagreed.
    return winner, SURE_AFTER_DISAGREEMENT and weight >= 0.8 * total, [*used, f"{escalate}:{n}"]


def _three(first: str, second: str, third: str, escalate: str | None, n: int = 4) -> Rule:
    """Three greedy views, all paid for: sure only when all three agree; else ``n`` samples of
    ``escalate`` join the vote (sure only if 80 % of it agrees), or without ``escalate`` two of three win."""
    def rule(views: dict[str, list[Candidate]], record: dict[str, Any]) -> tuple[Any, bool, list[str]]:
        greedy = views[first][:1] + views[second][:1] + views[third][:1]
        winner, weight, _ = _vote(greedy)
        if winner is not None and weight >= 3:
            return winner, True, [first, second, third]
        if escalate is None:  # two of three win; else the first program that worked
            return winner if weight >= 2 else _first_good(greedy), False, [first, second, third]
        return _with_samples(views, record, greedy, [first, second, third], escalate, n)
    return rule


def _tiebreak(first: str, second: str, judge: str, escalate: str | None, n: int = 4) -> Rule:
    """Two greedy views; when they agree, done and sure. Else ``judge`` is asked: the answer it
    agrees with wins (not sure); when it agrees with neither, ``n`` samples of ``escalate`` join the vote
    (without ``escalate``: the first that worked stands). ``_tiebreak("shots", "terse", "words", None)``
    was the product's plan for word problems until the words were measured to pay nothing
    (docs/decisions.md, "Two programs, then stop (word problems)"); the judge is not asked when both views failed
    (a repair follows, unpriced)."""
    def rule(views: dict[str, list[Candidate]], record: dict[str, Any]) -> tuple[Any, bool, list[str]]:
        pair = views[first][:1] + views[second][:1]
        winner, weight, _ = _vote(pair)
        if winner is not None and weight >= 2:
            return winner, True, [first, second]
        if escalate is None and not any(c.program.good for c in pair):
            return None, False, [first, second]
        said = views[judge][0].program.program_answer
        backed = next((c for c in pair if c.program.good and said is not None
                       and c.program.program_answer.same_as(said)), None)
        if backed is not None:
            return backed, False, [first, second, judge]
        if escalate is None:
            return _first_good(pair), False, [first, second, judge]
        return _with_samples(views, record, pair, [first, second, judge], escalate, n)
    return rule


def _then_view(first: str, second: str, third: str, escalate: str, n: int = 4) -> Rule:
    """Two greedy views; when they agree, done and sure. Else ``third`` and ``n`` samples of
    ``escalate`` (its prompt) join the vote, sure only if 80 % of it agrees."""
    def rule(views: dict[str, list[Candidate]], record: dict[str, Any]) -> tuple[Any, bool, list[str]]:
        pair = views[first][:1] + views[second][:1]
        winner, weight, _ = _vote(pair)
        if winner is not None and weight >= 2:
            return winner, True, [first, second]
        if n == 0:  # the third view alone decides: 2 of 3 win, never sure (the first two disagreed)
            winner, _, _ = _vote(pair + views[third][:1])
            return winner or _first_good(pair), False, [first, second, third]
        return _with_samples(views, record, pair + views[third][:1], [first, second, third], escalate, n)
    return rule


def _first_stands(first: str, second: str, third: str | None, escalate: str | None = None, n: int = 4,
                  either: bool = False) -> Rule:
    """Two greedy views; when they agree, done and sure. When they do not and ``first`` worked (with
    ``either``: the first of the two that worked), its answer stands (not sure) and nothing more is
    asked; else ``third`` (when given) joins the vote, and ``n`` samples of ``escalate`` (when given).
    ``_first_stands("fixed", "terse", "shots", either=True)`` is the product's plan for questions about
    data (``Plan.worked_stands``, no samples)."""
    def rule(views: dict[str, list[Candidate]], record: dict[str, Any]) -> tuple[Any, bool, list[str]]:
        pair = views[first][:1] + views[second][:1]
        winner, weight, _ = _vote(pair)
        if winner is not None and weight >= 2:
            return winner, True, [first, second]
        standing = _first_good(pair) if either else pair[0] if pair[0].program.good else None
        if standing is not None:
            return standing, False, [first, second]
        greedy, used = (pair + views[third][:1], [first, second, third]) if third else (pair, [first, second])
        if escalate is None:
            winner, _, _ = _vote(greedy)
            return winner or _first_good(greedy), False, used
        return _with_samples(views, record, greedy, used, escalate, n)
    return rule


def _confirmed(first: str, second: str, check: str) -> Rule:
    """Two greedy views, the first that worked stands (as ``_careful`` without samples); an answer they
    agree on is sure only when ``check`` (collected where they agree: ``words?``) ends on it too."""
    pair_rule = _careful(first, second, None)

    def rule(views: dict[str, list[Candidate]], record: dict[str, Any]) -> tuple[Any, bool, list[str]]:
        winner, sure, used = pair_rule(views, record)
        if not sure:
            return winner, False, used
        if check not in views:
            MISSING_SAMPLES.add(record["i"])
            return winner, False, used
        checked, _, _ = _vote(views[check][:1])
        return winner, checked is not None and checked.program.program_answer.same_as(winner.program.program_answer), \
            [*used, check]
    return rule


def _words_decide(first: str, second: str, words: str) -> Rule:
    """Two greedy views; when both worked, ``words`` is asked too (the product's word problems,
    ``Plan.ask_words``): an agreement is sure only when the words end on it, and a disagreement goes to
    the view the words end on (else the first). When one failed, the other stands, not sure."""
    def rule(views: dict[str, list[Candidate]], record: dict[str, Any]) -> tuple[Any, bool, list[str]]:
        pair = views[first][:1] + views[second][:1]
        if not all(c.program.good and c.program.program_answer is not None for c in pair):
            return _first_good(pair), False, [first, second]
        if words not in views:
            MISSING_SAMPLES.add(record["i"])
            return pair[0], False, [first, second]
        said, _, _ = _vote(views[words][:1])
        backed = [c for c in pair if said is not None and c.program.program_answer.same_as(said.program.program_answer)]
        agreed = pair[0].program.program_answer.same_as(pair[1].program.program_answer)
        return (backed or pair)[0], agreed and bool(backed), [first, second, words]
    return rule


def _then_each(first: str, second: str, later: Sequence[str]) -> Rule:
    """Two greedy views; when they agree, done and sure; when they do not, the first of them that
    worked stands (not sure). When neither worked, each of the ``later`` views in turn, until one
    works (its answer stands, not sure). ``fix``, the repair of the first view's program, is collected
    only where that program failed: where it is missing the first view worked, and the rule never
    reaches it."""
    def rule(views: dict[str, list[Candidate]], record: dict[str, Any]) -> tuple[Any, bool, list[str]]:
        pair = views[first][:1] + views[second][:1]
        winner, weight, _ = _vote(pair)
        if winner is not None and weight >= 2:
            return winner, True, [first, second]
        used = [first, second]
        standing = _first_good(pair)
        for view in later:
            if standing is not None:
                break
            if view not in views:
                MISSING_SAMPLES.add(record["i"])
                break
            used.append(view)
            standing = _first_good(views[view][:1])
        return standing, False, used
    return rule


def _by_kind(charts: Rule, others: Rule) -> Rule:
    """One rule for questions that ask for a chart, another for the rest (as the product plans them)."""
    def rule(views: dict[str, list[Candidate]], record: dict[str, Any]) -> tuple[Any, bool, list[str]]:
        return (charts if prompts.asks_for_chart(record["question"]) else others)(views, record)
    return rule


#: Each view alone, as the score names it.
SINGLES = {
    "plain": "plain (baseline: greedy zero-shot)",
    "zero": "zero (code only)",
    "terse": "terse (zero, no comments asked)",
    "shots": "shots (code only)",
    "fixed": "fixed (data first, fixed examples, code only)",
    "inline": "inline (fixed examples, data, idioms, code only)",
    "words": "words (the answer the words end on)",
    "reasoned": "reasoned (words, then its program)",
}


#: Two greedy views, and the view whose samples join them when they disagree.
PAIRS = (("plain", "shots", "t04"),
         ("shots", "zero", "t04"), ("shots", "plain", "t04"), ("shots", "terse", "t04"), ("shots", "reasoned", "t04"),
         ("zero", "reasoned", "t04"), ("shots", "words", "t04"), ("zero", "words", "t04"), ("reasoned", "shots", "t04"),
         ("reasoned", "words", "t04"), ("fixed", "zero", "t04f"), ("fixed", "zero", "t04"), ("shots", "fixed", "t04"),
         ("inline", "zero", "t04n"), ("fixed", "zero", "t04n"), ("fixed", "terse", "t04n"), ("inline", "terse", "t04n"))


def _rules(collected: set[str], conditional: set[str] | frozenset[str] = frozenset()) -> dict[str, Rule]:
    """The rules the ``collected`` views can price (samples count as collected where any question has them;
    a view ``conditional`` on the others, collected only where they agree or disagree, is no rule alone)."""
    rules: dict[str, Rule] = {label: _single(view) for view, label in SINGLES.items()
                              if view in collected and view not in conditional}
    for first, second, samples in PAIRS:
        if not {first, second} <= collected - conditional:
            continue
        rules[f"{first}+{second}, stop"] = _careful(first, second, None)
        if samples in collected:
            for weight in (1.0, 2.0):
                rules[f"{first}+{second}, else +4 x {samples} (greedy x{weight:g})"] = _careful(
                    first, second, samples, 4, weight)
            rules[f"{first}+{second}, else +2 x {samples}"] = _careful(first, second, samples, 2)
    if {"plain", "shots", "words"} <= collected:
        # the product's plan for word problems (views.WORD_PLAN: its zero view asks plain's prompt, code only)
        rules["plain+shots, sure only if the words agree"] = _confirmed("plain", "shots", "words")
        rules["plain+shots, the words check both (the default)"] = _words_decide("plain", "shots", "words")
    if {"shots", "zero", "words", "t04"} <= collected:
        rules["shots+zero, else words decide, else +4 x t04"] = _tiebreak("shots", "zero", "words", "t04")
        rules["shots+words+zero all agree, else +4 x t04"] = _three("shots", "words", "zero", "t04")
    if {"fixed", "zero", "shots", "t04"} <= collected:
        rules["fixed+zero, else shots decides, else +4 x t04"] = _tiebreak("fixed", "zero", "shots", "t04")
        rules["fixed+zero, else shots + 4 x t04 join"] = _then_view("fixed", "zero", "shots", "t04")
        rules["fixed+zero, else shots joins"] = _then_view("fixed", "zero", "shots", "t04", 0)
        rules["fixed+zero, else shots + 2 x t04 join"] = _then_view("fixed", "zero", "shots", "t04", 2)
        rules["charts: shots+zero, else +4 x t04; others: fixed+zero, else shots + 4 x t04 join"] = _by_kind(
            _careful("shots", "zero", "t04", 4), _then_view("fixed", "zero", "shots", "t04"))
    if {"fixed", "zero", "shots", "t04f"} <= collected:
        rules["fixed+zero, else shots + 4 x t04f join"] = _then_view("fixed", "zero", "shots", "t04f")
    for second in ("zero", "terse"):  # the chart plan before (the idioms first, then terse), with either second
        if {"inline", second, "t04n"} <= collected:
            rules[f"inline+{second}, inline stands if it worked, else +4 x t04n"] = _first_stands(
                "inline", second, None, "t04n")
            rules[f"inline+{second}, the first that worked stands, else +4 x t04n"] = _first_stands(
                "inline", second, None, "t04n", either=True)
            rules[f"inline+{second}, the first that worked stands, else +2 x t04n"] = _first_stands(
                "inline", second, None, "t04n", n=2, either=True)
    if {"fixed", "zero", "inline", "t04n"} <= collected:
        charts = _careful("inline", "zero", "t04n", 4)
        rules["fixed+zero, else inline + 4 x t04n join"] = _then_view("fixed", "zero", "inline", "t04n")
        rules["fixed+zero, else inline + 2 x t04n join"] = _then_view("fixed", "zero", "inline", "t04n", 2)
        rules["fixed+zero, else inline decides, else +4 x t04n"] = _tiebreak("fixed", "zero", "inline", "t04n")
        if {"shots", "t04"} <= collected:
            rules["charts: inline+zero, else +4 x t04n; others: fixed+zero, else shots + 4 x t04 join"] = _by_kind(
                charts, _then_view("fixed", "zero", "shots", "t04"))
        rules["charts: inline+zero, else +4 x t04n; others: fixed+zero, else inline + 4 x t04n join"] = _by_kind(
            charts, _then_view("fixed", "zero", "inline", "t04n"))
        if {"shots", "t04"} <= collected:
            rules["charts: inline+zero, else +4 x t04n; others: fixed+zero, else shots joins"] = _by_kind(
                charts, _then_view("fixed", "zero", "shots", "t04", 0))
        if "shots" in collected:
            rules["charts: inline+zero, inline stands if it worked, else +4 x t04n; others: the same"] = _by_kind(
                _first_stands("inline", "zero", None, "t04n"), _first_stands("fixed", "zero", "shots"))
        rules["charts: inline+zero, else +4 x t04n; others: fixed+zero, the first that worked stands, else "
              "inline"] = _by_kind(charts, _first_stands("fixed", "zero", "inline", either=True))
        rules["charts: inline+zero, inline stands if it worked, else +4 x t04n; others: fixed+zero, fixed stands "
              "if it worked, else inline joins"] = _by_kind(_first_stands("inline", "zero", None, "t04n"),
                                                            _first_stands("fixed", "zero", "inline"))
        if "t04f" in collected:
            for n in (4, 2):
                rules[f"charts: inline+zero, else +4 x t04n; others: fixed+zero, else +{n} x t04f"] = _by_kind(
                    charts, _careful("fixed", "zero", "t04f", n))
    if {"fixed", "terse", "shots"} <= collected:  # the product's plan for data questions that ask for no chart
        rules["fixed+terse, the first that worked stands, else shots"] = _first_stands(
            "fixed", "terse", "shots", either=True)
    if {"fixed", "terse", "inline"} <= collected:
        # the product's plan for every question about data, charts included, until the idioms were kept for charts
        rules["fixed+terse, the first that worked stands, else inline (the idioms for all, before)"] = _first_stands(
            "fixed", "terse", "inline", either=True)
    for second in ("zero", "terse"):  # the product's rules, with either second view
        if not {"fixed", second, "inline", "t04n"} <= collected:
            continue
        charts = _careful("inline", second, "t04n", 4)
        head = f"charts: inline+{second}, else +4 x t04n; others: fixed+{second}"
        rules[f"{head}, stop"] = _by_kind(charts, _careful("fixed", second, None))
        rules[f"{head}, fixed stands if it worked, else inline joins"] = _by_kind(
            charts, _first_stands("fixed", second, "inline"))
        # the product's plans until charts were asked as any question about data
        rules[f"{head}, the first that worked stands, else inline"
              f"{' (the default before)' if second == 'terse' else ''}"] = _by_kind(
            charts, _first_stands("fixed", second, "inline", either=True))
        if "shots" in collected:
            rules[f"{head}, fixed stands if it worked, else shots joins"] = _by_kind(
                charts, _first_stands("fixed", second, "shots"))
            rules[f"{head}, the first that worked stands, else shots"] = _by_kind(
                charts, _first_stands("fixed", second, "shots", either=True))
    if {"fixed", "terse", "fix"} <= collected:  # the first view's repair before (or instead of) a third view
        rules["fixed+terse, the first that worked stands, else fixed's repair"] = _then_each("fixed", "terse", ["fix"])
        for third in ("shots", "inline"):
            if third in collected:
                rules[f"fixed+terse, the first that worked stands, else fixed's repair, else {third}"] = _then_each(
                    "fixed", "terse", ["fix", third])
                rules[f"fixed+terse, the first that worked stands, else {third}, else fixed's repair"] = _then_each(
                    "fixed", "terse", [third, "fix"])
    if {"fixed", "terse", "inline", "fix"} <= collected:  # views.plan_for: CHART_PLAN, DATA_PLAN
        rules["charts: fixed+terse, the first that worked stands, else inline, else fixed's repair; others: the "
              "same without inline (the default)"] = _by_kind(_then_each("fixed", "terse", ["inline", "fix"]),
                                                               _then_each("fixed", "terse", ["fix"]))
    if {"fixed", "terse", "fixidioms"} <= collected:  # one request where the idioms' program and a repair were two
        rules["fixed+terse, the first that worked stands, else fixed's repair told the idioms"] = _then_each(
            "fixed", "terse", ["fixidioms"])
    if {"shots", "terse", "words"} <= collected:
        rules["shots+terse, else words decide"] = _tiebreak("shots", "terse", "words", None)
        rules["shots+words, else terse decides"] = _tiebreak("shots", "words", "terse", None)
        rules["shots+words+terse, all asked, sure when all three agree"] = _three("shots", "words", "terse", None)
    if {"shots", "terse", "plain"} <= collected:
        rules["shots+terse, else plain decides"] = _tiebreak("shots", "terse", "plain", None)
    if {"shots", "words", "plain", "t04"} <= collected:
        rules["shots+words, else plain decides, else +4 x t04"] = _tiebreak("shots", "words", "plain", "t04")
        rules["shots+words, else plain decides, else +2 x t04"] = _tiebreak("shots", "words", "plain", "t04", 2)
    if {"shots", "words", "reasoned", "t04"} <= collected:
        rules["shots+words, else reasoned decides, else +4 x t04"] = _tiebreak("shots", "words", "reasoned", "t04")
    return rules


def _row_range(text: str) -> range:
    """'462-699' -> the rows 462 to 699, both included (argparse's type for --rows)."""
    first, _, last = text.partition("-")
    try:
        return range(int(first), int(last or first) + 1)
    except ValueError:
        raise argparse.ArgumentTypeError(f"rows are FIRST-LAST, e.g. 462-699, not {text!r}") from None


def score(paths: Sequence[str], rates: dict[str, Any] | None = None, rows: range | None = None) -> None:
    from pal_jupyter.evaluation.dataframes import build_frames

    frames = build_frames()
    merged: dict[tuple[str, int], dict[str, Any]] = {}  # one record per question: views collected in several passes
    for path in paths:
        for line in open(path):
            record = json.loads(line)
            key = (record["suite"], record["i"])
            if key in merged:
                merged[key]["views"].update(record["views"])
            else:
                merged[key] = record
    records = [merged[key] for key in sorted(merged) if rows is None or key[1] in rows]
    for suite in ("one-liners", "gsm8k", *DATA_SUITES):
        chosen = [r for r in records if r["suite"] == suite]
        if not chosen:
            continue
        rows = sorted(r["i"] for r in chosen)
        print(f"\n{suite}: {len(chosen)} questions (rows {rows[0]}-{rows[-1]})")
        print(f"{'rule':<58} {'right':>9} {'s mean':>7} {'median':>7} {'p90':>6} {'tokens':>7} {'sure':>5} {'sure right':>10}")
        candidates = [(r, _candidates(r, frames)) for r in chosen]
        every = set.intersection(*(set(r["views"]) for r in chosen))
        # views collected only where a rule can want them (samples, a repair, words?): collected if any
        # question has them
        conditional = {v for r in chosen for v in r["views"] if v in SAMPLED_FROM or v in REPAIRS or v == "words"}
        for name, rule in _rules(every | conditional, conditional - every).items():
            right, seconds, tokens, sure, sure_right = 0, [], [], 0, 0
            MISSING_SAMPLES.clear()
            for record, views in candidates:
                winner, is_sure, used = rule(views, record)
                ok = winner is not None and winner.right
                # the product's doubt without a gold answer: an answer of a shape the question seldom has
                is_sure = is_sure and winner is not None and doubt_about(
                    winner.program.program_answer, record["question"], about_data=suite in DATA_SUITES) is None
                right += ok
                seconds.append(sum(_seconds(record, v, used, rates) for v in _priced(used))
                               - _written_together(record, used, rates))
                tokens.append(sum(sum(_rows_of(record["views"], v)["tokens"]) for v in _priced(used)))
                sure += is_sure
                sure_right += is_sure and ok
            n = len(candidates)
            p90 = sorted(seconds)[max(0, int(0.9 * n) - 1)]
            print(f"{name:<58} {right:>3}/{n:<3} {100 * right / n:3.0f}% {statistics.mean(seconds):6.1f} "
                  f"{statistics.median(seconds):7.1f} {p90:6.1f} {statistics.mean(tokens):7.0f} {sure:>5} "
                  f"{sure_right:>4}/{sure:<4}")
            if MISSING_SAMPLES:
                print(f"    ({len(MISSING_SAMPLES)} question(s) wanted samples that were not collected: stopped at two views)")


def _seconds(record: dict[str, Any], view: str, used: list[str], rates: dict[str, Any] | None = None) -> float:
    """What ``view`` costs a rule: its wall seconds, or with ``rates`` its counts at those speeds.
    ``zero`` was collected right after ``plain``, whose prompt it shares (the prompt cache held it):
    asked alone it would prefill that prompt itself, so it is priced with ``plain``'s prefill unless
    the rule pays for ``plain`` too. Samples are priced without a prefill: the product asks them right
    after the view whose prompt they share (its cache holds it), as ``collect`` does unless a rerun
    collects them alone."""
    views = record["views"]
    if rates is None:
        if view == "zero" and "plain" not in used:
            return max(views["zero"]["seconds"], views["plain"]["seconds"])
        return _rows_of(views, view)["seconds"] + _unpaid_prompt_seconds(views, view, used, rates)
    rows = _rows_of(views, view)
    if view.partition(":")[0] in SAMPLED_FROM:  # priced with their view's prompt (_unpaid_prompt_seconds)
        rows = {**rows, "timings": [{**t, "prompt_n": 0} for t in rows.get("timings") or []]}
    seconds = _modelled_seconds(rows, rates) + _unpaid_prompt_seconds(views, view, used, rates)
    if view == "zero" and "plain" not in used and views["zero"].get("timings") and views["plain"].get("timings"):
        reused = (views["zero"]["timings"][0]["cache_n"] or 0) - (views["plain"]["timings"][0]["cache_n"] or 0)
        seconds += max(0, reused) / rates["prefill_tok_s"]
    return seconds


def _written_together(record: dict[str, Any], used: list[str], rates: dict[str, Any] | None) -> float:
    """What writing a rule's first two views at once saves (the product's careful method asks them in
    one batch, ``generate_each``): while both rows are being written a step decodes two rows, ``step_s[2]``
    where one after the other took ``2 x step_s[1]``. Only with ``rates``: wall seconds collected one
    view at a time cannot be merged. Samples, the words and a program after them are never asked
    together with another view."""
    pair = used[:2]
    if rates is None or len(pair) < 2 or any(v.partition(":")[0] in SAMPLED_FROM or v in ("words", "reasoned")
                                             for v in pair):
        return 0.0
    step = rates["step_s"]
    shorter = min(sum(_rows_of(record["views"], v)["tokens"]) for v in pair)
    return shorter * (2 * step["1"] - step["2"])


#: The view whose prompt each set of samples is drawn from: collected right after it, the samples
#: found that prompt in llama.cpp's cache, and so did the product when it asked that view first.
SAMPLED_FROM = {"t07": "shots", "t04": "shots", "t04f": "fixed", "t04n": "inline"}


def _unpaid_prompt_seconds(views: dict[str, Any], view: str, used: list[str], rates: dict[str, Any] | None) -> float:
    """Samples drawn from the prompt of a view the rule did not ask (``fixed+zero, else +2 x t04``)
    pay for reading that prompt: what it cost its own view (``prompt_n`` at the calibrated speed,
    or llama.cpp's own prompt milliseconds without ``rates``)."""
    base = SAMPLED_FROM.get(view.partition(":")[0])
    if base is None or base in used or base not in views:
        return 0.0
    timings = views[base].get("timings") or []
    if not timings:
        return 0.0
    if rates is None:
        return max(t["prompt_ms"] or 0 for t in timings) / 1000
    return max(t["prompt_n"] or 0 for t in timings) / rates["prefill_tok_s"]


def _rows_of(views: dict[str, Any], used: str) -> dict[str, Any]:
    """The view a rule used: ``"t04:2"`` is the first 2 rows of ``t04``, priced as if only they were
    asked for (wall seconds cannot be split by row: they count whole unless priced with ``--rates``)."""
    name, _, rows = used.partition(":")
    view = views[name]
    if not rows or int(rows) >= len(view["tokens"]):
        return view
    n = int(rows)
    return {**view, "tokens": view["tokens"][:n], "timings": (view.get("timings") or [])[:n]}


def _priced(used: list[str]) -> list[str]:
    """The views a rule paid for (a program written after the words paid for the words too)."""
    return list(dict.fromkeys(used + (["words"] if "reasoned" in used else [])))


def _modelled_seconds(view: dict[str, Any], rates: dict[str, Any]) -> float:
    """What a view costs at the calibrated speeds: its prompt tokens prefilled, then its rows decoded
    together (a batch of k rows takes step_s[k] a step; a row that ends leaves the batch)."""
    step = {int(k): v for k, v in rates["step_s"].items()}
    step.setdefault(3, (step[2] + step[4]) / 2)
    timings = view.get("timings") or []
    if not timings:
        return view["seconds"]
    seconds = max(t["prompt_n"] or 0 for t in timings) / rates["prefill_tok_s"]
    lengths = sorted(t["predicted_n"] or 0 for t in timings)
    done = 0
    for i, length in enumerate(lengths):
        active = len(lengths) - i
        seconds += (length - done) * step[min(active, max(step))]
        done = length
    return seconds


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("files", nargs="+")
    parser.add_argument("--rates", help="price views by their token counts at these speeds (from calibrate)")
    parser.add_argument("--rows", type=_row_range, help="only these rows, FIRST-LAST (a development or report part)")
    args = parser.parse_args()
    score(args.files, json.loads(Path(args.rates).read_text()) if args.rates else None, args.rows)


if __name__ == "__main__":
    main()
