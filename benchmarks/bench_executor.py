"""Child-kernel executor: what the warm pool saves per program, and what the sandbox costs, side by side.

    python benchmarks/bench_executor.py [--runs 5] [--isolation process,sandbox]

Prints the median seconds per program (taking a kernel, running, shutting it down) for a
trivial program and for a first pandas + matplotlib plot, with a warm pool (one kernel
pre-started with the imports done) and a cold one (warm=0: every program starts a kernel), for
each isolation level, and the ratios: cold/warm per level, and sandbox/process for cold and warm.
The levels alternate run by run, so a noisy, shared machine slows them alike.
"""

from __future__ import annotations

import argparse
import statistics
import time

from pal_jupyter.kernels import ExecutorLimits, KernelPool

PROGRAMS = {
    "print": "print(6 * 7)",
    "pandas plot": (
        "import pandas as pd\nimport matplotlib.pyplot as plt\n"
        "pd.DataFrame({'m': range(12), 'v': range(12)}).plot(x='m', y='v')\nplt.show()"
    ),
}


def one_run(pool: KernelPool, code: str) -> float:
    if pool.warm:
        time.sleep(2.0)  # between questions a user reads the answer: the pool refills meanwhile
    start = time.perf_counter()
    result = pool.run(code)
    assert result.ok, result.error
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--isolation", default="process,sandbox")
    args = parser.parse_args()
    levels = args.isolation.split(",")
    pools = {(level, warm): KernelPool(ExecutorLimits(isolation=level), warm=warm) for level in levels for warm in (1, 0)}
    medians: dict[tuple[str, str, int], float] = {}
    try:
        for name, code in PROGRAMS.items():
            times: dict[tuple[str, int], list[float]] = {key: [] for key in pools}
            for _ in range(args.runs):  # interleaved: every setting sees the same machine
                for key, pool in pools.items():
                    times[key].append(one_run(pool, code))
            for (level, warm), values in times.items():
                medians[(name, level, warm)] = statistics.median(values)
    finally:
        for pool in pools.values():
            pool.close()
    print(f"{'program':<14}{'level':<9}{'warm pool s':>12}{'cold s':>10}{'cold/warm':>11}")
    for name in PROGRAMS:
        for level in levels:
            w, c = medians[(name, level, 1)], medians[(name, level, 0)]
            print(f"{name:<14}{level:<9}{w:>12.3f}{c:>10.3f}{c / w:>10.1f}x")
    if set(levels) == {"process", "sandbox"}:
        for name in PROGRAMS:
            cold = medians[(name, "sandbox", 0)] / medians[(name, "process", 0)]
            warm = medians[(name, "sandbox", 1)] / medians[(name, "process", 1)]
            print(f"{name}: sandbox/process {cold:.2f}x cold, {warm:.2f}x warm")


if __name__ == "__main__":
    main()
