"""Child-kernel executor: what the warm pool saves per program, side by side in one run.

    python benchmarks/bench_executor.py [--runs 5]

Prints the median seconds per program (taking a kernel, running, shutting it down) for a
trivial program and for a first pandas + matplotlib plot, with a warm pool (one kernel
pre-started with the imports done) and a cold one (warm=0: every program starts a kernel),
and their ratio. Figures from a shared machine are noisy: compare the ratio, not the seconds.
"""

from __future__ import annotations

import argparse
import statistics
import time

from pal_jupyter.kernels import KernelPool

PROGRAMS = {
    "print": "print(6 * 7)",
    "pandas plot": (
        "import pandas as pd\nimport matplotlib.pyplot as plt\n"
        "pd.DataFrame({'m': range(12), 'v': range(12)}).plot(x='m', y='v')\nplt.show()"
    ),
}


def seconds_per_program(pool: KernelPool, code: str, runs: int) -> float:
    times = []
    for _ in range(runs):
        if pool.warm:
            time.sleep(2.0)  # between questions a user reads the answer: the pool refills meanwhile
        start = time.perf_counter()
        result = pool.run(code)
        times.append(time.perf_counter() - start)
        assert result.ok, result.error
    return statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
    print(f"{'program':<14}{'warm pool s':>12}{'cold s':>10}{'cold/warm':>11}")
    with KernelPool(warm=1) as warm, KernelPool(warm=0) as cold:
        for name, code in PROGRAMS.items():
            w = seconds_per_program(warm, code, args.runs)
            c = seconds_per_program(cold, code, args.runs)
            print(f"{name:<14}{w:>12.3f}{c:>10.3f}{c / w:>10.1f}x")


if __name__ == "__main__":
    main()
