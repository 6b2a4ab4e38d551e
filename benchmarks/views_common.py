"""What the views benchmarks share: the suites, asking a view, and reading a collected program back.

Not a command. ``collect_views.py``, ``score_views.py``, ``bench_repairs.py``, ``bench_turns.py`` and
``calibrate.py`` (all in this folder) import it: the questions of each suite (:func:`_rows`), one view
asked and its programs run in a child kernel (:func:`_ask`, :func:`_program`), a recorded program
rebuilt as the product reads it (:func:`_execution`, :class:`Candidate`, :func:`_words_program`) and
the CPU as every run prints it (:func:`_cpu`).
"""

from __future__ import annotations

import dataclasses
import os
import time
from pathlib import Path
from typing import Any

from pal_jupyter.backends import GenerationOptions, generate_candidates
from pal_jupyter.engine import reasoning
from pal_jupyter.engine.grading import is_correct
from pal_jupyter.engine.extraction import extract_code
from pal_jupyter.engine.records import Program
from pal_jupyter.engine.vote import read_answer
from pal_jupyter.errors import NoCodeError
from pal_jupyter.evaluation.dataframes import SUITES, suite_rows
from pal_jupyter.evaluation.runner import read_rows
from pal_jupyter.kernels import ExecutionResult, KernelPool
from pal_jupyter.kernels.charts import chart_from_json
from pal_jupyter.kernels.results import ErrorInfo, StopReason

GSM8K = Path(__file__).resolve().parents[2] / "shared" / "data" / "gsm8k" / "test.jsonl"
USES = {q.question: q.uses for questions in SUITES.values() for q in questions}  # the frames a question is handed
DATA_SUITES = tuple(SUITES)
MAX_TOKENS = 512  # as the product asked until now: the collected lengths say what a cap would cost


#: The repairs of the first view's program: collected only where it failed.
REPAIRS = ("fix", "fixidioms")


#: One-line questions (written for this benchmark, not taken from any training or prompt set).
ONE_LINERS = (
    ("What is 17 times 23?", 391),
    ("What is 15% of 80?", 12),
    ("How many seconds are in 3 hours?", 10800),
    ("If a train travels 60 mph for 2.5 hours, how many miles does it go?", 150),
    ("What is the average of 4, 8 and 15?", 9),
    ("A shirt costs $20 and is 25% off. What does it cost now, in dollars?", 15),
    ("How many minutes are in a week?", 10080),
    ("What is 2 to the power of 10?", 1024),
    ("What is the remainder when 100 is divided by 7?", 2),
    ("How many metres are in 5.5 kilometres?", 5500),
)


# ------------------------------------------------------------------------------------------ ask

def _program(reply: str, pool: KernelPool, variables: dict[str, Any]) -> dict[str, Any]:
    """Run the program in ``reply`` and keep what the scoring needs (images reduced to their mime)."""
    try:
        code = extract_code(reply).code
    except NoCodeError:
        return {"reply": reply, "code": None}
    result = pool.run(code, variables)
    outputs = [{"output_type": b.get("output_type"), "data": {k: ("" if k.startswith("image/") else v)
                                                                for k, v in (b.get("data") or {}).items()}}
               for b in result.outputs]
    error = None if result.error is None else [result.error.ename, result.error.evalue[:300]]
    charts = None if result.charts is None else [dataclasses.asdict(chart) for chart in result.charts]
    return {"reply": reply, "code": code, "reason": result.reason.value, "stdout": result.stdout[-3000:],
            "outputs": outputs, "error": error, "run_s": round(result.duration_s, 3), "charts": charts}


def _ask(backend: Any, messages: list[dict[str, str]], n: int, options: GenerationOptions,
         pool: KernelPool | None, variables: dict[str, Any], key: str | None = None) -> dict[str, Any]:
    """Ask one view; ``key``: the prompt cache it keeps to, as the product's view of that name does
    (so that views collected side by side cost what they cost in the product's order)."""
    options = dataclasses.replace(options, cache_key=key)
    start, cpu = time.perf_counter(), time.process_time()
    replies = generate_candidates(backend, messages, n, options)
    seconds = time.perf_counter() - start
    # llama.cpp's threads run in this process: CPU seconds over wall seconds near its thread count
    # says nothing else competed for the cores while this view was written.
    view: dict[str, Any] = {"seconds": round(seconds, 2), "cpu_s": round(time.process_time() - cpu, 2),
                            "tokens": [r.completion_tokens for r in replies],
                            # llama.cpp's own counts per row: prompt tokens prefilled (prompt_n) and
                            # reused from its cache (cache_n), tokens decoded, and its milliseconds
                            "timings": [{k: t.get(k) for k in ("prompt_n", "cache_n", "prompt_ms", "predicted_n",
                                                               "predicted_ms")} for t in backend.last_timings],
                            "prompt_tokens": replies[0].prompt_tokens}
    if pool is not None:
        view["programs"] = [_program(r.text, pool, variables) for r in replies]
    else:
        view["texts"] = [r.text for r in replies]
    return view


def _rows(suite: str, offset: int, limit: int | None) -> list[dict[str, Any]]:
    if suite in DATA_SUITES:
        return suite_rows(suite=suite)[offset:offset + limit if limit else None]
    if suite == "one-liners":
        return [{"question": q, "answer": a} for q, a in ONE_LINERS][offset:offset + limit if limit else None]
    return read_rows(GSM8K, limit=limit, offset=offset)


# ------------------------------------------------------------------------------------------ read back

def _execution(program: dict[str, Any]) -> ExecutionResult | None:
    if program.get("code") is None:
        return None
    error = program.get("error")
    charts = program.get("charts")
    return ExecutionResult(StopReason(program["reason"]), stdout=program.get("stdout", ""),
                           outputs=program.get("outputs", []),
                           error=ErrorInfo(error[0], error[1], "") if error else None,
                           charts=None if charts is None else [chart_from_json(c) for c in charts])


class Candidate:
    """One collected program, read the product's way."""

    def __init__(self, view: str, program: dict[str, Any], expected: Any):
        self.view = view
        self.program = Program(index=1, kind="initial", messages=[], code=program.get("code"))
        self.program.execution = _execution(program)
        self.program.program_answer = read_answer(self.program.execution)
        self.right = is_correct(self.program.program_answer, self.program.execution, expected)
        self.words = program.get("code") == WORDS_CODE


WORDS_CODE = "# the answer in words"


def _words_program(text: str) -> dict[str, Any]:
    """A words answer as a program that printed the number it ends on (none: a program that printed nothing)."""
    answer = reasoning.read_words_answer(text)
    return {"code": WORDS_CODE, "reason": "ok", "stdout": f"{answer.text}\n" if answer else "",
            "outputs": [], "error": None}


def _cpu() -> str:
    flags = set()
    model = ""
    for line in Path("/proc/cpuinfo").read_text().splitlines():
        if line.startswith("model name") and not model:
            model = line.split(":", 1)[1].strip()
        if line.startswith("flags"):
            flags.update(line.split(":", 1)[1].split())
    wanted = [f for f in ("avx2", "avx512f", "avx512_bf16", "amx_bf16") if f in flags]
    return f"{model}, {os.cpu_count()} cores, {' '.join(wanted)}"
