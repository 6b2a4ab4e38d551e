"""Adaptive effort on questions about DataFrames: the final method, and from the same run what
stopping at the first weak vote (the loop before adaptive effort) would have answered, and when.

    python benchmarks/bench_effort.py [--every 2] [--samples 5] [--max-programs 15] [--out FILE]

The questions are those of ``bench_data_prompts.py`` (every ``--every``-th numeric question of the
DataFrame suite and the six-row question). Each is solved as ``%%pal --use`` does (``solve()`` with
the frames, repairs on); the report is ``pal-jupyter bench``'s, with its "adaptive effort" line.
For GSM8K the same comparison is ``pal-jupyter bench --data ../shared/data/gsm8k/test.jsonl --samples 5``.
"""

from __future__ import annotations

import argparse
import json

from bench_data_prompts import questions

from pal_jupyter import KernelPool
from pal_jupyter.backends import load_model
from pal_jupyter.benchmark.runner import Config, format_summaries, run_benchmark, summarize, write_report


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--model", default="default")
    parser.add_argument("--every", type=int, default=2)
    parser.add_argument("--samples", type=int, default=5)
    parser.add_argument("--max-programs", type=int, default=15)
    parser.add_argument("--out", default="bench-results/effort-dataframes.json")
    args = parser.parse_args()
    config = Config(samples=args.samples, max_programs=args.max_programs)
    model = load_model(args.model)
    results = []
    with KernelPool(warm=args.samples) as pool:
        for result in run_benchmark(questions(args.every), lambda _config: model, pool, [config]):
            results.append(result)
            print(json.dumps({"question": result.index, "correct": result.correct, "answer": result.answer,
                              "stopping at the weak vote": result.plain_vote_correct, "seconds": round(result.seconds, 1),
                              "votes": f"{result.votes}/{result.candidates}", "more": result.more_programs}), flush=True)
    summary = summarize(results, model=model.name, load_seconds=getattr(model, "load_seconds", 0.0), check_answers=False)
    summary.update(runtime=getattr(model, "runtime", ""), dtype=getattr(model, "dtype", ""))
    print(format_summaries([summary]))
    for path in write_report(args.out, [summary], results):
        print(f"written: {path}")


if __name__ == "__main__":
    main()
