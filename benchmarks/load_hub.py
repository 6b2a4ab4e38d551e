"""A class behind a real JupyterHub: per-student latency of a ``%%pal --tutor`` turn for 1, 3, 10 students.

    python benchmarks/load_hub.py                        # vLLM with the lite model, 1, 3 and 10 students
    python benchmarks/load_hub.py --server openai:default@http://127.0.0.1:8000/v1 --users 1,3,10,30

The same hub as ``tests/test_hub.py`` (JupyterHub, its proxy, the shared-password login, the local
spawner, the read-only class policy; ``make hub-deps``), one model server. Each level adds N new
students: each logs in, starts a server and a kernel (all at once), and when every kernel is up
they all send a ``%%pal --tutor`` cell at the same moment over their kernel's websocket, through
the proxy, as JupyterLab would. A turn is from sending the cell to the kernel's idle after it:
the student's first question, so it includes what a first question costs (the kernel's pool of
child kernels, the connection to the model server). Printed per level: median, p90 and max
seconds, and how the turns ended (hints, the tutor not sure, errors). The level's servers are
stopped before the next level starts. The script stops by itself: a turn that passes
``--max-seconds`` is counted as unfinished.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))  # the hub helpers the test uses

from hub import ClassHub, Student, final_text, missing_parts  # noqa: E402
from model_server import free_port  # noqa: E402

# Short word problems of one difficulty (two or three steps), one per student.
QUESTIONS = [
    "Tom has 3 boxes with 12 pencils in each box. He gives 5 pencils away. How many pencils does he have left?",
    "A shop sells pens at 4 dollars each. Mia buys 6 pens and pays with a 50 dollar note. How much change is that?",
    "A farmer has 48 eggs and puts them in cartons of 6. He sells 5 cartons. How many cartons are left?",
    "A bus has 40 seats. 27 people get on, then 9 get off. How many seats are empty?",
    "Sara reads 15 pages a day for 4 days and 20 pages on the fifth day. How many pages does she read in all?",
    "A rope is 90 cm long. Lea cuts off 3 pieces of 18 cm each. How long is the rope now?",
    "A class has 28 students. Half of them walk to school and 5 come by bike. How many come another way?",
    "Ben saves 7 dollars a week for 8 weeks, then spends 19 dollars. How much does he have left?",
    "A garden has 6 rows of 14 tulips. 11 tulips are picked. How many tulips are left?",
    "A baker makes 5 trays of 16 rolls and sells 63 rolls. How many rolls are left?",
]


@dataclass
class Level:
    users: int
    latencies: list[float] = field(default_factory=list)
    outcomes: dict[str, int] = field(default_factory=dict)
    ready_s: float = 0.0

    def row(self) -> str:
        done = self.latencies
        median = statistics.median(done) if done else float("nan")
        p90 = sorted(done)[min(len(done) - 1, round(0.9 * (len(done) - 1)))] if done else float("nan")
        ended = ", ".join(f"{count} {kind}" for kind, count in sorted(self.outcomes.items()))
        return (f"| {self.users} | {len(done)} | {median:.1f} | {p90:.1f} | {max(done, default=float('nan')):.1f} | "
                f"{ended} | {self.ready_s:.0f} |")


HEADER = ("| users at once | turns | median s | p90 s | max s | turns ended | servers + kernels ready after s |\n"
          "|---|---|---|---|---|---|---|")


def outcome(text: str, errors: bool) -> str:
    """How a tutor turn ended, from the cell's text."""
    if errors:
        return "error"
    if "Hint 1" in text:
        return "hints"
    if "I am not sure about this one" in text:
        return "not sure"
    return "other"


async def turn(student: Student, question: str, max_seconds: float) -> tuple[float | None, str]:
    start = time.perf_counter()
    try:
        outputs = await student.execute(f"%%pal --tutor\n{question}", timeout=max_seconds)
    except asyncio.TimeoutError:
        return None, "unfinished"
    errors = any(o["output_type"] == "error" for o in outputs)
    return time.perf_counter() - start, outcome(final_text(outputs), errors)


async def run_level(hub: ClassHub, first: int, users: int, max_seconds: float) -> Level:
    level = Level(users)
    names = [f"student{first + i:02d}" for i in range(users)]
    await hub.create_users(names)
    start = time.perf_counter()
    students = await asyncio.gather(*(hub.student(name) for name in names))
    level.ready_s = time.perf_counter() - start
    try:
        results = await asyncio.gather(*(turn(s, QUESTIONS[i % len(QUESTIONS)], max_seconds)
                                         for i, s in enumerate(students)))
    finally:
        for student in students:
            student.close()
        await asyncio.gather(*(hub.stop_server(name) for name in names))
    for seconds, kind in results:
        if seconds is not None:
            level.latencies.append(seconds)
        level.outcomes[kind] = level.outcomes.get(kind, 0) + 1
    return level


def cpu_line() -> str:
    """The CPU's name and the flags that decide a CPU model server's speed."""
    text = Path("/proc/cpuinfo").read_text()
    name = next((line.split(":", 1)[1].strip() for line in text.splitlines() if line.startswith("model name")), "?")
    flags = set(next((line for line in text.splitlines() if line.startswith("flags")), "").split())
    present = [flag for flag in ("avx2", "avx512f", "avx512_bf16", "amx_bf16") if flag in flags]
    return f"CPU: {name}, {os.cpu_count()} cores; flags: {' '.join(present) or 'none of avx2/avx512f/avx512_bf16/amx'}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--users", default="1,3,10", help="class sizes, one level each")
    where = parser.add_mutually_exclusive_group()
    where.add_argument("--serve", default="lite", help="start vLLM on this model (preset or directory)")
    where.add_argument("--server", default=None, help="an already running server: openai:NAME@URL")
    parser.add_argument("--max-seconds", type=float, default=900, help="the longest one turn may take")
    args = parser.parse_args()
    if missing_parts():
        sys.exit(missing_parts())
    from pal_jupyter.classroom.vllm_server import VllmServer

    server = None
    if not args.server:
        server = VllmServer.for_model(args.serve, port=free_port(), kv_cache_gib=4)
        server.start()
        print(f"vLLM ({args.serve}, {server.dtype}) ready in {server.wait_ready():.0f} s", flush=True)
    levels: list[Level] = []
    try:
        with ClassHub(Path(tempfile.mkdtemp(prefix="pal-load-hub-")) / "hub", args.server or server.source) as hub:
            first = 1
            for users in map(int, args.users.split(",")):
                levels.append(asyncio.run(run_level(hub, first, users, args.max_seconds)))
                first += users
                print(f"{HEADER}\n{levels[-1].row()}", flush=True)
    finally:
        if server:
            server.stop()
    print(f"\n{cpu_line()}\nmodel server: {args.server or server.source}; one %%pal --tutor turn per student, "
          f"all at once; the student's first question\n{HEADER}")
    for level in levels:
        print(level.row())


if __name__ == "__main__":
    main()
