"""The ``pal-jupyter`` command: ask a question, benchmark a data set, export traces, list models."""

from __future__ import annotations

import argparse
import json
import logging
import os
import sys
import time
from pathlib import Path
from typing import Any, TextIO

from . import presets
from .errors import PalError
from .executor import ExecutorLimits, KernelPool
from .loop import SolveObserver, solve
from .model import GenerationOptions, load_model
from .records import Attempt, Session, to_jsonable
from .trace import TraceWriter, default_trace_path, trace_to_leti

log = logging.getLogger("pal_jupyter")


class ConsoleObserver(SolveObserver):
    """Shows each attempt as it happens: streamed code, output, error, explanation."""

    def __init__(self, stream: TextIO = sys.stdout, stream_tokens: bool = True):
        self.out = stream
        self.stream_tokens = stream_tokens
        self.color = stream.isatty() and "NO_COLOR" not in os.environ

    def _style(self, text: str, code: str) -> str:
        return f"\033[{code}m{text}\033[0m" if self.color else text

    def _print(self, text: str = "") -> None:
        print(text, file=self.out, flush=True)

    def attempt_started(self, attempt: Attempt) -> None:
        label = "writing a program" if attempt.kind == "initial" else "repairing from the error"
        self._print(self._style(f"── Attempt {attempt.index}: {label} ──", "1;36"))

    def token(self, attempt: Attempt, text: str) -> None:
        if self.stream_tokens:
            print(text, end="", file=self.out, flush=True)

    def code_ready(self, attempt: Attempt) -> None:
        if self.stream_tokens:
            self._print()
        else:
            if attempt.explanation:
                self._print(f"Explanation: {attempt.explanation}")
            self._print(attempt.code or "")
        self._print(self._style("Running it in a fresh kernel ...", "2"))

    def output(self, attempt: Attempt, output: dict[str, Any]) -> None:
        kind = output.get("output_type")
        if kind == "stream":
            print(output.get("text", ""), end="", file=self.out, flush=True)
        elif kind in ("display_data", "execute_result"):
            data = output.get("data", {})
            if "text/plain" in data and "image/png" not in data:
                self._print(str(data["text/plain"]))
            else:
                self._print(self._style(f"[{', '.join(sorted(data))}]", "2"))

    def attempt_finished(self, attempt: Attempt) -> None:
        if attempt.code is None:
            self._print(self._style(f"No code in the reply: {attempt.no_code_reason}", "33"))
        elif attempt.execution is not None and attempt.execution.error is not None:
            self._print(self._style(attempt.execution.error.traceback.strip(), "31"))
        elif attempt.correct is False:
            self._print(self._style("The program ran but its answer is wrong.", "33"))
        timing = f"model {attempt.generate_s:.1f} s, run {attempt.execute_s:.2f} s"
        verdict = self._style("ok", "32") if attempt.good else self._style("failed", "31")
        self._print(self._style(f"[attempt {attempt.index}: {verdict}; {timing}]", "2"))

    def session_finished(self, session: Session) -> None:
        if session.succeeded:
            answer = session.answer if session.answer is not None else "(the program ran; see its output above)"
            self._print(self._style(f"Answer: {answer}", "1;32"))
        else:
            self._print(self._style(f"No working program after {len(session.attempts)} attempt(s).", "1;31"))


def _add_model_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--model", default=os.environ.get("PAL_JUPYTER_MODEL", presets.DEFAULT_MODEL),
                        help="preset (default, lite), model directory, .gguf file or Hugging Face id")
    parser.add_argument("--device", default="auto", help="auto (GPU when present), cpu, cuda, cuda:1 ...")
    parser.add_argument("--dtype", default="auto", help="auto (bf16 on GPU, fp32 on CPU), float32, bfloat16")
    parser.add_argument("--max-attempts", type=int, default=3, help="attempts per question, repairs included")
    parser.add_argument("--max-new-tokens", type=int, default=512)
    parser.add_argument("--temperature", type=float, default=0.0, help="0 = greedy (default)")
    parser.add_argument("--seed", type=int, default=None)
    parser.add_argument("--timeout", type=float, default=30.0, help="seconds a program may run")
    parser.add_argument("--memory-gib", type=float, default=2.0, help="address-space limit of the child kernel")


def _generation(args: argparse.Namespace) -> GenerationOptions:
    return GenerationOptions(max_new_tokens=args.max_new_tokens, temperature=args.temperature, seed=args.seed)


