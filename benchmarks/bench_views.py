"""Which programs to ask for, chosen offline: collect every view of a question once, score rules later.

    python benchmarks/bench_views.py collect --suite dataframes [--out FILE]
    python benchmarks/bench_views.py collect --suite charts --views plain,zero,shots,t04
    python benchmarks/bench_views.py collect --suite gsm8k --offset 300 --limit 40 [--out FILE]
    python benchmarks/bench_views.py collect --suite one-liners --views plain,shots,terse
    python benchmarks/bench_views.py score FILE [FILE ...] [--rates bench-results/rates.json]
    python benchmarks/bench_views.py calibrate            # this CPU's prefill and decode speeds
    python benchmarks/bench_views.py repairs FILE [FILE ...] [--variants asked,longer]   # ways to ask for a repair
    python benchmarks/bench_views.py turns [--suite one-liners] [--vote]   # the product end to end beside the baseline

``collect`` asks the default model (llama.cpp, the product's backend and prompts) for every
*view* of each question, runs each program in a real child kernel (the DataFrame suite's frames
copied in, as ``%%pal --use`` does) and appends one JSON line per question to FILE (a rerun
resumes). The views:

* ``plain``: the plainest baseline, one greedy zero-shot program (``chat-0shot`` / ``data-0shot``, the
  data before the question), the reply as the model writes it (words allowed before the code);
* ``zero``: the same prompt, the reply begun with the code fence (``code_only``): code only;
* ``terse`` (data questions): ``zero`` asking for the code without comments (``data-0terse``),
  asked on the zero view's cache key: collect it in a pass of its own (``--views terse``), so that
  its slot holds its own previous prompt, as the product's would;
* ``shots``: one greedy program from the worked-examples prompt (``chat-2shot`` / ``data-similar``),
  code only;
* ``fixed`` (data questions): one greedy program after the three fixed worked examples, the user's data
  before the question (``data-fixed``): the whole prompt but the question is cached, code only;
* ``inline`` (data questions): one greedy program after the three fixed worked examples, the user's
  data, then the two idioms most like the question in the question's own turn (``data-inline``);
  asked on the ``fixed`` view's cache key, after it, as the
  product does: it prefills only the idioms and the question;
* ``fix`` (data questions): where the ``fixed`` program failed (checked alone, as the product checks
  a view), the product's repair of it, greedily, in its conversation and slot right after it (the
  feedback, an explanation, the corrected program): collect it with ``fixed`` in a pass of its own
  (``--views fixed,fix``);
* ``words`` (word problems): the step-by-step answer in words after three worked examples, as the
  product asks it (:mod:`pal_jupyter.prompts.words`); ``reasoned``: the program written after it;
* ``t07``: 5 programs sampled at temperature 0.7 from the worked-examples prompt, as the product
  drew them until now; ``t04``: 4 programs sampled at 0.4, code only, collected only where the
  greedy views (the words included) disagree (no rule asks for them elsewhere; ``t04!`` collects
  them always); ``t04f``: the same from the ``fixed`` prompt, ``t04n`` from the ``inline`` prompt.

The views whose prompt begins with fixed worked examples (``shots``, ``fixed``, ``inline``) start a new
slot from the copy of that start kept on disk, as the product does in any session after the first
(``GenerationOptions.shared_messages``): remove ``~/.cache/pal-jupyter/prompts`` first to collect
what a machine's first session reads.

Each view records its programs (code, what they printed, errors), its tokens and its seconds, so
that ``score`` can price a rule by the views it asks for. ``score`` rebuilds each program's record
and applies the product's own reading of answers, its off-target checks and its vote
(``ProgramAnswer.same_as``, as :func:`pal_jupyter.engine.vote.take_vote` groups answers, with a weight per
view), then prints, per suite, each view alone and each
selection rule: right %, seconds and tokens per question, and how often answers shown as sure were
right. The answer a ``words`` view ends on votes like a program that printed it.

Seconds: each view's wall seconds as collected; with ``--rates`` (from ``calibrate``, run with
nothing else on the machine) each view is priced instead by llama.cpp's own counts (prompt tokens
prefilled, tokens decoded per row, recorded per view) at those speeds, so that a view written while
something else used the cores costs what it would have cost alone. ``turns`` then runs the
product's default end to end (``solve()``) beside the baseline, as a user waits for it.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import re
import statistics
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from pal_jupyter.backends import GenerationOptions, generate_candidates, load_model
from pal_jupyter import prompts
from pal_jupyter.engine import reasoning, views as product_views
from pal_jupyter.engine.grading import expected_of, is_correct, question_of
from pal_jupyter.engine.extraction import extract_code
from pal_jupyter.engine.filters import named_values
from pal_jupyter.engine.records import Program
from pal_jupyter.engine.vote import doubt_about, mark_off_target, read_answer
from pal_jupyter.errors import NoCodeError
from pal_jupyter.evaluation.dataframes import SUITES, suite_rows
from pal_jupyter.evaluation.runner import read_rows
from pal_jupyter.kernels import ExecutionResult, ExecutorLimits, KernelPool
from pal_jupyter.kernels.charts import chart_from_json
from pal_jupyter.kernels.results import ErrorInfo, StopReason
from pal_jupyter.kernels.tracebacks import library_path

GSM8K = Path(__file__).resolve().parents[2] / "shared" / "data" / "gsm8k" / "test.jsonl"
USES = {q.question: q.uses for questions in SUITES.values() for q in questions}  # the frames a question is handed
DATA_SUITES = tuple(SUITES)
MAX_TOKENS = 512  # as the product asked until now: the collected lengths say what a cap would cost


# ------------------------------------------------------------------------------------------ collect

def _program(reply: str, pool: KernelPool, variables: dict[str, Any]) -> dict[str, Any]:
    """Run the program in ``reply`` and keep what the scoring needs (images reduced to their mime)."""
    try:
        code = extract_code(reply).code
    except NoCodeError:
        return {"reply": reply, "code": None}
    result = pool.run(code, variables)
    outputs = [{"output_type": b.get("output_type"), "data": {k: ("" if k.startswith("image/") else v)
                                                                for k, v in (b.get("data") or {}).items()}}
               for b in result.outputs]
    error = None if result.error is None else [result.error.ename, result.error.evalue[:300]]
    charts = None if result.charts is None else [dataclasses.asdict(chart) for chart in result.charts]
    return {"reply": reply, "code": code, "reason": result.reason.value, "stdout": result.stdout[-3000:],
            "outputs": outputs, "error": error, "run_s": round(result.duration_s, 3), "charts": charts}


def _ask(backend: Any, messages: list[dict[str, str]], n: int, options: GenerationOptions,
         pool: KernelPool | None, variables: dict[str, Any], key: str | None = None) -> dict[str, Any]:
    """Ask one view; ``key``: the prompt cache it keeps to, as the product's view of that name does
    (so that views collected side by side cost what they cost in the product's order)."""
    options = dataclasses.replace(options, cache_key=key)
    start, cpu = time.perf_counter(), time.process_time()
    replies = generate_candidates(backend, messages, n, options)
    seconds = time.perf_counter() - start
    # llama.cpp's threads run in this process: CPU seconds over wall seconds near its thread count
    # says nothing else competed for the cores while this view was written.
    view: dict[str, Any] = {"seconds": round(seconds, 2), "cpu_s": round(time.process_time() - cpu, 2),
                            "tokens": [r.completion_tokens for r in replies],
                            # llama.cpp's own counts per row: prompt tokens prefilled (prompt_n) and
                            # reused from its cache (cache_n), tokens decoded, and its milliseconds
                            "timings": [{k: t.get(k) for k in ("prompt_n", "cache_n", "prompt_ms", "predicted_n",
                                                               "predicted_ms")} for t in backend.last_timings],
                            "prompt_tokens": replies[0].prompt_tokens}
    if pool is not None:
        view["programs"] = [_program(r.text, pool, variables) for r in replies]
    else:
        view["texts"] = [r.text for r in replies]
    return view


def _repair(backend: Any, pool: KernelPool, view: dict[str, Any], messages: list[dict[str, str]], question: str,
            variables: dict[str, Any], key: str, idioms: bool = False) -> dict[str, Any] | None:
    """The product's repair of ``view``'s program when it failed (checked alone, as the careful method
    checks a view): its conversation continued with what running it gave, in its own slot, right after
    it (llama.cpp's cache holds the prompt and the reply: only the feedback is read), written greedily
    with the explanation first, as the product asks it. None when the program worked. ``idioms``: the
    pandas idioms most like the question (the third view's) are told before the request (``fixidioms``:
    one request in place of the idioms' program and then a repair)."""
    program = view["programs"][0]
    failed = Program(index=1, kind="initial", messages=messages, code=program.get("code"))
    if failed.code is not None:  # run again for the whole traceback (the record keeps only its last line)
        failed.execution = pool.run(failed.code, variables)
        failed.program_answer = read_answer(failed.execution)
    mark_off_target([failed], question, named_values(question, variables))
    if failed.execution is not None and failed.good:
        return None
    feedback = (prompts.execution_feedback(failed.execution, failed.correct, failed.code, off_target=failed.off_target)
                if failed.execution is not None else "No Python code block was found in the reply.")
    request = prompts.REPAIR_REQUEST
    if idioms:
        request = f"{prompts.prompt_style(prompts.IDIOMS_STYLE).inline_examples(question)}\n\n{request}"
    asked = prompts.follow_up_messages(messages, program["reply"], feedback, request=request)
    fix = _ask(backend, asked, 1, GenerationOptions(max_new_tokens=MAX_TOKENS, temperature=0.0), pool, variables,
               key=key)
    fix["feedback"] = feedback
    return fix


VIEWS = ("plain", "zero", "terse", "shots", "fixed", "inline", "fix", "fixidioms", "words", "reasoned", "t07", "t04",
         "t04f", "t04n")


def _shared(options: GenerationOptions, style: str) -> GenerationOptions:
    """``options`` for a view in ``style`` as the product asks it: its shared start (system message,
    fixed examples) restored from the copy kept on disk when a session before kept one, as a returning
    user's session does (``GenerationOptions.shared_messages``)."""
    return dataclasses.replace(options, shared_messages=prompts.shared_messages(style))


def collect_question(backend: Any, pool: KernelPool, row: dict[str, Any], seed: int,
                     wanted: Sequence[str] = VIEWS) -> dict[str, Any]:
    question, variables = question_of(row), row.get("variables") or {}
    data = bool(variables)
    zero_style, shots_style = ("data-0shot", "data-similar") if data else ("chat-0shot", prompts.WORD_PROBLEM_STYLE)
    zero = prompts.pal_messages(question, variables, style=zero_style)
    shots = prompts.pal_messages(question, variables, style=shots_style)
    # each prompt on the cache key of the product's view that asks it
    zero_key = product_views.DATA_ZERO.name
    shots_key = "idioms" if data else product_views.SHOTS.name  # the slot the idioms as worked examples had
    fixed_key = product_views.DATA_FIXED.cache_key_for(variables)  # a slot per set of data, as the product
    greedy = GenerationOptions(max_new_tokens=MAX_TOKENS, temperature=0.0)
    code = GenerationOptions(max_new_tokens=MAX_TOKENS, temperature=0.0, code_only=True)
    views = {}
    if "plain" in wanted:
        views["plain"] = _ask(backend, zero, 1, greedy, pool, variables, key=zero_key)
    if "zero" in wanted:
        views["zero"] = _ask(backend, zero, 1, code, pool, variables, key=zero_key)
    if "terse" in wanted:  # in the zero view's slot: collect it in a pass of its own
        terse = prompts.pal_messages(question, variables, style=prompts.DATA_ZERO_STYLE if data else prompts.ZERO_STYLE)
        views["terse"] = _ask(backend, terse, 1, code, pool, variables, key=zero_key)
    if "shots" in wanted:
        views["shots"] = _ask(backend, shots, 1, _shared(code, shots_style), pool, variables, key=shots_key)
    fixed = prompts.pal_messages(question, variables, style=prompts.DATA_FIXED_STYLE) if data else []
    inline = prompts.pal_messages(question, variables, style=prompts.IDIOMS_STYLE) if data else []
    for name, messages in (("fixed", fixed), ("inline", inline)):  # the order the product asks them in
        if data and name in wanted:
            style = prompts.DATA_FIXED_STYLE if name == "fixed" else prompts.IDIOMS_STYLE
            views[name] = _ask(backend, messages, 1, _shared(code, style), pool, variables, key=fixed_key)
    for name in REPAIRS:  # each right after fixed, from the same cache state
        if data and name in wanted and "fixed" in views:
            fix = _repair(backend, pool, views["fixed"], fixed, question, variables, fixed_key,
                          idioms=name == "fixidioms")
            if fix is not None:
                views[name] = fix
    if not data and "words" in wanted:  # in the programs' slot, after them: only its opening is read
        words = _ask(backend, reasoning.words_messages(question), 1,
                     GenerationOptions(max_new_tokens=reasoning.WORDS_TOKENS, temperature=0.0,
                                       stop_after_code=False), None, variables, key=product_views.SHOTS.cache_key)
        views["words"] = words
    if not data and "reasoned" in wanted and "words" in views:
        views["reasoned"] = _ask(backend, reasoning.program_messages(question, words["texts"][0]), 1, code, pool,
                                 variables)
    if "t07" in wanted:
        views["t07"] = _ask(backend, shots, 5, GenerationOptions(max_new_tokens=MAX_TOKENS, temperature=0.7,
                                                                 seed=seed, code_only=True), pool, variables,
                            key=shots_key)
    low = GenerationOptions(max_new_tokens=MAX_TOKENS, temperature=0.4, seed=seed + 1, code_only=True)
    for name, messages, key in (("t04", shots, shots_key), ("t04f", fixed, fixed_key), ("t04n", inline, fixed_key)):
        if name != "t04" and not data:
            continue
        if name in wanted and (not _agree(views) or f"{name}!" in wanted):  # samples pay only after a disagreement
            views[name] = _ask(backend, messages, 4, low, pool, variables, key=key)
    expected = expected_of(row)
    return {"question": question, "expected": expected, "category": row.get("category", "gsm8k"), "views": views}


def _agree(views: dict[str, Any]) -> bool:
    """Whether every greedy view collected so far gave the same usable answer (then no rule samples more)."""
    answers = [read_answer(_execution(views[name]["programs"][0]))
               for name in ("plain", "zero", "shots", "fixed", "inline", "reasoned") if name in views]
    if "words" in views:
        answers.append(read_answer(_execution(_words_program(views["words"]["texts"][0]))))
    return all(a is not None for a in answers) and all(a.same_as(answers[0]) for a in answers)


def _rows(suite: str, offset: int, limit: int | None) -> list[dict[str, Any]]:
    if suite in DATA_SUITES:
        return suite_rows(suite=suite)[offset:offset + limit if limit else None]
    if suite == "one-liners":
        return [{"question": q, "answer": a} for q, a in ONE_LINERS][offset:offset + limit if limit else None]
    return read_rows(GSM8K, limit=limit, offset=offset)


def _visited(path: str, wanted: Sequence[str]) -> set[int]:
    """The questions a pass for the ``wanted`` views already wrote to ``path``: those with a line holding
    any of them. A pass for other views (``--views terse`` after ``--views fixed``) appends lines of
    its own to the same file, and ``score`` merges a question's lines."""
    if not os.path.exists(path):
        return set()
    records = (json.loads(line) for line in open(path))
    return {record["i"] for record in records if set(record["views"]) & set(wanted)}


def collect(args: argparse.Namespace) -> None:
    rows = _rows(args.suite, args.offset, args.limit)
    done = _visited(args.out, args.views.split(","))
    backend = load_model("default", backend="llamacpp")
    with KernelPool(ExecutorLimits(timeout_s=10)) as pool:
        for position, row in enumerate(rows):
            i = args.offset + position
            if i in done:
                continue
            start = time.perf_counter()
            record = {"suite": args.suite, "i": i,
                      **collect_question(backend, pool, row, seed=1000 + i, wanted=args.views.split(","))}
            record["total_s"] = round(time.perf_counter() - start, 1)
            with open(args.out, "a") as out:
                out.write(json.dumps(record, default=str) + "\n")
            print(i, record["expected"], {name: [_shown(p) for p in view.get("programs", [])]
                                          for name, view in record["views"].items()}, record["total_s"], flush=True)


def _shown(program: dict[str, Any]) -> str | None:
    answer = read_answer(_execution(program))
    return answer.text if answer is not None else (program.get("error") or [None])[0]


# ------------------------------------------------------------------------------------------ score

def _execution(program: dict[str, Any]) -> ExecutionResult | None:
    if program.get("code") is None:
        return None
    error = program.get("error")
    charts = program.get("charts")
    return ExecutionResult(StopReason(program["reason"]), stdout=program.get("stdout", ""),
                           outputs=program.get("outputs", []),
                           error=ErrorInfo(error[0], error[1], "") if error else None,
                           charts=None if charts is None else [chart_from_json(c) for c in charts])


class Candidate:
    """One collected program, read the product's way."""

    def __init__(self, view: str, program: dict[str, Any], expected: Any):
        self.view = view
        self.program = Program(index=1, kind="initial", messages=[], code=program.get("code"))
        self.program.execution = _execution(program)
        self.program.program_answer = read_answer(self.program.execution)
        self.right = is_correct(self.program.program_answer, self.program.execution, expected)
        self.words = program.get("code") == WORDS_CODE


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


WORDS_CODE = "# the answer in words"


def _words_program(text: str) -> dict[str, Any]:
    """A words answer as a program that printed the number it ends on (none: a program that printed nothing)."""
    answer = reasoning.read_words_answer(text)
    return {"code": WORDS_CODE, "reason": "ok", "stdout": f"{answer.text}\n" if answer else "",
            "outputs": [], "error": None}


#: Whether an answer the samples agree on (80 % of the vote) after the first views disagreed counts as
#: sure, as the product showed it until the change "Sure only when the first views agree"
#: (docs/benchmarks.md); set PAL_BENCH_SURE_AFTER_DISAGREEMENT=1 to score the rules that way.
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
    (docs/benchmarks.md, "Two programs, then stop"); the judge is not asked when both views failed
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
PAIRS = (("shots", "zero", "t04"), ("shots", "plain", "t04"), ("shots", "terse", "t04"), ("shots", "reasoned", "t04"),
         ("zero", "reasoned", "t04"), ("shots", "words", "t04"), ("zero", "words", "t04"), ("reasoned", "shots", "t04"),
         ("reasoned", "words", "t04"), ("fixed", "zero", "t04f"), ("fixed", "zero", "t04"), ("shots", "fixed", "t04"),
         ("inline", "zero", "t04n"), ("fixed", "zero", "t04n"), ("fixed", "terse", "t04n"), ("inline", "terse", "t04n"))


def _rules(collected: set[str]) -> dict[str, Rule]:
    """The rules the ``collected`` views can price (samples count as collected where any question has them)."""
    rules: dict[str, Rule] = {label: _single(view) for view, label in SINGLES.items() if view in collected}
    for first, second, samples in PAIRS:
        if not {first, second} <= collected:
            continue
        # shots+terse, stop: the product's plan for word problems (views.WORD_PLAN); `fixed` is a data view
        default = " (the default)" if (first, second) == ("shots", "terse") and "fixed" not in collected else ""
        rules[f"{first}+{second}, stop{default}"] = _careful(first, second, None)
        if samples in collected:
            for weight in (1.0, 2.0):
                rules[f"{first}+{second}, else +4 x {samples} (greedy x{weight:g})"] = _careful(
                    first, second, samples, 4, weight)
            rules[f"{first}+{second}, else +2 x {samples}"] = _careful(first, second, samples, 2)
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


def score(paths: Sequence[str], rates: dict[str, Any] | None = None) -> None:
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
    records = [merged[key] for key in sorted(merged)]
    for suite in ("one-liners", "gsm8k", *DATA_SUITES):
        chosen = [r for r in records if r["suite"] == suite]
        if not chosen:
            continue
        rows = sorted(r["i"] for r in chosen)
        print(f"\n{suite}: {len(chosen)} questions (rows {rows[0]}-{rows[-1]})")
        print(f"{'rule':<58} {'right':>9} {'s mean':>7} {'median':>7} {'p90':>6} {'tokens':>7} {'sure':>5} {'sure right':>10}")
        candidates = [(r, _candidates(r, frames)) for r in chosen]
        every = set.intersection(*(set(r["views"]) for r in chosen))
        # views collected only where a rule can want them (samples, a repair): collected if any question has them
        conditional = {v for r in chosen for v in r["views"] if v in SAMPLED_FROM or v in REPAIRS}
        for name, rule in _rules(every | conditional).items():
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


#: The repairs of the first view's program: collected only where it failed.
REPAIRS = ("fix", "fixidioms")

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


# ------------------------------------------------------------------------------------------ turns

#: One-line questions (written for this benchmark, not taken from any training or prompt set).
ONE_LINERS = (
    ("What is 17 times 23?", 391),
    ("What is 15% of 80?", 12),
    ("How many seconds are in 3 hours?", 10800),
    ("If a train travels 60 mph for 2.5 hours, how many miles does it go?", 150),
    ("What is the average of 4, 8 and 15?", 9),
    ("A shirt costs $20 and is 25% off. What does it cost now, in dollars?", 15),
    ("How many minutes are in a week?", 10080),
    ("What is 2 to the power of 10?", 1024),
    ("What is the remainder when 100 is divided by 7?", 2),
    ("How many metres are in 5.5 kilometres?", 5500),
)


#: The vote method as it was the default when issue 32 was filed: 5 programs sampled at 0.7, the answer
#: worked out in words when fewer than 3 in 5 agree, then more programs up to 15.
VOTE_DEFAULT = {"method": "vote", "samples": 5, "temperature": 0.7, "second_opinion": "words", "max_programs": 15}


def turns(args: argparse.Namespace) -> None:
    """End to end, as a user waits: ``solve()`` with the product's defaults (the careful method, its
    views, samples and repairs) beside the plainest baseline, question by question in one run; with
    ``--vote``, the vote method too, as it was the default when issue 32 was filed (:data:`VOTE_DEFAULT`)."""
    from pal_jupyter import solve

    rows = _rows(args.suite, args.offset, args.limit)
    if args.rows:  # the suite's rows by number (after --offset): the questions a change is about
        outside = [i for i in args.rows if not 0 <= i < len(rows)]
        if outside:
            raise SystemExit(f"--rows: the suite has rows 0-{len(rows) - 1} here, not {outside}")
        rows = [rows[i] for i in args.rows]
    backend = load_model("default", backend="llamacpp")
    plain = GenerationOptions(max_new_tokens=MAX_TOKENS, temperature=0.0)
    table: dict[str, list[tuple[bool, float, bool]]] = {name: [] for name in ("default", "plain", "vote")
                                                          if name != "vote" or args.vote}
    with KernelPool(ExecutorLimits(timeout_s=10)) as pool:
        for row in rows:
            question, variables, expected = question_of(row), row.get("variables") or {}, expected_of(row)
            style = "data-0shot" if variables else "chat-0shot"
            # the baseline keeps a slot of its own: in the zero view's, it would prefill the question for it
            view = _ask(backend, prompts.pal_messages(question, variables, style=style), 1, plain, pool, variables,
                        key="baseline")
            baseline = Candidate("plain", view["programs"][0], expected)
            start = time.perf_counter()
            session = solve(question, variables=variables or None, model=backend, executor=pool)
            seconds = time.perf_counter() - start
            final = session.final if session.succeeded else None
            right = final is not None and is_correct(final.program_answer, final.execution, expected)
            table["default"].append((right, seconds, session.confidence == "high"))
            table["plain"].append((baseline.right, view["seconds"], False))
            voted = ""
            if args.vote:
                start = time.perf_counter()
                vote = solve(question, variables=variables or None, model=backend, executor=pool, **VOTE_DEFAULT)
                vote_seconds = time.perf_counter() - start
                vote_right = vote.succeeded and is_correct(vote.final.program_answer, vote.final.execution, expected)
                table["vote"].append((vote_right, vote_seconds, vote.confidence == "high"))
                voted = (f" | vote {'right' if vote_right else 'wrong'} {vote_seconds:5.1f} s ({vote.confidence}, "
                         f"{len(vote.programs)} programs)")
            print(f"{question[:60]:<60} default {'right' if right else 'wrong'} {seconds:5.1f} s "
                  f"({session.confidence}, {len(session.programs)} programs) | plain "
                  f"{'right' if baseline.right else 'wrong'} {view['seconds']:5.1f} s{voted}", flush=True)
            if args.programs:
                for program in session.programs:
                    print(f"    round {program.index} {program.kind:<8} {program.view or '-':<7} prompt "
                          f"{program.prompt_tokens:>5} tokens, wrote {program.completion_tokens:>4}, "
                          f"{program.generate_s:5.1f} s: {program.error_type or 'worked'}"
                          f"{f' ({program.off_target})' if program.off_target else ''}", flush=True)
    for name, results in table.items():
        seconds = sorted(s for _, s, _ in results)
        sure = [ok for ok, _, is_sure in results if is_sure]
        print(f"{name:<8} {sum(ok for ok, _, _ in results)}/{len(results)} right, seconds mean "
              f"{statistics.mean(seconds):.1f} median {statistics.median(seconds):.1f} max {seconds[-1]:.1f}; "
              f"sure {len(sure)}, right {sum(sure)}")
    print(_cpu())


# ------------------------------------------------------------------------------------------ repairs

#: The product's data views whose failed programs ``repairs`` repairs, and their prompt styles.
REPAIRED_VIEWS = {"fixed": prompts.DATA_FIXED_STYLE, "terse": prompts.DATA_ZERO_STYLE, "inline": prompts.IDIOMS_STYLE}


_FRAME_RE = re.compile(r'^(?P<indent>\s*)File "(?P<path>[^"]+)", line \d+')
_CHAIN_START = "Traceback (most recent call last):"


def brief_traceback(text: str) -> str:
    """A plain traceback (``kernels.tracebacks.clean_traceback``'s) cut to the last exception of a chain
    and the program's own frames, with the error's lines: what ``repairs`` tells the model instead of
    the whole traceback (a missing column's ``KeyError`` is two chained tracebacks of pandas internals,
    ~1,000 characters, around the one line a repair can change). Measured and not taken: the whole
    traceback repaired 4 of 25 failed programs, this 2 (docs/benchmarks.md, "One repair")."""
    last = text[text.rfind(_CHAIN_START):] if _CHAIN_START in text else text
    kept: list[str] = []
    library_indent: int | None = None  # inside a library frame: its header's indent, while its lines follow
    program_frames = 0
    for line in last.rstrip("\n").split("\n"):
        frame = _FRAME_RE.match(line)
        if frame:
            ours = frame["path"] == "program.py"
            program_frames += ours
            library_indent = None if ours else len(frame["indent"])
            if ours:
                kept.append(line)
            continue
        if library_indent is not None and line.strip() and len(line) - len(line.lstrip()) > library_indent:
            continue  # a library frame's source line
        library_indent = None
        kept.append(line)
    return "\n".join(kept) + "\n" if program_frames else text


_FRAME_PATH_RE = re.compile(r'File "(?P<path>[^"]+)"')


def short_paths(text: str) -> str:
    """A traceback whose library frames name their module's file from its package on
    (``pandas/core/frame.py``), not by the installation's absolute path (``kernels.tracebacks.library_path``,
    which the product's tracebacks have used since this was measured: ``asked`` is the same now)."""
    return _FRAME_PATH_RE.sub(lambda frame: f'File "{library_path(frame["path"])}"', text)


def last_chain(text: str) -> str:
    """:func:`short_paths`, of the last exception of a chain only (what was raised while handling, or
    because of, an earlier one): a missing column's ``KeyError`` tells its key twice."""
    return short_paths(text[text.rfind(_CHAIN_START):] if _CHAIN_START in text else text)


#: Ways to ask for a repair, compared by ``repairs``: the feedback as the product tells it (the whole
#: traceback) or cut (the function that cuts it); the product's request, or the longer one before it
#: (one or two sentences, comments allowed).
LONGER_REPAIR_REQUEST = (
    "First explain in one or two plain sentences, for a beginner, what went wrong and why "
    "(start with 'Explanation:'). Then give the complete corrected program in one ```python "
    "block that prints the answer."
)
REPAIR_VARIANTS: dict[str, tuple[Callable[[str], str] | None, str]] = {
    "asked": (None, prompts.REPAIR_REQUEST),  # the product's
    "brief": (brief_traceback, prompts.REPAIR_REQUEST),
    "paths": (short_paths, prompts.REPAIR_REQUEST),
    "last": (last_chain, prompts.REPAIR_REQUEST),
    "longer": (None, LONGER_REPAIR_REQUEST),
    "longer-brief": (brief_traceback, LONGER_REPAIR_REQUEST),
}


def repairs(paths: Sequence[str], variants: Sequence[str]) -> None:
    """Ways of asking for a repair (:data:`REPAIR_VARIANTS`) side by side: every collected program of a
    data view that raised an error is repaired each way, greedily, in its own conversation (as the
    product repairs), one way right after the other in one slot (each after the first reads only
    what differs). Prints, per program, the tokens each way was told beyond what all share, the
    tokens decoded and whether the repair's answer was right."""
    from pal_jupyter.evaluation.dataframes import build_frames

    frames = build_frames()
    backend = load_model("default", backend="llamacpp")
    rows: dict[str, list[tuple[int, int, bool]]] = {name: [] for name in variants}
    with KernelPool(ExecutorLimits(timeout_s=10)) as pool:
        for path in paths:
            for line in open(path):
                record = json.loads(line)
                if record["suite"] not in DATA_SUITES:
                    continue
                for view, style in REPAIRED_VIEWS.items():
                    program = (record["views"].get(view) or {"programs": [{}]})["programs"][0]
                    if not program.get("error") or program.get("code") is None:
                        continue
                    question = record["question"]
                    variables = {name: frames[name] for name in USES[question]}
                    result = pool.run(program["code"], variables)
                    if result.error is None:
                        continue
                    whole = prompts.execution_feedback(result, code=program["code"])
                    told_as = {name: _cut_feedback(whole, result.error.traceback, REPAIR_VARIANTS[name][0])
                               for name in variants}
                    if len(variants) > 1 and len({(told_as[name], REPAIR_VARIANTS[name][1]) for name in variants}) == 1:
                        continue  # every way asks it the same: nothing to compare
                    messages = prompts.pal_messages(question, variables, style=style)
                    options = GenerationOptions(max_new_tokens=MAX_TOKENS, temperature=0.0,
                                                cache_key="repairs", shared_messages=prompts.shared_messages(style))
                    told: dict[str, tuple[int, int, bool]] = {}
                    first_length = 0
                    for name in variants:
                        asked = prompts.follow_up_messages(messages, program["reply"], told_as[name],
                                                           request=REPAIR_VARIANTS[name][1])
                        reply = generate_candidates(backend, asked, 1, options)[0]
                        timing = backend.last_timings[0]
                        if not told:
                            first_length = (timing["cache_n"] or 0) + (timing["prompt_n"] or 0)
                        elif len(told) == 1:  # the first way's turn: its prompt beyond what both share
                            first = next(iter(told))
                            told[first] = (first_length - (timing["cache_n"] or 0), *told[first][1:])
                        fixed = Candidate(name, _program(reply.text, pool, variables), record["expected"])
                        told[name] = (timing["prompt_n"] or 0, reply.completion_tokens, fixed.right)
                    for name, (feedback_tokens, decoded, right) in told.items():
                        rows[name].append((feedback_tokens, decoded, right))
                    print(f"{record['suite']} {record['i']:>2} {view:<6} {result.error.ename:<12} "
                          + " | ".join(f"{name}: told {t} tokens, wrote {d}, {'right' if r else 'wrong'}"
                                       for name, (t, d, r) in told.items()), flush=True)
    for name, results in rows.items():
        if results:
            print(f"{name:<6} {sum(r for _, _, r in results)}/{len(results)} right; told tokens mean "
                  f"{statistics.mean(t for t, _, _ in results):.0f}, decoded mean {statistics.mean(d for _, d, _ in results):.0f}")
    print(_cpu())


def _cut_feedback(feedback: str, traceback: str, cut: Callable[[str], str] | None) -> str:
    """The repair's ``feedback`` with its ``traceback`` cut by ``cut`` (``None``: as it is)."""
    return feedback if cut is None else feedback.replace(traceback.strip(), cut(traceback).strip())


# ------------------------------------------------------------------------------------------ calibrate

def calibrate(out: str) -> None:
    """This CPU's llama.cpp speeds, measured with nothing else running: prompt tokens prefilled a
    second, and seconds per decoding step with 1, 2 and 4 rows in the batch. ``score --rates`` prices
    each view by its own counts at these speeds, so a view written while something else used the
    cores costs what it would have cost alone."""
    backend = load_model("default", backend="llamacpp")
    filler = " ".join(f"Item {i} costs {i % 7 + 2} dollars." for i in range(80))
    prefill = []
    for nonce in range(3):  # a new opening each time: nothing of it is in the prompt cache
        messages = [{"role": "user", "content": f"List {nonce} ({time.time()}): {filler} What is the total?"}]
        generate_candidates(backend, messages, 1, GenerationOptions(max_new_tokens=1, temperature=0.0,
                                                                    stop_after_code=False))
        timing = backend.last_timings[0]
        prefill.append(timing["prompt_n"] / (timing["prompt_ms"] / 1000))
    rates: dict[str, Any] = {"cpu": _cpu(), "prefill_tok_s": round(statistics.median(prefill), 2), "step_s": {}}
    for rows in (1, 2, 4):
        steps = []
        for nonce in range(2):
            messages = [{"role": "user", "content": f"Count from {nonce * 1000} upwards, one number a line, forever."}]
            options = GenerationOptions(max_new_tokens=96, temperature=0.0 if rows == 1 else 0.7, seed=nonce,
                                        stop_after_code=False)
            generate_candidates(backend, messages, rows, options)
            steps += [t["predicted_ms"] / 1000 / t["predicted_n"] for t in backend.last_timings if t["predicted_n"] > 1]
        rates["step_s"][str(rows)] = round(statistics.median(steps), 4)
    print(json.dumps(rates, indent=1))
    Path(out).write_text(json.dumps(rates, indent=1))


def _cpu() -> str:
    flags = set()
    model = ""
    for line in Path("/proc/cpuinfo").read_text().splitlines():
        if line.startswith("model name") and not model:
            model = line.split(":", 1)[1].strip()
        if line.startswith("flags"):
            flags.update(line.split(":", 1)[1].split())
    wanted = [f for f in ("avx2", "avx512f", "avx512_bf16", "amx_bf16") if f in flags]
    return f"{model}, {os.cpu_count()} cores, {' '.join(wanted)}"


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


def _variants(text: str) -> list[str]:
    names = text.split(",")
    unknown = [name for name in names if name not in REPAIR_VARIANTS]
    if unknown:
        raise argparse.ArgumentTypeError(f"no repair variant {', '.join(unknown)}: "
                                         f"choose of {', '.join(REPAIR_VARIANTS)}")
    return names


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    commands = parser.add_subparsers(dest="command", required=True)
    run = commands.add_parser("collect")
    run.add_argument("--suite", choices=("one-liners", "gsm8k", *DATA_SUITES), required=True)
    run.add_argument("--offset", type=int, default=0)
    run.add_argument("--limit", type=int, default=None)
    run.add_argument("--out", default=None)
    run.add_argument("--views", default=",".join(VIEWS), help=f"comma-separated, of {', '.join(VIEWS)}")
    report = commands.add_parser("score")
    report.add_argument("files", nargs="+")
    report.add_argument("--rates", help="price views by their token counts at these speeds (from calibrate)")
    turn = commands.add_parser("turns")
    turn.add_argument("--suite", choices=("one-liners", "gsm8k", *DATA_SUITES), default="one-liners")
    turn.add_argument("--offset", type=int, default=0)
    turn.add_argument("--limit", type=int, default=None)
    turn.add_argument("--rows", type=lambda text: [int(i) for i in text.split(",")],
                      help="comma-separated row numbers of the suite (after --offset), e.g. 16,26,28")
    turn.add_argument("--programs", action="store_true", help="print each program: its round, tokens, seconds")
    turn.add_argument("--vote", action="store_true",
                      help="the vote method too, as the default was before the careful method "
                           "(5 at 0.7, words, up to 15)")
    fixes = commands.add_parser("repairs")
    fixes.add_argument("files", nargs="+")
    fixes.add_argument("--variants", default="asked,longer", type=_variants,
                       help=f"comma-separated, of {', '.join(REPAIR_VARIANTS)}")
    speeds = commands.add_parser("calibrate")
    speeds.add_argument("--out", default="bench-results/rates.json")
    args = parser.parse_args()
    if args.command == "collect":
        args.out = args.out or f"bench-results/views-{args.suite}.jsonl"
        Path(args.out).parent.mkdir(parents=True, exist_ok=True)
        collect(args)
    elif args.command == "turns":
        turns(args)
    elif args.command == "calibrate":
        calibrate(args.out)
    elif args.command == "repairs":
        repairs(args.files, args.variants)
    else:
        score(args.files, json.loads(Path(args.rates).read_text()) if args.rates else None)


if __name__ == "__main__":
    main()
