"""The ``pal-jupyter`` command: ask a question, benchmark a data set, export traces, list models."""

from __future__ import annotations

import argparse
import json
import logging
import os
import sys
import time
from pathlib import Path
from collections.abc import Callable
from typing import Any, NoReturn, TextIO

from ..backends import SAMPLE_TEMPERATURE, GenerationOptions, load_model, presets
from ..engine import prompts
from ..engine.console import ConsoleObserver
from ..engine.loop import DEFAULT_SAMPLES, solve
from ..engine.options import samples_argument
from ..engine.records import to_jsonable
from ..engine.trace import TraceWriter, default_trace_path, trace_to_leti
from ..errors import PalError
from ..kernels import ExecutorLimits, KernelPool

log = logging.getLogger("pal_jupyter")


def _listed(kind: Callable[[str], Any]) -> Callable[[str], list[Any]]:
    """An argparse type for comma-separated lists (``--samples 1,5``): each item checked by ``kind``."""

    def parse(text: str) -> list[Any]:
        return [kind(item.strip()) for item in text.split(",") if item.strip()]

    return parse


def _dtype_option(text: str) -> str:
    if text not in {"auto", "float32", "bfloat16", "float16"}:
        raise argparse.ArgumentTypeError(f"--dtype is one of auto, float32, bfloat16, float16, not {text!r}")
    return text


def _on_off(text: str) -> bool:
    if text not in {"on", "off"}:
        raise argparse.ArgumentTypeError(f"expected on or off, not {text!r}")
    return text == "on"


def _prompt_option(text: str) -> str:
    try:
        return prompts.prompt_style(text).name
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def _add_model_options(parser: argparse.ArgumentParser, *, lists: bool = False) -> None:
    """Options shared by ``ask`` and ``bench``; with ``lists``, samples/dtype/prompt take
    comma-separated values that the benchmark compares side by side."""
    parser.add_argument("--model", default=os.environ.get("PAL_JUPYTER_MODEL", presets.DEFAULT_MODEL),
                        help="preset (default, lite), model directory, .gguf file or Hugging Face id")
    parser.add_argument("--device", default="auto", help="auto (GPU when present), cpu, cuda, cuda:1 ...")
    also = " (several, comma-separated, are compared side by side)" if lists else ""
    parser.add_argument("--dtype", default=["auto"] if lists else "auto",
                        type=_listed(_dtype_option) if lists else _dtype_option,
                        help="auto (bf16 on a GPU or a CPU with AMX/AVX512-BF16, else fp32), float32, bfloat16" + also)
    parser.add_argument("--samples", "-k", default=[DEFAULT_SAMPLES] if lists else DEFAULT_SAMPLES,
                        type=_listed(samples_argument) if lists else samples_argument,
                        help=f"programs written and run per attempt; the answer most of them print wins "
                             f"(default {DEFAULT_SAMPLES})" + also)
    if lists:
        parser.add_argument("--prompt", default=[prompts.DEFAULT_STYLE], type=_listed(_prompt_option),
                            help=f"prompt style(s): {', '.join(prompts.PROMPT_STYLES)}" + also)
        parser.add_argument("--data-guard", default=[True], type=_listed(_on_off),
                            help="on: refuse programs that overwrite the data handed over (as users get); "
                                 "off: run them, to measure what the guard prevents" + also)
    parser.add_argument("--max-attempts", type=int, default=3, help="attempts per question, repairs included")
    parser.add_argument("--max-new-tokens", type=int, default=512)
    parser.add_argument("--temperature", type=_listed(float) if lists else float, default=[None] if lists else None,
                        help=f"default: greedy for one program, {SAMPLE_TEMPERATURE} when several are drawn" + also)
    parser.add_argument("--seed", type=int, default=None)
    parser.add_argument("--timeout", type=float, default=30.0, help="seconds a program may run")
    parser.add_argument("--memory-gib", type=float, default=2.0, help="address-space limit of the child kernel")


def _generation(args: argparse.Namespace) -> GenerationOptions:
    temperature = None if isinstance(args.temperature, list) else args.temperature  # bench: per config
    return GenerationOptions(max_new_tokens=args.max_new_tokens, temperature=temperature, seed=args.seed)


def _limits(args: argparse.Namespace) -> ExecutorLimits:
    return ExecutorLimits(timeout_s=args.timeout, memory_bytes=int(args.memory_gib * 1024**3))


