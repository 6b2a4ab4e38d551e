"""The ``%%pal`` / ``%pal`` magics and ``%pal_config``.

``%load_ext pal_jupyter`` registers :class:`PalMagics`, starts warming a child kernel, and says
hello to the JupyterLab extension. Defaults are traitlets, so ``%config PalMagics.model = 'lite'``
works and they can be set in ``ipython_config.py`` (``c.PalMagics.max_attempts = 5``).
"""

from __future__ import annotations

import logging
import threading
import types
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from IPython.core.error import UsageError
from IPython.core.magic import Magics, line_cell_magic, line_magic, magics_class
from IPython.core.magic_arguments import argument, magic_arguments, parse_argstring
from traitlets import Bool, Float, Int, Unicode

from ..backends import SAMPLE_TEMPERATURE, GenerationOptions, load_model
from ..classroom.classlog import ClassLog
from ..classroom.policy import TeacherPolicy
from ..engine.console import ConsoleObserver
from ..engine.loop import DEFAULT_SAMPLES, MAX_SAMPLES, SolveObserver, solve
from ..engine.options import samples_argument
from ..engine.records import Attempt, Session
from ..engine.trace import TraceWriter, default_trace_path
from ..errors import PalError, PolicyError
from ..kernels import ExecutorLimits, KernelPool
from . import cells, tutoring
from .widgets import PalWidget

log = logging.getLogger(__name__)

# Values worth copying into the child kernel when a question or a program names them.
_NOT_DATA = (types.ModuleType, types.FunctionType, types.BuiltinFunctionType, type, types.MethodType)


def is_data(value: Any) -> bool:
    return not isinstance(value, _NOT_DATA) and not callable(value)


def user_data_names(text: str, namespace: Mapping[str, Any]) -> list[str]:
    """Public data variables of ``namespace`` that ``text`` mentions as whole words."""
    words = set(_identifier_words(text))
    return sorted(n for n in words if n in namespace and not n.startswith("_") and is_data(namespace[n]))


def _identifier_words(text: str) -> list[str]:
    import re

    return re.findall(r"[A-Za-z_][A-Za-z0-9_]*", text)


