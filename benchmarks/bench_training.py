"""Training speed and memory: the loss on labelled positions against the model's own loss, side by side.

    python benchmarks/bench_training.py PROGRAMS.jsonl [--base lite] [--format leti] [--steps 25]

Each way of computing the loss trains ``--steps`` steps of ``pal-jupyter train`` (default settings,
seed 0, so both see the same batches in the same order) in a fresh process of its own, so that
each one's peak resident memory is its own. Printed per way: seconds per step (median and total,
first step left out: it warms the allocator), tokens per second, peak memory, and the largest
difference between the two ways' losses (they compute the same value; bf16 rounds it).

``model`` is ``causal_lm(input_ids, attention_mask, labels).loss``, what transformers computes:
logits over the whole vocabulary at every position. ``labelled`` is
:func:`pal_jupyter.training.lora.labelled_loss`, what ``pal-jupyter train`` uses.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile

WAYS = ("model", "labelled")


def run_one(way: str, data: str, base: str, fmt: str, steps: int) -> dict:
    """Train in this process (the child) and return its figures."""
    from pal_jupyter.training import lora
    from pal_jupyter.training.examples import load_examples

    if way == "model":
        lora.labelled_loss = lambda lm, ids, mask, labels: lm(input_ids=ids, attention_mask=mask, labels=labels).loss
    tokens: list[int] = []
    padded = lora._padded

    def counting(batch, pad, device):  # the batch width, to report tokens/s
        ids, labels, mask = padded(batch, pad, device)
        tokens.append(int(ids.numel()))
        return ids, labels, mask

    lora._padded = counting
    examples, _ = load_examples([data])
    with tempfile.TemporaryDirectory() as out:
        result = lora.train(examples, base, out, lora.TrainSettings(format=fmt, max_steps=steps, seed=0), progress=False)
    timed = result.step_seconds[1:]
    return {"way": way, "steps": result.steps, "median_s": statistics.median(timed), "total_s": sum(timed),
            "tokens_per_s": sum(tokens[1:]) / sum(timed), "peak_gib": result.peak_memory_gib, "losses": result.losses}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("data", help="programs.jsonl from pal-jupyter collect")
    parser.add_argument("--base", default="lite")
    parser.add_argument("--format", default="leti", choices=("leti", "sft"))
    parser.add_argument("--steps", type=int, default=25)
    parser.add_argument("--child", choices=WAYS, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        print(json.dumps(run_one(args.child, args.data, args.base, args.format, args.steps)))
        return

    rows = []
    for way in WAYS:
        command = [sys.executable, __file__, args.data, "--base", args.base, "--format", args.format,
                   "--steps", str(args.steps), "--child", way]
        rows.append(json.loads(subprocess.run(command, check=True, capture_output=True, text=True).stdout.splitlines()[-1]))
    print(f"{args.format}, {args.steps} steps of pal-jupyter train's defaults on {args.data} ({args.base})")
    print(f"{'loss':10} {'s/step med':>10} {'s total':>8} {'tokens/s':>9} {'peak GiB':>9}")
    for r in rows:
        print(f"{r['way']:10} {r['median_s']:10.2f} {r['total_s']:8.1f} {r['tokens_per_s']:9.1f} {r['peak_gib']:9.2f}")
    model, labelled = rows
    drift = max(abs(a - b) for a, b in zip(model["losses"], labelled["losses"]))
    print(f"labelled / model: time {labelled['total_s'] / model['total_s']:.2f}x, "
          f"peak memory {labelled['peak_gib'] / model['peak_gib']:.2f}x; largest loss difference {drift:.4f}")


if __name__ == "__main__":
    main()