def _limits(args: argparse.Namespace) -> ExecutorLimits:
    return ExecutorLimits(timeout_s=args.timeout, memory_bytes=int(args.memory_gib * 1024**3))


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="pal-jupyter", description=__doc__)
    parser.add_argument("-v", "--verbose", action="store_true", help="log progress details")
    commands = parser.add_subparsers(dest="command", required=True)

    ask = commands.add_parser("ask", help="answer one question with a program, repairing it if it fails")
    ask.add_argument("question", nargs="+")
    _add_model_options(ask)
    ask.add_argument("--trace", default=None, help=f"JSONL trace file (default: {default_trace_path()})")
    ask.add_argument("--no-trace", action="store_true", help="do not record attempts")
    ask.add_argument("--quiet", action="store_true", help="no token streaming; show the code once written")
    ask.add_argument("--json", action="store_true", help="print the whole session as JSON at the end")

    bench = commands.add_parser("bench", help="run the loop over a JSONL data set and report figures")
    bench.add_argument("--data", required=True, help="JSONL with question/input and answer/target")
    bench.add_argument("--limit", type=int, default=50)
    bench.add_argument("--offset", type=int, default=0)
    bench.add_argument("--out", default=None, help="where to write the JSON report")
    bench.add_argument("--trace", default=None, help="also write every attempt to this JSONL trace")
    bench.add_argument("--check-answers", action="store_true",
                       help="feed 'wrong answer' back for repair too (oracle feedback, reported as such)")
    _add_model_options(bench)

    leti = commands.add_parser("leti", help="turn a trace file into LeTI training text")
    leti.add_argument("trace")

    commands.add_parser("models", help="list the offline presets and whether they are installed")

    report = commands.add_parser("report", help="build a teacher's HTML report from a folder of class logs")
    report.add_argument("logdir", help="folder of per-student JSONL class logs (TeacherPolicy.log_dir)")
    report.add_argument("--out", default="report.html", help="HTML file to write (default: report.html)")
    report.add_argument("--no-progress", action="store_true", help="no progress bar while reading logs")
    return parser


def cmd_ask(args: argparse.Namespace) -> int:
    observer = ConsoleObserver(stream_tokens=not args.quiet)
    trace = None if args.no_trace else TraceWriter(args.trace or default_trace_path())
    with KernelPool(_limits(args)) as pool:  # the kernel warms up while the model loads
        backend = _load(args)
        session = solve(
            " ".join(args.question), model=backend, executor=pool, max_attempts=args.max_attempts,
            generation=_generation(args), trace=trace, observer=observer,
        )
    if args.json:
        print(json.dumps(to_jsonable(session), indent=2, default=str))
    return 0 if session.succeeded else 1


def _load(args: argparse.Namespace) -> Any:
    if presets.find_preset(args.model) and not presets.is_prepared(args.model):
        print(f"First use of {args.model!r}: assembling and converting the model once into "
              f"{presets.cache_dir()} (about 1-2 minutes) ...", file=sys.stderr, flush=True)
    print(f"Loading model {args.model!r} ...", file=sys.stderr, flush=True)
    backend = load_model(args.model, device=args.device, dtype=args.dtype)
    print(f"Model ready on {backend.device} ({backend.dtype}) in {backend.load_seconds:.1f} s", file=sys.stderr, flush=True)
    return backend


def cmd_bench(args: argparse.Namespace) -> int:
    from tqdm import tqdm

    from .bench import format_summary, read_rows, run_benchmark, summarize, write_report

    rows = read_rows(args.data, args.limit, args.offset)
    if not rows:
        raise PalError(f"No rows in {args.data} (offset {args.offset}).")
    with KernelPool(_limits(args)) as pool:
        backend = _load(args)
        trace = TraceWriter(args.trace) if args.trace else None
        results = []
        progress = tqdm(total=len(rows), desc="questions", unit="q")
        for result in run_benchmark(rows, backend, pool, max_attempts=args.max_attempts,
                                    check_answers=args.check_answers, generation=_generation(args), trace=trace):
            results.append(result)
            progress.update()
            progress.set_postfix(correct=f"{sum(r.final_correct for r in results)}/{len(results)}")
        progress.close()
    summary = summarize(results, model=backend.name, load_seconds=getattr(backend, "load_seconds", 0.0),
                        check_answers=args.check_answers)
    summary.update(data=str(args.data), offset=args.offset, max_attempts=args.max_attempts, device=backend.device,
                   dtype=backend.dtype)
    print(format_summary(summary))
    out = Path(args.out or f"bench-results/{Path(args.data).stem}-{Path(str(backend.name)).name}-{time.strftime('%Y%m%d-%H%M%S')}.json")
    write_report(out, summary, results)
    print(f"report written to {out}")
    return 0


def cmd_leti(args: argparse.Namespace) -> int:
    for text in trace_to_leti(args.trace):
        print(text)
    return 0


def cmd_models(args: argparse.Namespace) -> int:
    for name, preset in presets.PRESETS.items():
        aliases = [a for a, target in presets.ALIASES.items() if target == name]
        try:
            presets.part_paths(preset)
            state = "installed"
        except PalError:
            state = f"not installed ({preset.install_hint()})"
        print(f"{name} [{', '.join(aliases)}]: {preset.description}; {state}")
    return 0


def cmd_report(args: argparse.Namespace) -> int:
    from .report import build_report  # pandas and matplotlib load only for this command

    print(build_report(args.logdir, args.out, progress=not args.no_progress))
    return 0


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    logging.basicConfig(level=logging.INFO if args.verbose else logging.WARNING, format="%(levelname)s %(name)s: %(message)s")
    handler = {"ask": cmd_ask, "bench": cmd_bench, "leti": cmd_leti, "models": cmd_models,
               "report": cmd_report}[args.command]
    try:
        return handler(args)
    except PalError as exc:
        print(f"pal-jupyter: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("pal-jupyter: interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
