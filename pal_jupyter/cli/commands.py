"""The ``pal-jupyter`` command: ask, bench, collect, train, compare, leti, models, doctor, report, prepare, serve."""

from __future__ import annotations

import argparse
import json
import logging
import os
import sys
import time
from pathlib import Path
from collections.abc import Callable
from typing import Any, NoReturn

from ..backends import choose_runtime, presets
from ..backends.huggingface import resolve_device, resolve_dtype
from .. import prompts
from ..engine.console import ConsoleObserver
from ..engine.isolation import fallback_note
from ..engine.loop import solve
from ..engine.options import OPTIONS, Settings
from ..engine.records import to_jsonable
from ..engine.trace import TraceWriter, default_trace_path
from ..errors import EmptyQuestionError, PalError, unexpected_error_message
from ..kernels import KernelPool, close_thread_loop

log = logging.getLogger("pal_jupyter")


def _listed(kind: Callable[[str], Any]) -> Callable[[str], list[Any]]:
    """An argparse type for comma-separated lists (``--samples 1,5``): each item checked by ``kind``."""

    def parse(text: str) -> list[Any]:
        return [kind(item.strip()) for item in text.split(",") if item.strip()]

    return parse


def _on_off(text: str) -> bool:
    if text not in {"on", "off"}:
        raise argparse.ArgumentTypeError(f"expected on or off, not {text!r}")
    return text == "on"


def _prompt_option(text: str) -> str:
    try:
        return prompts.prompt_style(text).name
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


# Options the benchmark compares side by side: several comma-separated values make several configs.
COMPARED = ("method", "samples", "max_programs", "second_opinion", "backend", "dtype", "temperature")


def _add_engine_options(parser: argparse.ArgumentParser, *, compare: bool = False) -> None:
    """Every option of :data:`OPTIONS`, with its one declaration; with ``compare``, the ones in
    :data:`COMPARED` take comma-separated lists."""
    also = " (several, comma-separated, are compared side by side)"
    for name, option in OPTIONS.items():
        default = default_model() if name == "model" else option.default
        if option.notebook_only:
            parser.add_argument(option.flag, dest=name, action=_NotebookOnly, nargs="?", default=default,
                                help=argparse.SUPPRESS)
        elif compare and name in COMPARED:
            parser.add_argument(*option.flags, option.flag, dest=name, type=_listed(option.parse), default=[default],
                                metavar=name.upper(), help=option.help + also)
        else:
            option.add_to(parser, default=default)
    if compare:
        parser.add_argument("--prompt", default=[None], type=_listed(_prompt_option),
                            help=f"prompt style(s): {', '.join(prompts.PROMPT_STYLES)}" + also)
        parser.add_argument("--data-guard", default=[True], type=_listed(_on_off),
                            help="on: refuse programs that overwrite the data handed over (as users get); "
                                 "off: run them, to measure what the guard prevents" + also)


class _NotebookOnly(argparse.Action):
    """An option that needs a notebook (``--context``: its last cells) is refused in one line that says
    so, rather than argparse's "unrecognized arguments", or being taken and quietly doing nothing."""

    def __call__(self, parser: argparse.ArgumentParser, namespace: argparse.Namespace, values: Any,
                 option_string: str | None = None) -> None:
        parser.error(f"{option_string} is for %%pal in a notebook, where it sets {OPTIONS[self.dest].help}; the "
                     "command line has no notebook cells to send")


def default_model() -> str:
    """The model a command uses when none is given: $PAL_JUPYTER_MODEL, else the default preset."""
    return os.environ.get("PAL_JUPYTER_MODEL", OPTIONS["model"].default)


def _settings(args: argparse.Namespace, **override: Any) -> Settings:
    """The checked settings of a command line (for ``bench``, ``override`` picks one config's values)."""
    values = {name: getattr(args, name) for name in OPTIONS}
    values.update(override)
    for name in COMPARED:
        if isinstance(values[name], list):
            values[name] = values[name][0]
    return Settings(**values)