class _Parser(argparse.ArgumentParser):
    """argparse, but a usage mistake is one line (and exit status 2), not a usage dump."""

    def error(self, message: str) -> NoReturn:
        self.exit(2, f"{self.prog}: {message} (see {self.prog} --help)\n")


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="pal-jupyter", description=__doc__)
    parser.add_argument("-v", "--verbose", action="store_true", help="log progress details")
    commands = parser.add_subparsers(dest="command", required=True, parser_class=_Parser)

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
    _add_model_options(bench, lists=True)

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
    with KernelPool(_limits(args)) as pool:  # the kernels warm up while the model loads
        backend = _load(args.model, args.device, args.dtype)
        session = solve(
            " ".join(args.question), model=backend, executor=pool, max_attempts=args.max_attempts,
            samples=args.samples, generation=_generation(args), trace=trace, observer=observer,
        )
    if args.json:
        print(json.dumps(to_jsonable(session), indent=2, default=str))
    return 0 if session.succeeded else 1


def _load(model: str, device: str, dtype: str) -> Any:
    if presets.find_preset(model) and not presets.is_prepared(model):
        print(f"First use of {model!r}: assembling and converting the model once into "
              f"{presets.cache_dir()} (about 1-2 minutes) ...", file=sys.stderr, flush=True)
    print(f"Loading model {model!r} ...", file=sys.stderr, flush=True)
    backend = load_model(model, device=device, dtype=dtype)
    print(f"Model ready on {backend.device} ({backend.dtype}) in {backend.load_seconds:.1f} s", file=sys.stderr, flush=True)
    return backend


def cmd_bench(args: argparse.Namespace) -> int:
    from tqdm import tqdm

    from ..benchmark.runner import Config, format_summaries, read_rows, run_benchmark, summarize, write_report

    rows = read_rows(args.data, args.limit, args.offset)
    if not rows:
        raise PalError(f"No rows in {args.data} (offset {args.offset}).")
    configs = [Config(samples=k, dtype=d, prompt=p, temperature=t, guard=g)
               for d in args.dtype for p in args.prompt for t in args.temperature for g in args.data_guard
               for k in args.samples]
    loaded: dict[str, Any] = {}

    def backend_for(config: Config) -> Any:
        if config.dtype not in loaded:
            loaded[config.dtype] = _load(args.model, args.device, config.dtype)
        return loaded[config.dtype]

    for dtype in args.dtype:  # load up front: loading is not part of any question's time
        backend_for(Config(dtype=dtype))
    with KernelPool(_limits(args), warm=max(args.samples)) as pool:
        trace = TraceWriter(args.trace) if args.trace else None
        results = []
        progress = tqdm(total=len(rows) * len(configs), desc="questions", unit="q")
        for result in run_benchmark(rows, backend_for, pool, configs, max_attempts=args.max_attempts,
                                    check_answers=args.check_answers, generation=_generation(args), trace=trace):
            results.append(result)
            progress.update()
            progress.set_postfix(_tally(results, configs))
        progress.close()
    summaries = []
    for config in configs:
        backend = backend_for(config)
        summary = summarize([r for r in results if r.config == config], model=backend.name,
                            load_seconds=getattr(backend, "load_seconds", 0.0), check_answers=args.check_answers)
        summary.update(data=str(args.data), offset=args.offset, max_attempts=args.max_attempts,
                       device=backend.device, dtype=backend.dtype)
        summaries.append(summary)
    print(format_summaries(summaries))
    stem = f"{Path(str(args.data)).stem}-{Path(str(args.model)).name}-{time.strftime('%Y%m%d-%H%M%S')}"
    for path in write_report(args.out or f"bench-results/{stem}.json", summaries, results):
        print(f"written: {path}")
    return 0


def _tally(results: list[Any], configs: list[Any]) -> dict[str, str]:
    """The progress bar's running score per config."""
    tally = {}
    for config in configs:
        done = [r for r in results if r.config == config]
        tally[f"k{config.samples}" + (f"-{config.dtype[:4]}" if len({c.dtype for c in configs}) > 1 else "")
              + (f"-{config.prompt}" if len({c.prompt for c in configs}) > 1 else "")
              + (f"-T{config.temperature:g}" if len({c.temperature for c in configs}) > 1 else "")
              + ("" if config.guard or len({c.guard for c in configs}) == 1 else "-noguard")] = \
            f"{sum(r.correct for r in done)}/{len(done)}"
    return tally


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
    from ..classroom.report import build_report  # pandas and matplotlib load only for this command

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