@magics_class
class PalMagics(Magics):
    """Ask a local model for a program, run it in an isolated kernel, repair it, insert it."""

    model = Unicode("default", help="Preset (default, lite), model directory, .gguf file or Hugging Face id.").tag(config=True)
    device = Unicode("auto", help="auto (GPU when present), cpu, cuda, cuda:1 ...").tag(config=True)
    dtype = Unicode("auto", help="auto (bf16 on GPU, fp32 on CPU), float32, bfloat16.").tag(config=True)
    max_attempts = Int(3, help="Attempts per question, repairs included.").tag(config=True)
    timeout = Float(30.0, help="Seconds a generated program may run.").tag(config=True)
    memory_gib = Float(2.0, help="Address-space limit of the child kernel, GiB (>= 1.5).").tag(config=True)
    samples = Int(DEFAULT_SAMPLES, min=1, max=MAX_SAMPLES,
                  help="Programs written and run per attempt; the answer most of them print wins, and how many "
                       "agree shows how sure it is. 1 = a single greedy program.").tag(config=True)
    temperature = Float(None, allow_none=True,
                        help=f"None = greedy for one program, {SAMPLE_TEMPERATURE} for several; > 0 samples."
                        ).tag(config=True)
    seed = Int(None, allow_none=True, help="Random seed for sampling.").tag(config=True)
    max_new_tokens = Int(512, help="Most tokens the model may write per attempt.").tag(config=True)
    insert = Bool(True, help="Insert the final program as a new cell below the %%pal cell.").tag(config=True)
    run_inserted = Bool(False, help="Run the inserted cell in your kernel (it has side effects).").tag(config=True)
    auto_variables = Bool(True, help="Copy in data variables that the question or program names.").tag(config=True)
    preload = Bool(False, help="Load the model in the background as soon as the extension loads.").tag(config=True)
    freeze = Bool(False, help="When a question is done, replace the live widget by static HTML "
                           "(for notebooks exported with nbconvert, which cannot render live widgets).").tag(config=True)
    trace = Unicode("", help="JSONL trace of every attempt: '' = the default path, 'off' = none.").tag(config=True)

    def __init__(self, shell: Any = None, **kwargs: Any):
        super().__init__(shell=shell, **kwargs)
        self.link = cells.FrontendLink()
        self.policy = TeacherPolicy.current(shell)
        self._classlog: ClassLog | None = None
        self.tutor_plan: Any = None  # the last tutor-mode question (for %pal_hint and --check)
        self.last_session: Session | None = None
        self._pool: KernelPool | None = None
        self._pool_lock = threading.Lock()

    # ------------------------------------------------------------------ lifecycle

    def start(self) -> None:
        """Warm a kernel, greet the frontend extension, optionally preload the model."""
        self.link.open()
        self.pool()
        if self.preload:
            threading.Thread(target=self._preload, name="pal-preload", daemon=True).start()

    def backend(self, model_name: str | None = None) -> Any:
        """The (cached) model: ``model_name``, else the policy's model, else ``PalMagics.model``."""
        return load_model(model_name or self.policy.model or self.model, device=self.device, dtype=self.dtype)

    def _preload(self) -> None:
        try:
            self.backend()
        except PalError as exc:
            log.warning("Preloading the model failed: %s", exc)

    def close(self) -> None:
        with self._pool_lock:
            if self._pool is not None:
                self._pool.close()
                self._pool = None
        self.link.close()

    def limits(self, timeout: float | None = None) -> ExecutorLimits:
        if self.memory_gib < 1.5:
            raise UsageError("PalMagics.memory_gib must be at least 1.5: an idle kernel already reserves ~0.8 GiB.")
        return ExecutorLimits(timeout_s=timeout or self.timeout, memory_bytes=int(self.memory_gib * 1024**3))

    def pool(self, limits: ExecutorLimits | None = None) -> KernelPool:
        """The shared warm pool; a cell with its own limits gets a pool that matches them."""
        limits = limits or self.limits()
        with self._pool_lock:
            if self._pool is None or self._pool.limits != limits:
                if self._pool is not None:
                    self._pool.close()
                self._pool = KernelPool(limits)
            return self._pool

    # ------------------------------------------------------------------ magics

    @magic_arguments()
    @argument("-m", "--model", default=None, help="model for this question (see %%config PalMagics.model)")
    @argument("-n", "--max-attempts", type=int, default=None, help="attempts, repairs included")
    @argument("-t", "--timeout", type=float, default=None, help="seconds each program may run")
    @argument("-k", "--samples", type=samples_argument, default=None,
              help="programs per attempt; the answer most of them print wins (see %%config PalMagics.samples)")
    @argument("--temperature", type=float, default=None, help="0 = greedy; > 0 samples")
    @argument("--seed", type=int, default=None, help="random seed for sampling")
    @argument("-u", "--use", action="append", default=[], metavar="NAME[,NAME]",
              help="copy these variables (e.g. a DataFrame) into the program's kernel")
    @argument("--no-insert", action="store_true", help="do not insert the program as a new cell")
    @argument("--run", action="store_true", help="run the inserted cell in this kernel (side effects!)")
    @argument("-q", "--quiet", action="store_true", help="no live widget; print a summary at the end")
    @argument("--tutor", action="store_true", help="tutor mode: hints step by step instead of the program")
    @argument("--assist", action="store_true", help="assist mode: the program (when the policy allows it)")
    @argument("--hint-level", type=int, default=None, help="tutor mode: reveal hints up to this level at once")
    @argument("--check", action="store_true", help="check the student's own code in the cell body")
    @argument("--expect", type=float, default=None, help="with --check: the answer the code should print")
    @argument("question", nargs="*", help="the question (line form: %%pal QUESTION)")
    @line_cell_magic
    def pal(self, line: str, cell: str | None = None) -> None:
        """Answer a question with a program written by a local model, run in an isolated kernel.

        Cell form: options on the %%pal line, the question in the cell body. Line form:
        ``%pal What is 17% of 250`` (no final "?": IPython reads that as a help request).
        Failed programs are explained and repaired; the final program is inserted as a new
        cell below.
        """
        args = parse_argstring(self.pal, line)
        question = (cell if cell is not None else " ".join(args.question)).strip()
        if cell is not None and args.question:
            raise UsageError(f"Unexpected words on the %%pal line: {' '.join(args.question)!r}. "
                             "Put the question in the cell body; options go on the %%pal line.")
        if not question:
            raise UsageError("The %%pal cell is empty: write your question in the cell below '%%pal', "
                             "for example: How far does a train go at 60 mph in 2.5 hours?")
        if args.check:
            tutoring.run_check(self, question, args)
        elif self.tutor_mode(args):
            tutoring.run_tutor(self, question, args)
        else:
            self._ask(question, args)

    @line_magic
    def pal_hint(self, line: str = "") -> None:
        """Reveal the next hint for the last tutor-mode question."""
        tutoring.reveal_next(self, from_button=False)

    @line_magic
    def pal_explain(self, line: str = "") -> None:
        """Explain the last error raised in this notebook, in plain words, without re-running it."""
        tutoring.explain_last_error(self)

    @line_magic
    def pal_policy(self, line: str = "") -> None:
        """Show the teacher's policy in force (set in the system-wide IPython/Jupyter config)."""
        print(self.policy.describe())

    # ------------------------------------------------------------------ policy

    def tutor_mode(self, args: Any) -> bool:
        """Tutor unless asked to assist; the policy's mode decides the default and may lock it."""
        if args.tutor and args.assist:
            raise UsageError("Choose one of --tutor and --assist.")
        mode = "tutor" if args.tutor else "assist" if args.assist else self.policy.mode
        self._policy_allows("mode", mode)
        return mode == "tutor" or not self.policy.allow_solutions

    def effective_model(self, args: Any) -> str:
        if args.model:
            return self._policy_allows("model", args.model)
        return self.policy.model or self.model

    def effective_samples(self, args: Any) -> int:
        return self.samples if args.samples is None else args.samples

    def effective_attempts(self, args: Any) -> int:
        default = self.policy.max_attempts if self.policy.origin("max_attempts") == "config" else self.max_attempts
        if args.max_attempts is None:
            return default
        return self._policy_allows("max_attempts", args.max_attempts)

    def _policy_allows(self, name: str, value: Any) -> Any:
        try:
            return self.policy.check_override(name, value)
        except PolicyError as exc:
            raise UsageError(str(exc)) from None

    @property
    def classlog(self) -> ClassLog:
        if self._classlog is None or str(self._classlog.log_dir) != str(Path(self.policy.log_dir).expanduser()):
            self._classlog = ClassLog(self.policy.log_dir)
        return self._classlog

    @line_magic
    def pal_config(self, line: str = "") -> None:
        """Show the current %%pal settings (change them with %config PalMagics.NAME = VALUE)."""
        rows = [f"  PalMagics.{name:<15} = {getattr(self, name)!r}" for name in sorted(self.trait_names(config=True))]
        frontend = f"JupyterLab extension: {'connected (' + str(self.link.frontend) + ')' if self.link.available else 'not connected'}"
        print("\n".join(["%%pal settings:", *rows, frontend]))

    # ------------------------------------------------------------------ one question

    def _ask(self, question: str, args: Any) -> None:
        origin = cells.current_cell_id(self.shell)
        explicit = self._explicit_variables(args.use)
        namespace = self._auto_namespace(question, explicit)
        explicit.update(self._mentioned_variables(question, namespace))
        model_name = self.effective_model(args)
        widget = self._make_view(question, model_name, args.quiet, origin)
        session = None
        try:
            pool = self.pool(self.limits(args.timeout))
            if isinstance(widget, PalWidget):
                widget.set_status(f"loading the model {model_name!r} (the first time takes longer) ...")
            backend = self.backend(model_name)
            session = solve(
                question, model=backend, executor=pool,
                max_attempts=self.effective_attempts(args), samples=self.effective_samples(args),
                variables=explicit, namespace=namespace, generation=self.generation(args),
                trace=self.trace_writer(), observer=widget,
            )
        except (PalError, ValueError) as exc:
            if isinstance(widget, PalWidget):
                widget.fail(str(exc))
            raise UsageError(str(exc)) from None
        except KeyboardInterrupt:
            if isinstance(widget, PalWidget):
                widget.fail("Interrupted: the program's kernel was stopped; your kernel is untouched.")
            raise
        self.last_session = session
        if args.quiet:
            from .widgets import summary_text

            print(summary_text(session, question, "done" if session.succeeded else "failed"))
        if not args.no_insert and self.insert:
            self._insert(session, origin, run=args.run or self.run_inserted)
        if isinstance(widget, PalWidget):
            widget.enable_insert_buttons(self.link.available and origin is not None)
            if self.freeze:
                widget.freeze()

    def _insert(self, session: Session, origin: str | None, run: bool) -> None:
        insertion = cells.insert_program(self.shell, self.link, session, origin, run=run)
        if run and insertion.route != "extension":
            # No extension to run the new cell: run the program here, visibly, in this cell.
            self.shell.run_cell(cells.cell_source(session), store_history=False)

    def _make_view(self, question: str, model: str, quiet: bool, origin: str | None) -> SolveObserver | None:
        if quiet:
            return None
        if getattr(self.shell, "kernel", None) is None:  # terminal IPython: no widgets
            return ConsoleObserver()
        view = PalWidget(question, model=model,
                         on_insert=lambda session, attempt: self._insert_attempt(session, attempt, origin))
        view.show()
        return view

    def _insert_attempt(self, session: Session | None, attempt: Attempt, origin: str | None) -> None:
        """A widget's "Insert this program" button: that widget's session, that program."""
        if session is not None:
            cells.insert_program(self.shell, self.link, session, origin, attempt=attempt, allow_payload=False)

    def _explicit_variables(self, use: list[str]) -> dict[str, Any]:
        names = [n.strip() for group in use for n in group.split(",") if n.strip()]
        namespace = self.shell.user_ns
        missing = [n for n in names if n not in namespace]
        if missing:
            raise UsageError(f"--use names variables that do not exist in your notebook: {', '.join(missing)}. "
                             "Run the cell that defines them first, or check the spelling.")
        variables = {n: namespace[n] for n in names}
        self._check_picklable(variables)
        return variables

    @staticmethod
    def _check_picklable(variables: Mapping[str, Any]) -> None:
        import cloudpickle

        for name, value in variables.items():
            try:
                cloudpickle.dumps(value)
            except Exception as exc:
                raise UsageError(
                    f"The variable {name!r} ({type(value).__name__}) cannot be copied into the program's "
                    f"kernel: {exc}. Pass a plain copy instead, e.g. a DataFrame or a list."
                ) from None

    def _auto_namespace(self, question: str, explicit: Mapping[str, Any]) -> dict[str, Any]:
        """Data variables the question or the program may name: copied in when a program uses them."""
        if not self.auto_variables:
            return {}
        namespace = self.shell.user_ns
        hidden = set(getattr(self.shell, "user_ns_hidden", {}))
        return {n: v for n, v in namespace.items()
                if not n.startswith("_") and n not in hidden and n not in explicit and is_data(v)}

    def _mentioned_variables(self, question: str, namespace: Mapping[str, Any]) -> dict[str, Any]:
        """Variables the question names: described in the prompt and copied in when they can be."""
        import cloudpickle

        mentioned = {}
        for name in user_data_names(question, namespace):
            try:
                cloudpickle.dumps(namespace[name])
            except Exception:
                log.info("%s is named in the question but cannot be copied; leaving it out", name)
                continue
            mentioned[name] = namespace[name]
        return mentioned

    def generation(self, args: Any) -> GenerationOptions:
        temperature = self.temperature if args.temperature is None else args.temperature
        seed = self.seed if args.seed is None else args.seed
        return GenerationOptions(max_new_tokens=self.max_new_tokens, temperature=temperature, seed=seed)

    def trace_writer(self) -> TraceWriter | None:
        if self.trace.strip().lower() in {"off", "none", "false", "no"}:
            return None
        return TraceWriter(self.trace or default_trace_path())