class _Parser(argparse.ArgumentParser):
    """argparse, but a usage mistake is one line (and exit status 2), not a usage dump."""

    def error(self, message: str) -> NoReturn:
        self.exit(2, f"{self.prog}: {message} (see {self.prog} --help)\n")


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="pal-jupyter", description=__doc__)
    parser.add_argument("-v", "--verbose", action="store_true", help="log progress details")
    commands = parser.add_subparsers(dest="command", required=True, parser_class=_Parser)

    ask = commands.add_parser("ask", help="answer one question with programs: a vote, and repairs when all fail")
    ask.add_argument("question", nargs="+")
    _add_engine_options(ask)
    ask.add_argument("--trace", default=None, help=f"JSONL trace file (default: {default_trace_path()})")
    ask.add_argument("--no-trace", action="store_true", help="do not record the programs")
    ask.add_argument("--quiet", action="store_true", help="no token streaming; show the code once written")
    ask.add_argument("--json", action="store_true", help="print the whole session as JSON at the end")

    bench = commands.add_parser("bench", help="run the loop over a JSONL data set and report figures")
    bench.add_argument("--data", required=True, help="JSONL with question/input and answer/target")
    bench.add_argument("--limit", type=int, default=50)
    bench.add_argument("--offset", type=int, default=0)
    bench.add_argument("--out", default=None, help="where to write the JSON report")
    bench.add_argument("--trace", default=None, help="also write every program to this JSONL trace")
    bench.add_argument("--check-answers", action="store_true",
                       help="feed 'wrong answer' back for repair too (oracle feedback, reported as such)")
    _add_engine_options(bench, compare=True)

    collect = commands.add_parser("collect", help="write and run programs for questions with known answers "
                                                   "(training data; resumable)")
    collect.add_argument("--data", required=True, help="JSONL with question/input and answer/target (a train split)")
    collect.add_argument("--limit", type=int, default=None)
    collect.add_argument("--offset", type=int, default=0)
    collect.add_argument("--out", required=True, help="folder for programs.jsonl; run again to continue it")
    _add_engine_options(collect)
    collect.set_defaults(max_attempts=1)  # no repair: every program is the model's own first try

    train = commands.add_parser("train", help="fine-tune a LoRA adapter on collected programs and traces")
    train.add_argument("data", nargs="+", help="programs.jsonl from collect, and/or trace files")
    train.add_argument("--base", default="lite", help="the model to adapt (preset, directory, .gguf, HF id)")
    train.add_argument("--out", required=True, help="the adapter folder to write")
    train.add_argument("--format", choices=("leti", "sft"), default="leti",
                       help="leti: every program behind its reward token and feedback; sft: right programs only")
    train.add_argument("--rank", type=int, default=16)
    train.add_argument("--alpha", type=int, default=32)
    train.add_argument("--learning-rate", type=float, default=2e-4)
    train.add_argument("--epochs", type=float, default=1.0)
    train.add_argument("--batch-size", type=int, default=4)
    train.add_argument("--max-length", type=int, default=384, help="tokens per example")
    train.add_argument("--max-steps", type=int, default=None, help="stop after this many steps")
    train.add_argument("--seed", type=int, default=0)
    OPTIONS["device"].add_to(train, default="auto")
    OPTIONS["dtype"].add_to(train, default="auto")

    compare = commands.add_parser("compare", help="before/after on the same questions, with McNemar's test")
    compare.add_argument("before", help="a report written by pal-jupyter bench")
    compare.add_argument("after", help="a report of the same questions")

    leti = commands.add_parser("leti", help="turn a trace file into LeTI training text")
    leti.add_argument("trace")

    commands.add_parser("models", help="list the offline presets and whether they are installed")

    commands.add_parser("doctor", help="check this machine in a second: model, runtime, device, sandbox, "
                                       "cgroups (no model is loaded)")

    report = commands.add_parser("report", help="build a teacher's HTML report from a folder of class logs")
    report.add_argument("logdir", help="folder of per-student JSONL class logs (TeacherPolicy.log_dir)")
    report.add_argument("--out", default="report.html", help="HTML file to write (default: report.html)")
    report.add_argument("--no-progress", action="store_true", help="no progress bar while reading logs")

    prepare = commands.add_parser("prepare", help="turn an assignment (a JSONL answer key or an nbgrader source "
                                                  "notebook) into a tutor pack of verified hints, before class")
    prepare.add_argument("assignment", help="JSONL of questions with answers, or an nbgrader source notebook")
    prepare.add_argument("--out", default=None, help="the pack to write (default: beside the assignment, "
                                                     "ASSIGNMENT.pal-pack.json)")
    prepare.add_argument("--solutions", action="store_true",
                         help="include the whole verified program as the last hint (only where the class "
                              "policy allows solutions; without it the pack never holds it)")
    prepare.add_argument("--budget", type=float, default=240.0, metavar="SECONDS",
                         help="seconds to look for a verified program per question, at most (default: 240; "
                              "a new search step starts only within it)")
    prepare.add_argument("--model", "-m", default=None, help="the model (default: $PAL_JUPYTER_MODEL, else "
                                                             "the default preset)")
    prepare.add_argument("--no-progress", action="store_true", help="no progress bar")

    serve = commands.add_parser("serve", help="serve a model to a whole class with vLLM (launches it; "
                                              "students use --model openai:NAME@URL)")
    serve.add_argument("--model", "-m", default=presets.DEFAULT_MODEL,
                       help="preset (default, lite), converted model directory, or Hugging Face id")
    serve.add_argument("--host", default="127.0.0.1", help="address to listen on (0.0.0.0: the whole network)")
    serve.add_argument("--port", type=int, default=8000)
    serve.add_argument("--public-host", default=None, help="the host name students reach the server by")
    serve.add_argument("--vllm-python", default=None,
                       help="a Python that has vLLM (default: $PAL_JUPYTER_VLLM_PYTHON, ./.venv-vllm, this one)")
    serve.add_argument("--max-model-len", type=int, default=4096, help="tokens of prompt and reply together")
    serve.add_argument("--dtype", default="auto", choices=["auto", "bfloat16", "float16", "float32"],
                       help="vLLM's --dtype (auto: bfloat16 on a GPU or a CPU with bf16 units, else float32)")
    serve.add_argument("--kv-cache-gib", type=float, default=4.0,
                       help="key/value cache of a CPU server, in GiB (a GPU server sizes its own)")
    serve.add_argument("--print-command", action="store_true", help="print the command line and exit")
    serve.add_argument("vllm_args", nargs=argparse.REMAINDER, help="after --: more arguments for vLLM")
    return parser


