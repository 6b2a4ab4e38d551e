"""The two local runtimes side by side: torch (transformers) against llama.cpp, same model, same machine, one run.

    python benchmarks/bench_backends.py [--model default] [--questions 10] [--cold]

Each runtime is measured in a fresh process of its own, one after the other (torch fp32; torch bf16
where the CPU has bf16 matrix units; llama.cpp), so peak memory and cold loading are its own:

* load: the first load in the process (``--cold`` first empties the page cache, as after a reboot:
  root only), then again after forgetting the model (the file is in the page cache);
* prefill: tokens per second over the real few-shot prompt, with nothing cached;
* decode: one greedy program, and five sampled programs at once (``--tokens`` each, the
  stop-after-code rule off, so every row writes the same number of tokens), tokens per second;
  for llama.cpp also its own timings, to show what the binding costs;
* a %%pal-style turn: ``solve()`` with 5 programs and repairs, as a user gets it, on the first
  ``--questions`` GSM8K test questions: seconds per question and how many were right; and
  ``--dataframe-turns`` times the one-line question about a six-row DataFrame (short programs);
* peak RSS of the whole process (the kernels that run the programs are other processes).

The machine's CPU flags are printed with the figures: speed depends on them.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

QUESTION = ("A bakery sells 24 muffins in the morning and three times as many in the afternoon. Each muffin "
            "costs $2.50. How much money does the bakery make in a day?")
DATA = Path(__file__).resolve().parent.parent.parent / "shared" / "data" / "gsm8k" / "test.jsonl"


def cpu_summary() -> str:
    """The CPU model and the flags that decide CPU inference speed."""
    try:
        text = Path("/proc/cpuinfo").read_text()
    except OSError:
        return "unknown CPU"
    model = next((line.split(":", 1)[1].strip() for line in text.splitlines() if line.startswith("model name")), "?")
    flags = next((line.split(":", 1)[1].split() for line in text.splitlines() if line.startswith("flags")), [])
    wanted = [f for f in ("avx2", "fma", "f16c", "avx512f", "avx512_bf16", "avx512_vnni", "amx_bf16", "amx_int8")
              if f in flags]
    return f"{model}, {len(os.sched_getaffinity(0))} CPUs, flags: {' '.join(wanted)}"


def drop_page_cache() -> bool:
    try:
        subprocess.run(["sync"], check=True)
        Path("/proc/sys/vm/drop_caches").write_text("3\n")
        return True
    except OSError:
        return False


# ------------------------------------------------------------------------------------------ worker


def worker(args: argparse.Namespace) -> dict[str, Any]:
    """Measure one runtime in this (fresh) process."""
    from pal_jupyter import KernelPool, solve
    from pal_jupyter.backends import GenerationOptions, clear_model_cache, load_model
    from pal_jupyter import prompts
    from pal_jupyter.engine.grading import expected_of, is_correct, question_of

    result: dict[str, Any] = {"backend": args.backend, "dtype_asked": args.dtype}
    start = time.perf_counter()
    backend = load_model(args.model, backend=args.backend, dtype=args.dtype)
    result["load_cold_s"] = time.perf_counter() - start
    result.update(runtime=backend.runtime, dtype=backend.dtype)  # type: ignore[attr-defined]
    clear_model_cache()
    del backend
    start = time.perf_counter()
    backend = load_model(args.model, backend=args.backend, dtype=args.dtype)
    result["load_warm_s"] = time.perf_counter() - start

    messages = prompts.pal_messages(QUESTION)
    greedy = GenerationOptions(max_new_tokens=args.tokens, temperature=0.0, stop_after_code=False)
    one = backend.generate(messages, greedy)  # the first request: nothing of the prompt is cached
    result["prompt_tokens"] = one.prompt_tokens
    result["prefill_tok_s"] = one.prompt_tokens / one.first_token_s if one.first_token_s else None
    result["decode_1_tok_s"] = one.tokens_per_second
    own = getattr(backend, "last_timings", None)
    if own:
        result["own_prefill_tok_s"] = own[0]["prompt_per_second"]
        result["own_decode_1_tok_s"] = own[0]["predicted_per_second"]

    sampled = GenerationOptions(max_new_tokens=args.tokens, temperature=0.7, seed=0, stop_after_code=False)
    start = time.perf_counter()
    rows = backend.generate_many(messages, args.samples, sampled)  # type: ignore[attr-defined]
    wall = time.perf_counter() - start
    tokens = sum(r.completion_tokens for r in rows)
    result.update(k=args.samples, decode_k_tokens=tokens, decode_k_wall_s=wall,
                  decode_k_tok_s=tokens / (wall - (rows[0].first_token_s or 0.0)))
    own = getattr(backend, "last_timings", None)
    if own:
        result["own_decode_k_tok_s"] = sum(t["predicted_per_second"] for t in own)

    rows_data = [json.loads(line) for line in Path(args.data).read_text().splitlines()[: args.questions]]
    turns = []
    with KernelPool(warm=args.samples) as pool:
        for row in rows_data:
            start = time.perf_counter()
            session = solve(question_of(row), model=backend, executor=pool, samples=args.samples)
            final = session.final
            right = final is not None and session.succeeded and is_correct(final.program_answer, final.execution,
                                                                           expected_of(row))
            turns.append({"seconds": time.perf_counter() - start, "answer": session.answer, "correct": right,
                          "rounds": session.rounds})
        result["dataframe_turns"] = [dataframe_turn(backend, pool, args.samples) for _ in range(args.dataframe_turns)]
    result["turns"] = turns
    result["peak_rss_gib"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20
    return result


def dataframe_turn(backend: Any, pool: Any, samples: int) -> dict[str, Any]:
    """One turn on the six-row DataFrame question of issue 20 (right answer: 159)."""
    import pandas as pd

    from pal_jupyter import solve

    sales = pd.DataFrame({"region": ["East", "West", "East", "North", "West", "East"],
                          "units": [3, 5, 2, 7, 1, 4], "price": [20.0, 15.0, 22.5, 10.0, 30.0, 13.5]})
    start = time.perf_counter()
    session = solve("What is the total revenue (units times price) of the East region? Print just the number.",
                    model=backend, executor=pool, samples=samples, variables={"sales": sales})
    return {"seconds": time.perf_counter() - start, "answer": session.answer, "rounds": session.rounds,
            "tokens": [a.completion_tokens for a in session.programs]}


# ------------------------------------------------------------------------------------------ parent


def runtimes(include_bf16: bool) -> list[tuple[str, str]]:
    found = [("torch", "float32")]
    if include_bf16:
        found.append(("torch", "bfloat16"))
    return found + [("llamacpp", "auto")]


def run_worker(args: argparse.Namespace, backend: str, dtype: str) -> dict[str, Any]:
    command = [sys.executable, __file__, "--worker", "--backend", backend, "--dtype", dtype, "--model", args.model,
               "--questions", str(args.questions), "--tokens", str(args.tokens), "--samples", str(args.samples),
               "--dataframe-turns", str(args.dataframe_turns),
               "--data", str(args.data)]
    env = dict(os.environ, HF_HUB_OFFLINE="1")
    done = subprocess.run(command, capture_output=True, text=True, env=env)
    if done.returncode != 0:
        raise SystemExit(f"{backend}/{dtype} failed:\n{done.stderr[-3000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def report(results: list[dict[str, Any]], args: argparse.Namespace, cold: bool) -> str:
    def fmt(value: Any, spec: str = ".1f") -> str:
        return "-" if value is None else format(value, spec)

    k = args.samples
    lines = [f"model {args.model}; {cpu_summary()}",
             f"prompt: the default few-shot prompt; {args.tokens} new tokens per program; turns: solve() with "
             f"k={k} and repairs on the first {args.questions} GSM8K test questions",
             f"load cold = first load in a fresh process ({'page cache emptied' if cold else 'page cache as it was'})",
             "",
             f"{'runtime':<38} {'load cold':>9} {'warm':>6} {'peak RSS':>8} {'prefill':>8} {'decode 1':>8} "
             f"{f'k={k} total':>10} {'turn mean':>9} {'turn p90':>8} {'right':>6}",
             f"{'':<38} {'s':>9} {'s':>6} {'GiB':>8} {'tok/s':>8} {'tok/s':>8} {'tok/s':>10} {'s':>9} {'s':>8} {'':>6}"]
    for r in results:
        seconds = sorted(t["seconds"] for t in r["turns"])
        p90 = seconds[min(len(seconds) - 1, int(0.9 * len(seconds)))] if seconds else None
        right = sum(t["correct"] for t in r["turns"])
        lines.append(
            f"{r['runtime']:<38} {fmt(r['load_cold_s']):>9} {fmt(r['load_warm_s']):>6} {fmt(r['peak_rss_gib'], '.2f'):>8} "
            f"{fmt(r['prefill_tok_s']):>8} {fmt(r['decode_1_tok_s'], '.2f'):>8} {fmt(r['decode_k_tok_s'], '.2f'):>10} "
            f"{fmt(statistics.mean(seconds) if seconds else None):>9} {fmt(p90):>8} {right:>3}/{len(r['turns'])}")
    own = [r for r in results if "own_decode_1_tok_s" in r]
    for r in own:
        lines.append(f"{r['runtime']}: llama.cpp's own timings: prefill {r['own_prefill_tok_s']:.1f} tok/s, decode 1 "
                     f"{r['own_decode_1_tok_s']:.2f} tok/s, k={k} {r['own_decode_k_tok_s']:.2f} tok/s; measured through "
                     f"the binding: {r['decode_1_tok_s'] / r['own_decode_1_tok_s']:.3f}x and "
                     f"{r['decode_k_tok_s'] / r['own_decode_k_tok_s']:.3f}x of that")
    base = next((r for r in results if r["backend"] == "torch" and r["dtype"] == "float32"), None)
    for r in results:
        if base is None or r is base:
            continue
        mean_turn = (statistics.mean(t["seconds"] for t in r["turns"]) / statistics.mean(t["seconds"] for t in base["turns"])
                     if r["turns"] and base["turns"] else None)
        lines.append(f"{r['runtime']} vs {base['runtime']}: decode 1 {r['decode_1_tok_s'] / base['decode_1_tok_s']:.2f}x, "
                     f"k={k} {r['decode_k_tok_s'] / base['decode_k_tok_s']:.2f}x, prefill "
                     f"{r['prefill_tok_s'] / base['prefill_tok_s']:.2f}x, mean turn {fmt(mean_turn, '.2f')}x, "
                     f"peak RSS {r['peak_rss_gib'] / base['peak_rss_gib']:.2f}x")
    for r in results:
        if r.get("dataframe_turns"):
            turns = ", ".join(f"{t['seconds']:.1f} s ({t['answer']}; {t['rounds']} round(s); programs of "
                              f"{min(t['tokens'])}-{max(t['tokens'])} tokens)" for t in r["dataframe_turns"])
            lines.append(f"six-row DataFrame question, k={k}, {r['runtime']}: {turns}")
    for r in results:
        answers = ", ".join(f"{t['answer']}{'' if t['correct'] else ' (wrong)'}" for t in r["turns"])
        lines.append(f"answers {r['runtime']}: {answers}")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--model", default="default")
    parser.add_argument("--questions", type=int, default=10)
    parser.add_argument("--tokens", type=int, default=64)
    parser.add_argument("--samples", type=int, default=5)
    parser.add_argument("--dataframe-turns", type=int, default=3)
    parser.add_argument("--data", default=str(DATA))
    parser.add_argument("--runtimes", default="", help="e.g. llamacpp/auto,torch/float32 (default: all that apply)")
    parser.add_argument("--cold", action="store_true", help="empty the page cache before each runtime (root)")
    parser.add_argument("--out", default="", help="also write the raw figures as JSON here")
    parser.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--backend", default="auto", help=argparse.SUPPRESS)
    parser.add_argument("--dtype", default="auto", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        print(json.dumps(worker(args)))
        return

    from pal_jupyter.backends import presets
    from pal_jupyter.backends.huggingface import cpu_has_bf16

    if presets.find_preset(args.model):  # assembling and converting are once per machine: not measured here
        presets.prepare_preset(args.model)
    chosen = ([tuple(item.split("/")) for item in args.runtimes.split(",")] if args.runtimes
              else runtimes(cpu_has_bf16()))
    results, cold = [], False
    for backend, dtype in chosen:
        cold = args.cold and drop_page_cache()
        print(f"measuring {backend}/{dtype} ...", file=sys.stderr, flush=True)
        results.append(run_worker(args, backend, dtype))
    print(report(results, args, cold))
    if args.out:
        Path(args.out).write_text(json.dumps({"cpu": cpu_summary(), "results": results}, indent=2) + "\n")


if __name__ == "__main__":
    main()
