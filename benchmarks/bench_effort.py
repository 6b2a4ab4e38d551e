"""Adaptive effort on questions about DataFrames: the final method, and from the same run what
stopping at the first weak vote (the loop before adaptive effort) would have answered, and when.

    python benchmarks/bench_effort.py [--every 2 | --named] [--samples 5] [--max-programs 15] [--out FILE]

The questions are those of ``bench_data_prompts.py`` (every ``--every``-th numeric question of the
DataFrame suite and the six-row question), or with ``--named`` every numeric question that names a
value of its data ("the West region": the questions where a program that never uses the value is
sent back, see ``pal_jupyter/engine/filters.py``). Each is solved as ``%%pal --use`` does (``solve()`` with
the frames, repairs on); the report is ``pal-jupyter bench``'s, with its "adaptive effort" line.
For GSM8K the same comparison is ``pal-jupyter bench --data ../shared/data/gsm8k/test.jsonl --samples 5``.
"""

from __future__ import annotations

import argparse
import collections
import json

from bench_data_prompts import questions, six_row_question

from pal_jupyter import KernelPool
from pal_jupyter.backends import GenerationOptions, load_model
from pal_jupyter.evaluation.dataframes import suite_rows
from pal_jupyter.evaluation.runner import Config, format_summaries, run_benchmark, summarize, write_report
from pal_jupyter.engine.filters import named_values
from pal_jupyter.engine.trace import TraceWriter


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--model", default="default")
    parser.add_argument("--every", type=int, default=2)
    parser.add_argument("--named", action="store_true", help="the numeric questions that name a value of the data")
    parser.add_argument("--trace", help="append every program to this JSONL trace")
    parser.add_argument("--samples", type=int, default=5)
    parser.add_argument("--max-programs", type=int, default=15)
    parser.add_argument("--seed", type=int, default=None,
                        help="sampling seed: with several --second-opinion, each starts from the same first programs")
    parser.add_argument("--second-opinion", default="words",
                        help="what a weak vote asks for first (look: for data, a look at it; words and off: only more "
                             "programs for data); several, comma-separated (words,look), run side by side, question "
                             "by question")
    parser.add_argument("--out", default="bench-results/effort-dataframes.json")
    args = parser.parse_args()
    configs = [Config(samples=args.samples, max_programs=args.max_programs, second_opinion=opinion)
               for opinion in args.second_opinion.split(",")]
    model = load_model(args.model)
    results = []
    rows = questions(args.every)
    if args.named:
        rows = [r for r in suite_rows() + [six_row_question()]
                if not r.get("chart") and named_values(r["question"], r.get("variables"))]
    trace = TraceWriter(args.trace) if args.trace else None
    with KernelPool(warm=args.samples) as pool:
        for result in run_benchmark(rows, lambda _config: model, pool, configs, trace=trace,
                                    generation=GenerationOptions(seed=args.seed)):
            results.append(result)
            print(json.dumps({"question": result.index, "second opinion": result.config.second_opinion,
                              "correct": result.correct, "answer": result.answer,
                              "stopping at the weak vote": result.plain_vote_correct, "seconds": round(result.seconds, 1),
                              "votes": f"{result.votes}/{result.candidates}", "more": result.more_programs}), flush=True)
    summaries = []
    for config in configs:
        summary = summarize([r for r in results if r.config is config], model=model.name,
                            load_seconds=model.load_seconds, check_answers=False)
        summary.update(runtime=model.runtime, dtype=model.dtype,
                       second_opinion=config.second_opinion)
        summaries.append(summary)
    print(format_summaries(summaries))
    for path in write_report(args.out, summaries, results):
        print(f"written: {path}")
    if args.trace:
        print(without_the_filter(args.trace, results, args.samples))


def without_the_filter(trace: str, results: list, samples: int) -> str:
    """On the questions where first-round programs were sent back for never using a value the question
    names: what the first vote of those same programs would have answered had they voted, against
    the final answer with the check (counted again from the trace: no model is run)."""
    from pal_jupyter.engine.grading import is_correct
    from pal_jupyter.engine.records import ProgramAnswer

    first_rounds: dict[str, list[dict]] = collections.defaultdict(list)
    for line in open(trace):
        record = json.loads(line)
        if record["index"] == 1 and record["sample"] <= samples:
            first_rounds[record["question"]].append(record)
    checked = sent_back = right_without = right_with = 0
    for result in results:
        programs = first_rounds.get(result.question, [])
        ignoring = [p for p in programs if p["error_type"] == "IgnoresFilter"]
        if not ignoring:
            continue
        checked += 1
        sent_back += len(ignoring)
        winner = _winner([p for p in programs if p["error_type"] in (None, "IgnoresFilter")])
        right_without += winner is not None and is_correct(ProgramAnswer(**winner), None, result.expected)
        right_with += bool(result.correct)
    return (f"the filter check: {sent_back} first-round programs never used a value their question names, on "
            f"{checked} of {len(results)} questions; on those, had they voted, the first vote would have been right on "
            f"{right_without}; with the check the final answer was right on {right_with}")


def _winner(programs: list[dict]) -> dict | None:
    """The answer most programs gave (ties: the first seen), as a ProgramAnswer's fields."""
    from pal_jupyter.engine.records import ProgramAnswer

    groups: list[list] = []
    for program in programs:
        if not program.get("program_answer"):
            continue
        answer = ProgramAnswer(**program["program_answer"])
        group = next((g for g in groups if g[0].same_as(answer)), None)
        if group is None:
            groups.append([answer, 1, program["program_answer"]])
        else:
            group[1] += 1
    return max(groups, key=lambda g: g[1])[2] if groups else None


if __name__ == "__main__":
    main()