def cmd_ask(args: argparse.Namespace) -> int:
    question = " ".join(_text_argument(part) for part in args.question).strip()
    if not question:
        raise EmptyQuestionError()
    settings = _settings(args)
    observer = ConsoleObserver(stream_tokens=not args.quiet)
    trace = None if args.no_trace else TraceWriter(args.trace or default_trace_path())
    with _pool(settings) as pool:  # the kernels warm up while the model loads
        backend = _load(settings)
        session = solve(question, settings, model=backend, executor=pool, trace=trace, observer=observer)
    if args.json:
        print(json.dumps(to_jsonable(session), indent=2, default=str))
    return 0 if session.succeeded else 1


def _pool(settings: Settings, warm: int = 1) -> KernelPool:
    """The warm kernel pool of a command. Where ``auto`` found no working sandbox, one line on stderr
    says that the model's programs run as plain processes, and why: never a silent downgrade."""
    note = fallback_note(settings.isolation)
    if note:
        print(f"pal-jupyter: warning: {note}", file=sys.stderr, flush=True)
    return KernelPool(settings.limits(), warm=warm)


def _text_argument(text: str) -> str:
    """A command-line argument as text: bytes that are not UTF-8 (``surrogateescape``) become U+FFFD,
    so nothing later (the trace, the terminal) fails on them."""
    return os.fsencode(text).decode("utf-8", errors="replace")


