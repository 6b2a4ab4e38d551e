"""This CPU's llama.cpp speeds, for ``score_views.py --rates`` and ``bench_dabench.py score --rates``.

    python benchmarks/calibrate.py [--out bench-results/rates.json]   # with nothing else running

Loads the default model through llama.cpp, then prints and writes to ``--out`` the prompt tokens it
prefills a second and its seconds per decoding step with 1, 2 and 4 rows in a batch, with the CPU's
model, cores and vector flags. The speeds of the project's own machines are in ``benchmarks/rates/``.
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from pathlib import Path
from typing import Any

from pal_jupyter.backends import GenerationOptions, generate_candidates, load_model

from views_common import _cpu  # this folder's


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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", default="bench-results/rates.json")
    args = parser.parse_args()
    calibrate(args.out)


if __name__ == "__main__":
    main()
