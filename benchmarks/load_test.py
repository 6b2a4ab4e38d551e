"""A class at once: N simulated students asking one model server, against N in-process models.

    python benchmarks/load_test.py --serve lite --students 1,5,15,30 --in-process 1,5
    python benchmarks/load_test.py --server openai:default@http://127.0.0.1:8000/v1 --students 5,15

Each student is a process of its own, like a student's notebook kernel: it connects to the
server (or, in-process, loads its own copy of the model, as every kernel would without a server),
warms its own child-kernel pool, says it is ready, and at one signal every student asks a GSM8K
question at the same moment with ``solve()`` (the worst minute of a class: everybody at once),
then the next question, ``--questions`` in all. Printed per level: questions/min, the p50 and p95
seconds from a question to its answer, the answers that worked, and the peak resident memory of
the server's process tree and of all the students' trees (the kernels included; PSS: a page
shared by several processes is split between them, so the sums are what the trees cost).

The test stops by itself: a level ends when every student is done or after ``--max-seconds``,
whichever comes first; students still asking then are killed and counted as unfinished. An
in-process level runs only when the memory one student took at N=1, times N, fits in 80 % of
the memory available.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import statistics
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

import psutil

DATA = Path(__file__).resolve().parents[1].parent / "shared" / "data" / "gsm8k" / "test.jsonl"


# -- one student (a process of its own) ----------------------------------------------------------

def student(source: str, questions: list[str], samples: int, server_timeout: float) -> None:
    """Load, warm up, print READY, wait for GO on stdin, answer the questions, print one JSON line each."""
    from pal_jupyter.backends import load_model
    from pal_jupyter.engine.loop import solve
    from pal_jupyter.engine.options import Settings
    from pal_jupyter.kernels import KernelPool

    settings = Settings(model=source, samples=samples, server_timeout=server_timeout)  # a student's defaults
    limits = settings.limits()
    with KernelPool(limits) as pool:
        model = load_model(source, dtype=settings.dtype, server_timeout=server_timeout)
        pool.ensure_warm(samples)
        pool.wait_warm(limits.startup_timeout_s)
        print(json.dumps({"ready": True}), flush=True)
        if sys.stdin.readline().strip() != "GO":
            return
        for question in questions:
            start = time.perf_counter()
            try:
                session = solve(question, model=model, executor=pool, samples=samples, limits=limits,
                                max_attempts=settings.max_attempts, generation=settings.generation())
                outcome = {"ok": session.succeeded, "answer": session.answer, "rounds": session.rounds,
                           "model_s": session.generate_seconds}
            except Exception as exc:  # a server error is a result of the load test, not a crash of it
                outcome = {"ok": False, "error": f"{type(exc).__name__}: {exc}"}
            print(json.dumps({"seconds": time.perf_counter() - start, **outcome}), flush=True)


# -- the class ------------------------------------------------------------------------------------

@dataclass
class Level:
    mode: str  # "server" or "in-process"
    students: int
    seconds: float = 0.0
    latencies: list[float] = field(default_factory=list)
    worked: int = 0
    errors: list[str] = field(default_factory=list)
    unfinished: int = 0
    ready_s: float = 0.0
    peak_server_gib: float = 0.0
    peak_clients_gib: float = 0.0

    def row(self) -> str:
        done = len(self.latencies)
        rate = done / self.seconds * 60 if self.seconds else 0.0
        p50 = statistics.median(self.latencies) if self.latencies else float("nan")
        p95 = _percentile(self.latencies, 95)
        server = f"{self.peak_server_gib:.2f}" if self.mode == "server" else "-"
        return (f"| {self.mode} | {self.students} | {done} | {self.worked} | {self.unfinished} | {rate:.1f} | "
                f"{p50:.1f} | {p95:.1f} | {server} | {self.peak_clients_gib:.2f} | "
                f"{self.peak_clients_gib / self.students:.2f} | {self.ready_s:.0f} |")


HEADER = ("| mode | students | answered | worked | unfinished | questions/min | p50 s | p95 s | server GiB | "
          "students GiB | per student GiB | ready after s |\n|---|---|---|---|---|---|---|---|---|---|---|---|")


def _percentile(values: list[float], q: float) -> float:
    if not values:
        return float("nan")
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q / 100 * (len(ordered) - 1)))]


def _tree_memory(pid: int) -> int:
    """Proportional set size of a process and its descendants: shared pages are split between the
    processes that share them, so the sum is what the tree costs (RSS would count them again)."""
    total = 0
    try:
        root = psutil.Process(pid)
        for process in [root, *root.children(recursive=True)]:
            try:
                total += process.memory_full_info().pss
            except (psutil.NoSuchProcess, psutil.AccessDenied):
                pass
    except psutil.NoSuchProcess:
        pass
    return total


class MemoryWatch(threading.Thread):
    """Samples the peak memory (PSS) of the server's tree and of the students' trees every second."""

    def __init__(self, server_pid: int | None, student_pids: list[int]) -> None:
        super().__init__(daemon=True)
        self.server_pid, self.student_pids = server_pid, student_pids
        self.peak_server = self.peak_students = 0
        self.stopped = threading.Event()

    def run(self) -> None:
        while not self.stopped.wait(1.0):
            if self.server_pid:
                self.peak_server = max(self.peak_server, _tree_memory(self.server_pid))
            self.peak_students = max(self.peak_students, sum(_tree_memory(pid) for pid in self.student_pids))


def run_level(mode: str, students: int, source: str, questions: list[str], args: argparse.Namespace,
              server_pid: int | None) -> Level:
    level = Level(mode, students)
    per_student = args.questions
    procs = []
    for i in range(students):
        mine = [questions[(i * per_student + j) % len(questions)] for j in range(per_student)]
        command = [sys.executable, __file__, "--student", source, "--samples", str(args.samples),
                   "--server-timeout", str(args.server_timeout), "--questions-json", json.dumps(mine)]
        errors = open(Path(args.log_dir) / f"{mode}-{students}-{i}.log", "w")
        procs.append(subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=errors,
                                      text=True, start_new_session=True, env=dict(os.environ, HF_HUB_OFFLINE="1")))
    watch = MemoryWatch(server_pid, [p.pid for p in procs])
    watch.start()
    start = time.perf_counter()
    deadline = start + args.max_seconds
    try:
        for proc in procs:  # every student ready (model loaded, kernel warm) before anyone asks
            line = _read_line(proc, deadline)
            if not line or not json.loads(line).get("ready"):
                raise RuntimeError(f"a student did not get ready (its log: {args.log_dir}): {line!r}")
        level.ready_s = time.perf_counter() - start
        go = time.perf_counter()
        for proc in procs:
            proc.stdin.write("GO\n")
            proc.stdin.flush()
        deadline = go + args.max_seconds
        finished_at = go
        for proc in procs:
            for _ in range(per_student):
                line = _read_line(proc, deadline)
                if not line:
                    level.unfinished += 1
                    continue
                record = json.loads(line)
                level.latencies.append(record["seconds"])
                level.worked += bool(record["ok"])
                if record.get("error"):
                    level.errors.append(record["error"])
                finished_at = max(finished_at, go + record["seconds"])
        level.seconds = (finished_at if not level.unfinished else deadline) - go
    finally:
        for proc in procs:
            _stop(proc)
        watch.stopped.set()
        watch.join()
    level.peak_server_gib = watch.peak_server / 2**30
    level.peak_clients_gib = watch.peak_students / 2**30
    return level


def _read_line(proc: subprocess.Popen[str], deadline: float) -> str:
    """The student's next line, or '' when the deadline passes first (the read runs in a thread)."""
    box: list[str] = []
    reader = threading.Thread(target=lambda: box.append(proc.stdout.readline()), daemon=True)
    reader.start()
    reader.join(max(0.0, deadline - time.perf_counter()))
    return box[0].strip() if box else ""