def _load(settings: Settings, dtype: str | None = None, backend: str | None = None) -> Any:
    """The model the settings name (with another dtype or runtime when given), saying what happens."""
    model, dtype, backend = settings.model, dtype or settings.dtype, backend or settings.backend
    if presets.find_preset(model) and not settings.adapter:
        runtime = choose_runtime(model, backend, device=settings.device, dtype=dtype).name
        if runtime == "llamacpp" and not presets.is_assembled(model):
            print(f"First use of {model!r}: assembling the model file once into {presets.cache_dir()} ...",
                  file=sys.stderr, flush=True)
        elif runtime == "torch" and not presets.is_prepared(model, resolve_dtype(dtype, resolve_device(settings.device))):
            print(f"First use of {model!r} with transformers: converting the model once into "
                  f"{presets.cache_dir()} (about 1-2 minutes) ...", file=sys.stderr, flush=True)
    print(f"Loading model {model!r} ...", file=sys.stderr, flush=True)
    loaded = settings.load_model(dtype=dtype, backend=backend)
    runtime, reason = loaded.runtime or f"{loaded.device} ({loaded.dtype})", loaded.runtime_reason
    print(f"Model ready in {loaded.load_seconds:.1f} s: {runtime}" + (f"; {reason}" if reason else ""),
          file=sys.stderr, flush=True)
    return loaded


def cmd_bench(args: argparse.Namespace) -> int:
    from tqdm import tqdm

    from ..evaluation.runner import Config, format_summaries, read_rows, run_benchmark, summarize, write_report

    rows = read_rows(args.data, args.limit, args.offset)
    if not rows:
        raise PalError(f"No rows in {args.data} (offset {args.offset}).")
    configs = [Config(method=h, samples=k, max_programs=m, second_opinion=o, dtype=d, backend=b, prompt=p,
                      temperature=t, guard=g)
               for b in args.backend for d in args.dtype for p in args.prompt for t in args.temperature
               for g in args.data_guard for h in args.method for k in args.samples for m in args.max_programs
               for o in args.second_opinion]
    for config in configs:  # every combination must be a valid setting before any model loads
        _settings(args, method=config.method, samples=config.samples, max_programs=config.max_programs, second_opinion=config.second_opinion,
                  dtype=config.dtype, backend=config.backend, temperature=config.temperature)
    settings = _settings(args)
    loaded: dict[tuple[str, str], Any] = {}

    def backend_for(config: Config) -> Any:
        key = (config.backend, config.dtype)
        if key not in loaded:
            loaded[key] = _load(settings, config.dtype, config.backend)
        return loaded[key]

    for config in configs:  # load up front: loading is not part of any question's time
        backend_for(config)
    with _pool(settings, warm=max(args.samples)) as pool:
        trace = TraceWriter(args.trace) if args.trace else None
        results = []
        progress = tqdm(total=len(rows) * len(configs), desc="questions", unit="q")
        try:
            for result in run_benchmark(rows, backend_for, pool, configs, max_attempts=settings.max_attempts,
                                        check_answers=args.check_answers, generation=settings.generation(),
                                        limits=settings.limits(), trace=trace):
                results.append(result)
                progress.update()
                progress.set_postfix(_tally(results, configs))
        except KeyboardInterrupt:  # Ctrl-C keeps what was measured: the questions every config finished
            results = results[:len(results) - len(results) % len(configs)]
            print(f"\nInterrupted: reporting the {len(results) // len(configs)} questions that every "
                  "config finished.", file=sys.stderr)
        progress.close()
    if not results:
        raise PalError("Interrupted before any question was finished: nothing to report.")
    summaries = []
    for config in configs:
        backend = backend_for(config)
        summary = summarize([r for r in results if r.config == config], model=backend.name,
                            load_seconds=backend.load_seconds, check_answers=args.check_answers)
        summary.update(data=str(args.data), offset=args.offset, max_attempts=settings.max_attempts,
                       device=backend.device, dtype=backend.dtype, runtime=_runtime_name(backend))
        summaries.append(summary)
    print(format_summaries(summaries))
    stem = f"{Path(str(args.data)).stem}-{Path(str(settings.model)).name}-{time.strftime('%Y%m%d-%H%M%S')}"
    for path in write_report(args.out or f"bench-results/{stem}.json", summaries, results):
        print(f"written: {path}")
    return 0


