"""The product end to end, as a user waits: ``solve()`` beside the plainest baseline, question by question.

    python benchmarks/bench_turns.py [--suite one-liners] [--offset N] [--limit N] [--rows 16,26,28]
    python benchmarks/bench_turns.py --suite dataframes --programs    # each program: round, tokens, seconds
    python benchmarks/bench_turns.py --suite gsm8k --offset 300 --limit 15 --vote

Each question of the suite is asked, with the default model through llama.cpp, as one greedy
zero-shot program (the baseline, in a cache slot of its own), then through ``solve()`` with the
product's defaults (the careful method, its views, samples and repairs), and with ``--vote`` through
the vote method as it was the default when issue 32 was filed (:data:`VOTE_DEFAULT`). Prints each
question's results and seconds, then per method: right, seconds (mean, median, max), and the answers
shown as sure and how many of them were right. Why the defaults are what they are: docs/decisions.md.
"""

from __future__ import annotations

import argparse
import statistics
import time

from pal_jupyter.backends import GenerationOptions, load_model
from pal_jupyter import prompts
from pal_jupyter.engine.grading import expected_of, is_correct, question_of
from pal_jupyter.kernels import ExecutorLimits, KernelPool

from views_common import DATA_SUITES, MAX_TOKENS, Candidate, _ask, _cpu, _rows  # this folder's


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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--suite", choices=("one-liners", "gsm8k", *DATA_SUITES), default="one-liners")
    parser.add_argument("--offset", type=int, default=0)
    parser.add_argument("--limit", type=int, default=None)
    parser.add_argument("--rows", type=lambda text: [int(i) for i in text.split(",")],
                        help="comma-separated row numbers of the suite (after --offset), e.g. 16,26,28")
    parser.add_argument("--programs", action="store_true", help="print each program: its round, tokens, seconds")
    parser.add_argument("--vote", action="store_true",
                        help="the vote method too, as the default was before the careful method "
                             "(5 at 0.7, words, up to 15)")
    args = parser.parse_args()
    turns(args)


if __name__ == "__main__":
    main()
