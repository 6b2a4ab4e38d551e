"""Ask the default model for every *view* of each question once, and keep them for ``score_views.py``.

    python benchmarks/collect_views.py --suite dataframes [--out FILE]
    python benchmarks/collect_views.py --suite charts --views plain,zero,shots,t04
    python benchmarks/collect_views.py --suite gsm8k --offset 300 --limit 40 [--out FILE]
    python benchmarks/collect_views.py --suite one-liners --views plain,shots,terse

Each view is asked through llama.cpp with the product's backend and prompts, its programs run in a
real child kernel (the DataFrame suite's frames copied in, as ``%%pal --use`` does), and one JSON
line per question is appended to FILE (``bench-results/views-SUITE.jsonl`` unless told; a rerun
resumes). Each view records its programs (code, what they printed, errors), tokens, seconds and
llama.cpp's own counts. The views: ``plain`` (the baseline, greedy zero-shot, the reply as written),
``zero`` (the same, code only), ``terse`` (no comments asked), ``shots`` (worked examples); for data
questions ``fixed`` and ``inline`` (the fixed examples; then the idioms most like the question) and
``fix``/``fixidioms`` (the repair of a failed ``fixed`` program); for word problems ``words`` and
``reasoned`` (a program after them); samples ``t07``, ``t04``, ``t04f``, ``t04n`` (the ``t04`` ones
only where the greedy views disagree; ``t04!`` always; ``words?`` only where they agree, to check an
agreement). Collect ``terse`` and ``fixed,fix`` in passes
of their own; remove ``~/.cache/pal-jupyter/prompts`` first to collect what a machine's first
session reads. Each view in full: docs/benchmarks.md; the choices it led to: docs/decisions.md.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from pal_jupyter.backends import GenerationOptions, load_model
from pal_jupyter import prompts
from pal_jupyter.engine import reasoning, views as product_views
from pal_jupyter.engine.grading import expected_of, question_of
from pal_jupyter.engine.filters import named_values
from pal_jupyter.engine.records import Program
from pal_jupyter.engine.vote import mark_off_target, read_answer
from pal_jupyter.kernels import ExecutorLimits, KernelPool

from views_common import DATA_SUITES, MAX_TOKENS, REPAIRS, _ask, _execution, _rows, _words_program  # this folder's


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
    asks_words = "words" in wanted or ("words?" in wanted and _agree(views))  # words?: only where the views agree
    if not data and asks_words:  # in the programs' slot, after them: only its opening is read
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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--suite", choices=("one-liners", "gsm8k", *DATA_SUITES), required=True)
    parser.add_argument("--offset", type=int, default=0)
    parser.add_argument("--limit", type=int, default=None)
    parser.add_argument("--out", default=None)
    parser.add_argument("--views", default=",".join(VIEWS), help=f"comma-separated, of {', '.join(VIEWS)}")
    args = parser.parse_args()
    args.out = args.out or f"bench-results/views-{args.suite}.jsonl"
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    collect(args)


if __name__ == "__main__":
    main()