def _runtime_name(backend: Any) -> str:
    """'llamacpp', 'torch' or 'server': which runtime a loaded backend is."""
    from ..backends import LlamaCppBackend, TransformersBackend

    return ("llamacpp" if isinstance(backend, LlamaCppBackend) else "torch" if isinstance(backend, TransformersBackend)
            else "server")


def _tally(results: list[Any], configs: list[Any]) -> dict[str, str]:
    """The progress bar's running score per config."""
    tally = {}
    for config in configs:
        done = [r for r in results if r.config == config]
        tally[(f"{config.method}-" if len({c.method for c in configs}) > 1 else "") + f"k{config.samples}" + (f"-max{config.max_programs}" if len({c.max_programs for c in configs}) > 1 else "")
              + (f"-{config.second_opinion}" if len({c.second_opinion for c in configs}) > 1 else "")
              + (f"-{config.backend}" if len({c.backend for c in configs}) > 1 else "")
              + (f"-{config.dtype[:4]}" if len({c.dtype for c in configs}) > 1 else "")
              + (f"-{config.prompt or 'default'}" if len({c.prompt for c in configs}) > 1 else "")
              + (f"-T{config.temperature:g}" if len({c.temperature for c in configs}) > 1 else "")
              + ("" if config.guard or len({c.guard for c in configs}) == 1 else "-noguard")] = \
            f"{sum(r.correct for r in done)}/{len(done)}"
    return tally


def cmd_collect(args: argparse.Namespace) -> int:
    from tqdm import tqdm

    from ..evaluation.runner import read_rows
    from ..training.collect import collect, manifest_settings

    rows = read_rows(args.data, args.limit, args.offset)
    if not rows:
        raise PalError(f"No rows in {args.data} (offset {args.offset}).")
    settings = _settings(args)
    identity = manifest_settings(data=str(args.data), offset=args.offset, model=settings.model,
                                 adapter=settings.adapter, samples=settings.samples,
                                 max_attempts=settings.max_attempts, temperature=settings.temperature,
                                 max_new_tokens=settings.max_new_tokens, timeout=settings.timeout)
    with _pool(settings, warm=settings.samples) as pool:
        backend = _load(settings)
        bar = tqdm(total=len(rows), desc="questions", unit="q")

        def tally(stats: Any) -> None:
            bar.n = stats.questions + stats.skipped
            bar.set_postfix(programs=stats.programs, ran=stats.ran, right=stats.correct, solved=stats.solved)

        started = time.perf_counter()
        stats = collect(enumerate(rows, start=args.offset), backend, pool, args.out, identity,
                        samples=settings.samples, max_attempts=settings.max_attempts,
                        generation=settings.generation(), limits=settings.limits(), on_question=tally)
        bar.close()
    print(f"{stats.questions} question(s) answered now, {stats.skipped} already in {args.out}; "
          f"{stats.programs} programs: {stats.ran} ran, {stats.correct} right; {stats.solved} question(s) solved; "
          f"{time.perf_counter() - started:.0f} s")
    return 0