def _stop(proc: subprocess.Popen[str]) -> None:
    try:
        if proc.poll() is None:
            proc.stdin.close()
        proc.wait(10)
    except (subprocess.TimeoutExpired, BrokenPipeError, OSError):
        try:
            os.killpg(proc.pid, signal.SIGKILL)  # the student and its kernels
        except ProcessLookupError:
            pass
        proc.wait()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    where = parser.add_mutually_exclusive_group()
    where.add_argument("--serve", default=None, help="start vLLM on this model (preset, directory) for the test")
    where.add_argument("--server", default=None, help="an already running server: openai:NAME@URL")
    parser.add_argument("--students", default="1,5,15,30", help="class sizes to try against the server")
    parser.add_argument("--in-process", default="", help="class sizes to try with a model in every student")
    parser.add_argument("--in-process-model", default=None, help="the model each student loads (default: --serve's)")
    parser.add_argument("--questions", type=int, default=1, help="questions each student asks, one after another")
    parser.add_argument("--samples", type=int, default=1, help="programs per question (the class's --samples)")
    parser.add_argument("--max-seconds", type=float, default=600, help="the longest a level may take")
    parser.add_argument("--server-timeout", type=float, default=600)
    parser.add_argument("--data", default=str(DATA))
    parser.add_argument("--log-dir", default="load-test-logs", help="each student's stderr goes here")
    parser.add_argument("--student", default=None, help=argparse.SUPPRESS)
    parser.add_argument("--questions-json", default="[]", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.student:
        return student(args.student, json.loads(args.questions_json), args.samples, args.server_timeout)

    from pal_jupyter.evaluation.runner import read_rows
    from pal_jupyter.classroom.vllm_server import VllmServer

    questions = [row["question"] for row in read_rows(args.data, limit=200)]
    Path(args.log_dir).mkdir(parents=True, exist_ok=True)
    levels: list[Level] = []
    server = None
    if args.serve:
        server = VllmServer.for_model(args.serve, kv_cache_gib=4)
        start = time.perf_counter()
        server.start()
        print(f"vLLM ready in {server.wait_ready():.0f} s ({time.perf_counter() - start:.0f} s)", flush=True)
    try:
        source = server.source if server else args.server
        if source:
            pid = server.process.pid if server else None
            for n in map(int, filter(None, args.students.split(","))):
                levels.append(run_level("server", n, source, questions, args, pid))
                print(HEADER.splitlines()[0] + "\n" + levels[-1].row(), flush=True)
    finally:
        if server:
            server.stop()
    local = args.in_process_model or args.serve or "lite"
    per_student_gib = None
    for n in map(int, filter(None, args.in_process.split(","))):
        available = psutil.virtual_memory().available / 2**30
        if per_student_gib and n * per_student_gib > 0.8 * available:
            print(f"in-process, {n} students: skipped, would need about {n * per_student_gib:.1f} GiB "
                  f"({per_student_gib:.2f} each at N=1) of {available:.1f} GiB available", flush=True)
            continue
        levels.append(run_level("in-process", n, local, questions, args, None))
        per_student_gib = per_student_gib or levels[-1].peak_clients_gib
        print(HEADER.splitlines()[0] + "\n" + levels[-1].row(), flush=True)
    print(f"\n{args.samples} program(s) per question, {args.questions} question(s) per student, all at once; "
          f"{os.cpu_count()} CPUs\n{HEADER}")
    for level in levels:
        print(level.row())
        for error in sorted(set(level.errors)):
            print(f"  {level.mode} N={level.students}: {level.errors.count(error)}x {error[:200]}")


if __name__ == "__main__":
    main()
