"""A tutor pack in class: how long a student waits for the first hint of a pack question, and
whether two students see the same hints.

    python benchmarks/bench_pack.py PACK [--students 2] [--questions 3]

Each student is a real IPython kernel (as a notebook's) with ``%load_ext pal_jupyter`` and
``%pal_pack PACK``; each asks the pack's first questions with ``%%pal --tutor -q``. The time is
from sending the cell to its reply, the first hint printed. No model is loaded: a pack question
needs none. Prints seconds per question (first, mean, max) and whether the hints shown were the same.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import tempfile
import time
from pathlib import Path

from jupyter_client import KernelManager

from pal_jupyter.classroom.pack import TutorPack


def _run(client: object, code: str, timeout: float = 120) -> str:
    """Execute ``code`` in the kernel; what it printed."""
    msg_id = client.execute(code)  # type: ignore[attr-defined]
    printed = []
    while True:
        msg = client.get_iopub_msg(timeout=timeout)  # type: ignore[attr-defined]
        if msg["parent_header"].get("msg_id") != msg_id:
            continue
        if msg["msg_type"] == "status" and msg["content"]["execution_state"] == "idle":
            return "".join(printed)
        if msg["msg_type"] == "stream":
            printed.append(msg["content"]["text"])
        elif msg["msg_type"] == "error":
            raise RuntimeError(f"{code!r}: {msg['content']['ename']}: {msg['content']['evalue']}")


def student(pack: Path, questions: list[str], logs: str) -> tuple[list[float], list[str]]:
    """One student's kernel asking ``questions``: seconds to the first hint, and what was shown."""
    manager = KernelManager(kernel_name="python3")
    manager.start_kernel(env={**os.environ, "PAL_JUPYTER_LOG_DIR": logs, "PAL_JUPYTER_TRACE": "/dev/null"})
    client = manager.blocking_client()
    client.start_channels()
    try:
        client.wait_for_ready(timeout=60)
        _run(client, f"%load_ext pal_jupyter\n%pal_pack {pack}")
        seconds, shown = [], []
        for question in questions:
            start = time.perf_counter()
            shown.append(_run(client, f"%%pal --tutor -q\n{question}"))
            seconds.append(time.perf_counter() - start)
        return seconds, shown
    finally:
        client.stop_channels()
        manager.shutdown_kernel(now=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("pack", type=Path)
    parser.add_argument("--students", type=int, default=2)
    parser.add_argument("--questions", type=int, default=3, help="the pack's first N questions with hints")
    args = parser.parse_args()
    pack = TutorPack.load(args.pack)
    questions = [q.question for q in pack.questions if q.hints][:args.questions]
    if not questions:
        raise SystemExit(f"{args.pack} has no question with hints")
    with tempfile.TemporaryDirectory() as logs:
        runs = [student(args.pack.resolve(), questions, logs) for _ in range(args.students)]
    every = [s for seconds, _ in runs for s in seconds]
    same = all(shown == runs[0][1] for _, shown in runs)
    print(json.dumps({"pack": str(args.pack), "students": args.students, "questions": len(questions),
                      "first_hint_s": {"first": round(runs[0][0][0], 3), "mean": round(statistics.mean(every), 3),
                                       "max": round(max(every), 3)},
                      "same_hints_for_every_student": same}, indent=1))


if __name__ == "__main__":
    main()