def cmd_train(args: argparse.Namespace) -> int:
    from ..training.examples import load_examples
    from ..training.lora import TrainSettings, train

    _adapter_folder(args.out)  # before reading data or loading a model: say it in a second, not after minutes
    examples, counts = load_examples(args.data)
    print(f"read {counts['records']} record(s): {len(examples)} program(s) to learn from "
          f"({counts['without_program']} without a program, {counts['duplicates']} duplicates left out)",
          file=sys.stderr)
    settings = TrainSettings(format=args.format, rank=args.rank, alpha=args.alpha, learning_rate=args.learning_rate,
                             epochs=args.epochs, batch_size=args.batch_size, max_length=args.max_length,
                             max_steps=args.max_steps, seed=args.seed)
    result = train(examples, args.base, args.out, settings, data_files=args.data, device=args.device, dtype=args.dtype)
    print(f"adapter written to {result.adapter}: {result.steps} steps on {result.examples['total']} examples "
          f"({result.examples['good']} good, {result.examples['bad']} bad); "
          f"loss {result.losses[0]:.3f} -> {result.last_loss:.3f}; "
          f"{result.seconds:.0f} s ({result.seconds_per_step:.1f} s per step, median); "
          f"peak memory {result.peak_memory_gib:.1f} GiB")
    print(f"use it: pal-jupyter ask --model {args.base} --adapter {result.adapter} QUESTION")
    return 0


def cmd_compare(args: argparse.Namespace) -> int:
    from ..evaluation.compare import compare, format_comparison

    print(format_comparison(compare(args.before, args.after)))
    return 0


def cmd_leti(args: argparse.Namespace) -> int:
    """The LeTI examples of a trace (or of collected programs), exactly as ``train --format leti``
    reads them: the same file, the same examples, the same text."""
    from ..prompts import leti_text
    from ..training.examples import load_examples

    examples, _counts = load_examples([_existing_file(args.trace, "trace")])
    for example in examples:
        print(leti_text(example))
    if not examples:
        raise PalError(f"{args.trace} holds no program: it is not a pal-jupyter trace, or an empty "
                       "one (traces are written by pal-jupyter ask/bench --trace and %config PalMagics.trace).")
    return 0


def _adapter_folder(out: str) -> None:
    """``--out`` must be a folder that can be written (it gets adapter_config.json and the weights)."""
    folder = Path(out).expanduser()
    if folder.exists() and not folder.is_dir():
        raise PalError(f"--out {out} is a file, not a folder: give a new or existing folder for the adapter.")
    existing = next((p for p in (folder, *folder.parents) if p.exists()), None)
    if existing is not None and not os.access(existing, os.W_OK | os.X_OK):
        raise PalError(f"--out {out}: {existing} cannot be written by this user; choose a folder you own.")


def _existing_file(path: str, what: str) -> str:
    if not Path(path).is_file():
        raise PalError(f"No {what} file at {path}" + (": it is a folder." if Path(path).is_dir() else "."))
    return path


def cmd_models(args: argparse.Namespace) -> int:
    for name, preset in presets.PRESETS.items():
        aliases = [a for a, target in presets.ALIASES.items() if target == name]
        try:
            presets.part_paths(preset)
            state = "installed"
        except PalError:
            state = f"not installed ({preset.install_hint()})"
        print(f"{name} [{', '.join(aliases)}]: {preset.description}; {state}")
    runtime = choose_runtime(presets.DEFAULT_MODEL)
    print(f"runtime for the presets here: {'llama.cpp' if runtime.name == 'llamacpp' else 'transformers'}; "
          f"{runtime.reason}")
    return 0


def cmd_doctor(args: argparse.Namespace) -> int:
    from .doctor import run_doctor

    return run_doctor(default_model())


def cmd_report(args: argparse.Namespace) -> int:
    from ..classroom.report import build_report  # pandas and matplotlib load only for this command

    print(build_report(args.logdir, args.out, progress=not args.no_progress))
    return 0


