"""Fuzz the sandboxed kernel pool with broken and destructive programs, and count what got through.

    python benchmarks/fuzz_sandbox.py [--programs 1000] [--isolation sandbox] [--seed 0]

The programs are the project's GSM8K worked examples (and, when given with ``--programs-from``,
programs collected by ``pal-jupyter collect``), mutated at random (lines dropped, swapped,
operators changed), and random snippets of destructive standard-library calls mixed in: deleting
and writing files, filling the disk, forking, detaching, infinite loops, deep recursion, huge
allocations, sockets, signals, ``os._exit``, reading secrets. They run in batches of 5, as the
candidates of one question do. Printed at the end:

* runs, and how they ended (ok, error, timeout, died, output limit);
* kernel deaths handled (the pool went on);
* hangs: runs still going 5 s after the timeout plus the grace period, the time allowed to kill
  and reap a kernel (must be 0), and the slowest run;
* files left behind in the temp folder, the canary folder and the current folder (must be 0);
* escapes: programs that printed this process's secret (an environment variable of ours, which
  the kernel's launch would copy were it not scrubbed), e.g. from ``/proc/*/environ`` (must be 0);
* harms to the "user's kernel", this process: its canary file and environment changed, a
  process left running (must be 0).
"""

from __future__ import annotations

import argparse
import json
import os
import random
import tempfile
import time
from collections import Counter
from pathlib import Path

from pal_jupyter.prompts.worked_examples import WORKED_EXAMPLES
from pal_jupyter.kernels import ExecutorLimits, KernelPool
from pal_jupyter.kernels.processes import children_by_parent

TIMEOUT_S, GRACE_S = 3.0, 2.0
KILL_S = 5.0  # after timeout + grace: SIGKILL, reap, report

DESTRUCTIVE = [
    "import shutil, os\nshutil.rmtree(os.path.expanduser('~'), ignore_errors=True)",
    "import os\nfor root, dirs, files in os.walk('/tmp'):\n    for f in files:\n        try: os.remove(os.path.join(root, f))\n        except OSError: pass",
    "open(CANARY, 'w').write('pwned')",
    "import os\nos.remove(CANARY)",
    "with open('fill.bin', 'wb') as f:\n    while True: f.write(b'0' * 1048576)",
    "import os\nfor i in range(100):\n    open(f'/tmp/litter-{i}', 'w').write('x')",
    "import os\nwhile True:\n    os.fork()",
    "import os, time\nfor _ in range(50):\n    if os.fork() == 0:\n        os.setsid(); time.sleep(120); os._exit(0)",
    "import subprocess\nsubprocess.Popen(['sleep', '120'], start_new_session=True)",
    "while True: pass",
    "import time\ntime.sleep(1000)",
    "def f(n): return f(n + 1)\nf(0)",
    "x = bytearray(8 * 1024**3)",
    "x = [0] * (10**10)",
    "import os\nos._exit(3)",
    "import os, signal\nos.kill(os.getpid(), signal.SIGKILL)",
    "import os, signal\nos.kill(os.getppid(), signal.SIGTERM)",
    "import os, signal\nfor pid in range(2, 400):\n    try: os.kill(pid, signal.SIGTERM)\n    except OSError: pass",
    "import socket\nsocket.create_connection(('127.0.0.1', 22), timeout=1)",
    "import urllib.request\nurllib.request.urlopen('http://example.com', timeout=2)",
    "import os\nprint({k: v for k, v in os.environ.items()})",
    "print(open(os.path.expanduser('~/.bashrc')).read())",
    "import ctypes\nctypes.string_at(0)",
    "import signal\nsignal.signal(signal.SIGINT, signal.SIG_IGN)\nwhile True: pass",
    "print('x' * 10**8)",
    "import sys\nsys.setrecursionlimit(10**6)\ndef g(n): return g(n+1)\ng(0)",
    "import threading\nfor _ in range(5000): threading.Thread(target=lambda: __import__('time').sleep(60)).start()",
    "import os\nos.chdir('/')\nopen('pwned', 'w')",
    # Secrets of other processes, every writable place filled with many files, the host folder that
    # holds the kernel's connection file, and a detached child of a kernel that kills itself.
    "import glob\nfor p in glob.glob('/proc/[0-9]*/environ'):\n    try: print(open(p, 'rb').read())\n"
    "    except OSError: pass",
    "for i in range(100000):\n    open(f'/tmp/fill-{i}', 'wb').write(b'0' * 1048576)",
    "for i in range(100000):\n    open(f'/dev/shm/fill-{i}', 'wb').write(b'0' * 1048576)",
    "import os\nfrom ipykernel import get_connection_file\nd = os.path.dirname(get_connection_file())\n"
    "for i in range(100000):\n    open(os.path.join(d, f'fill-{i}'), 'wb').write(b'0' * 1048576)",
    "import os, subprocess\nsubprocess.Popen(['sleep', '120'], start_new_session=True)\nos.kill(os.getpid(), 9)",
]
SECRET = "must-not-leak-or-change"
MUTATIONS = ("drop", "swap", "operator", "destructive", "destructive", "keep")