def load_ipython_extension(ipython: Any) -> None:
    magics = _configured_magics(ipython)
    ipython.register_magics(magics)
    for configurable in (magics, magics.policy):  # so that %config PalMagics / TeacherPolicy work
        if configurable not in ipython.configurables:
            ipython.configurables.append(configurable)
    magics.start()
    ipython._pal_magics = magics  # found again by unload


def _configured_magics(ipython: Any) -> PalMagics:
    """PalMagics with the shell's configuration, skipping values the traits refuse.

    ``%config PalMagics.samples = 0`` is refused by the trait, yet IPython keeps the value in the
    shell's config; without this, every later ``%load_ext pal_jupyter`` would fail on it.
    """
    from traitlets import TraitError
    from traitlets.config import Config

    settings = dict(ipython.config.get("PalMagics", {}))
    others = Config({k: v for k, v in ipython.config.items() if k != "PalMagics"})
    magics = PalMagics(shell=ipython, config=others)
    for name, value in settings.items():
        try:
            setattr(magics, name, value)
        except TraitError as exc:
            log.warning("Ignoring PalMagics.%s = %r: %s", name, value, exc)
            del ipython.config.PalMagics[name]
    return magics


def unload_ipython_extension(ipython: Any) -> None:
    magics = getattr(ipython, "_pal_magics", None)
    if magics is None:
        return
    magics.close()
    for configurable in (magics, magics.policy):
        if configurable in ipython.configurables:
            ipython.configurables.remove(configurable)
    del ipython._pal_magics