def cmd_prepare(args: argparse.Namespace) -> int:
    from tqdm import tqdm

    from ..classroom.assignment import read_assignment
    from ..classroom.classlog import writable_file
    from ..classroom.pack import pack_path_for
    from ..classroom.prepare import prepare_pack, summary_lines

    questions = read_assignment(args.assignment)
    # before the model loads: an hour of preparing must not end in a pack that cannot be written
    out = writable_file(Path(args.out).expanduser() if args.out else pack_path_for(args.assignment), "the pack")
    settings = Settings(model=args.model or default_model())
    backend = _load(settings)
    with _pool(settings, warm=2) as pool, tqdm(total=len(questions), desc="preparing", unit="question",
                                               disable=args.no_progress) as bar:
        def advance(prepared: Any) -> None:
            bar.set_postfix_str("verified" if prepared.verified else "not verified")
            bar.update()

        pack = prepare_pack(questions, backend, pool, assignment=Path(args.assignment).name,
                            solutions=args.solutions, budget_s=args.budget, progress=advance)
    pack.save(out)
    print("\n".join(summary_lines(pack)))
    seconds = [q.seconds for q in pack.questions]
    print(f"{sum(seconds) / len(seconds):.1f} s a question; the pack: {out}")
    return 0


def cmd_serve(args: argparse.Namespace) -> int:
    from ..classroom.vllm_server import VllmServer, class_instructions, find_vllm_python, resolve_model, serving_dtype

    try:
        python = find_vllm_python(args.vllm_python)
    except PalError:
        if not args.print_command:
            raise
        python = args.vllm_python or "python"  # a command to run elsewhere needs no vLLM here
    extra = args.vllm_args[1:] if args.vllm_args[:1] == ["--"] else args.vllm_args
    dtype = serving_dtype(args.dtype)
    server = VllmServer(*resolve_model(args.model, dtype), python, host=args.host, port=args.port,
                        max_model_len=args.max_model_len, dtype=dtype, kv_cache_gib=args.kv_cache_gib,
                        extra_args=extra)
    if args.print_command:
        print(server.shell_command())
        return 0
    print(f"Starting vLLM (ready in a few minutes on a CPU):\n  {server.shell_command()}", file=sys.stderr, flush=True)
    with server:
        print(class_instructions(server, args.public_host))
        print(f"Its log: {server.log_path}. Ctrl-C stops the server.", flush=True)
        server.process.wait()
    raise PalError(f"vLLM stopped by itself (exit code {server.process.returncode}). The end of its log "
                   f"({server.log_path}):\n{server.log_tail()}")


def main(argv: list[str] | None = None) -> int:
    """Run a command. Exit status: 0 done, 1 no working program (``ask``) or something needed that
    does not work (``doctor``), 2 a usage problem or an expected failure (one line, no traceback),
    130 interrupted, 70 an unexpected error (one line naming the file that holds its traceback)."""
    args = build_parser().parse_args(argv)
    logging.basicConfig(level=logging.INFO if args.verbose else logging.WARNING, format="%(levelname)s %(name)s: %(message)s")
    handler = {"ask": cmd_ask, "bench": cmd_bench, "collect": cmd_collect, "train": cmd_train,
               "compare": cmd_compare, "leti": cmd_leti, "models": cmd_models, "doctor": cmd_doctor,
               "report": cmd_report, "prepare": cmd_prepare, "serve": cmd_serve}[args.command]
    try:
        return handler(args)
    except PalError as exc:
        print(f"pal-jupyter: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("pal-jupyter: interrupted", file=sys.stderr)
        return 130
    except Exception as exc:  # the error boundary: one line, the traceback in a file
        print(f"pal-jupyter: {unexpected_error_message(exc)}", file=sys.stderr)
        return 70
    finally:  # this process owns its main thread's loop: closed now, not by the interpreter's exit
        close_thread_loop()


if __name__ == "__main__":
    sys.exit(main())
