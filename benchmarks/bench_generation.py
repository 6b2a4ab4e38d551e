"""Generation speed of one model: dtype, batch of k programs, and the prompt-prefix cache, side by side.

    python benchmarks/bench_generation.py [--model default] [--runs 3] [--samples 5] [--tokens 64]

For each dtype (float32, bfloat16) it loads the model and, on the same GSM8K-style question with
the 8-shot prompt, measures (median of ``--runs``):

* time to the first token with the prompt-prefix cache warm, and with it off (every call
  prefills the whole prompt: system message, worked examples, question);
* decoding speed for one program (greedy) and for a batch of ``--samples`` sampled programs
  (tokens/s over all rows, and the wall time of the batch).

Every row writes exactly ``--tokens`` tokens (the stop-after-code rule is off), so the figures
compare like with like. Figures from a shared machine are noisy: compare the ratios printed at
the end, which come from the same run.
"""

from __future__ import annotations

import argparse
import statistics
import time

from pal_jupyter import prompts
from pal_jupyter.backends import GenerationOptions, TransformersBackend, clear_model_cache, load_model

QUESTION = ("A bakery sells 24 muffins in the morning and three times as many in the afternoon. Each muffin "
            "costs $2.50. How much money does the bakery make in a day?")


def measure(backend: TransformersBackend, samples: int, tokens: int, cached: bool) -> tuple[float, float, float]:
    """(time to first token, tokens/s over all rows, wall seconds) of one call."""
    backend._cache_broken = not cached
    messages = prompts.pal_messages(QUESTION, style="chat-8shot")
    options = GenerationOptions(max_new_tokens=tokens, stop_after_code=False, seed=0,
                                temperature=None if samples > 1 else 0.0)
    start = time.perf_counter()
    rows = backend.generate_many(messages, samples, options)
    wall = time.perf_counter() - start
    produced = sum(r.completion_tokens for r in rows)
    decode = wall - (rows[0].first_token_s or 0.0)
    return rows[0].first_token_s or 0.0, produced / decode if decode > 0 else 0.0, wall


def median_of(runs: int, *args: object) -> tuple[float, float, float]:
    results = [measure(*args) for _ in range(runs)]  # type: ignore[arg-type]
    return tuple(statistics.median(r[i] for r in results) for i in range(3))  # type: ignore[return-value]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--model", default="default")
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--samples", type=int, default=5)
    parser.add_argument("--tokens", type=int, default=64)
    parser.add_argument("--dtypes", default="float32,bfloat16")
    args = parser.parse_args()

    rows = []
    for dtype in args.dtypes.split(","):
        clear_model_cache()
        backend = load_model(args.model, device="cpu", dtype=dtype)
        assert isinstance(backend, TransformersBackend)
        prompt_tokens = len(backend._encode(backend.render_prompt(prompts.pal_messages(QUESTION, style="chat-8shot"))))
        measure(backend, 1, 4, True)  # warm up: fills the prefix cache, first-call overheads
        ttft_cached, single_tps, single_wall = median_of(args.runs, backend, 1, args.tokens, True)
        ttft_plain, _, _ = median_of(args.runs, backend, 1, 4, False)
        _, batch_tps, batch_wall = median_of(args.runs, backend, args.samples, args.tokens, True)
        rows.append((dtype, prompt_tokens, ttft_plain, ttft_cached, single_tps, single_wall, batch_tps, batch_wall))
        del backend
        clear_model_cache()

    k = args.samples
    print(f"model {args.model}, 8-shot prompt, {args.tokens} new tokens per row, median of {args.runs}")
    print(f"{'dtype':<9} {'prompt':>6} {'ttft no cache':>13} {'ttft cached':>11} {'1 prog tok/s':>12} "
          f"{'1 prog s':>8} {f'{k} progs tok/s':>13} {f'{k} progs s':>10} {f'{k} vs 1 wall':>10}")
    for dtype, prompt_tokens, ttft_plain, ttft_cached, stps, swall, btps, bwall in rows:
        print(f"{dtype:<9} {prompt_tokens:>6} {ttft_plain:>12.2f}s {ttft_cached:>10.2f}s {stps:>12.2f} {swall:>7.1f}s "
              f"{btps:>13.2f} {bwall:>9.1f}s {bwall / swall:>9.2f}x")
    if len(rows) == 2:
        (_, _, p0, c0, s0, w0, b0, bw0), (_, _, p1, c1, s1, w1, b1, bw1) = rows
        print(f"{rows[1][0]} vs {rows[0][0]}: ttft {p0 / p1:.2f}x faster (no cache), decode {s1 / s0:.2f}x (1 program), "
              f"{b1 / b0:.2f}x ({k} programs)")


if __name__ == "__main__":
    main()