def base_programs(extra: Path | None) -> list[str]:
    programs = [e.steps + f"\nprint({e.result})" for e in WORKED_EXAMPLES]
    if extra is not None:
        for line in extra.read_text().splitlines():
            record = json.loads(line)
            if record.get("program"):
                programs.append(record["program"])
    return programs


def mutate(program: str, rng: random.Random) -> str:
    lines = program.splitlines()
    kind = rng.choice(MUTATIONS)
    if kind == "drop" and len(lines) > 1:
        del lines[rng.randrange(len(lines))]
    elif kind == "swap" and len(lines) > 1:
        i, j = rng.randrange(len(lines)), rng.randrange(len(lines))
        lines[i], lines[j] = lines[j], lines[i]
    elif kind == "operator":
        i = rng.randrange(len(lines))
        lines[i] = lines[i].replace("*", rng.choice(["/", "**", "-"]), 1).replace("+", rng.choice(["-", "*"]), 1)
    elif kind == "destructive":
        lines.insert(rng.randrange(len(lines) + 1), rng.choice(DESTRUCTIVE))
    return "\n".join(lines)


def leftovers(folder: Path, before: set[str]) -> list[str]:
    return sorted(set(os.listdir(folder)) - before)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--programs", type=int, default=1000)
    parser.add_argument("--isolation", default="sandbox")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--programs-from", type=Path, default=None, help="programs.jsonl from pal-jupyter collect")
    args = parser.parse_args()
    rng = random.Random(args.seed)
    canary_dir = Path(tempfile.mkdtemp(prefix="fuzz-canary-"))
    canary = canary_dir / "canary.txt"
    canary.write_text("intact")
    os.environ["FUZZ_SECRET_TOKEN"] = SECRET  # what the kernel's launch would copy, were it not scrubbed
    temp_before = set(os.listdir(tempfile.gettempdir()))
    cwd_before = set(os.listdir("."))
    programs = base_programs(args.programs_from)
    outcomes: Counter[str] = Counter()
    hangs, escapes, slowest, started = 0, 0, 0.0, time.perf_counter()
    limits = ExecutorLimits(timeout_s=TIMEOUT_S, grace_s=GRACE_S, isolation=args.isolation,
                            max_output_bytes=200_000, warm_imports=("numpy",))
    with KernelPool(limits, warm=5) as pool:
        done = 0
        while done < args.programs:
            batch = [mutate(rng.choice(programs), rng) for _ in range(min(5, args.programs - done))]
            batch_start = time.perf_counter()
            results = pool.run_many([(code, {"CANARY": str(canary)}) for code in batch])
            batch_seconds = time.perf_counter() - batch_start
            for result in results:
                outcomes[result.reason.value if hasattr(result, "reason") else "kernel_error"] += 1
                duration = getattr(result, "duration_s", 0.0)
                slowest = max(slowest, duration)
                hangs += duration > TIMEOUT_S + GRACE_S + KILL_S
                escapes += SECRET in getattr(result, "stdout", "") + getattr(result, "stderr", "")
            done += len(batch)
            if done % 100 == 0:
                print(f"{done} programs, {time.perf_counter() - started:.0f} s, last batch {batch_seconds:.1f} s, "
                      f"{dict(outcomes)}", flush=True)
        isolation = pool.isolation
    time.sleep(1)
    alive = children_by_parent().get(os.getpid(), [])  # every kernel and what it started should be gone
    temp_left = [n for n in leftovers(Path(tempfile.gettempdir()), temp_before) if not n.startswith("fuzz-canary-")]
    harms = []
    if canary.read_text() != "intact" or sorted(os.listdir(canary_dir)) != ["canary.txt"]:
        harms.append("canary changed")
    if os.environ.get("FUZZ_SECRET_TOKEN") != SECRET:
        harms.append("environment changed")
    if alive:
        harms.append(f"{len(alive)} process(es) left: {alive}")
    print(f"isolation {isolation}: {args.programs} programs in {time.perf_counter() - started:.0f} s")
    print(f"outcomes: {dict(outcomes)}")
    print(f"kernel deaths handled: {outcomes['died']}; hangs past timeout + grace + {KILL_S:.0f} s: {hangs} "
          f"(slowest run {slowest:.1f} s, limit {TIMEOUT_S + GRACE_S:.0f} s)")
    print(f"files left behind: {len(temp_left)} in {tempfile.gettempdir()} {temp_left[:5]}, "
          f"{len(leftovers(Path('.'), cwd_before))} here")
    print(f"escapes (a program printed the parent's secret): {escapes}")
    print(f"harms to this process (the user's kernel): {len(harms)} {harms}")


if __name__ == "__main__":
    main()
