"""Every setting of a question, declared once: name, type, default, range and help.

The ``%%pal`` magic's arguments, the ``PalMagics`` traitlets and the ``pal-jupyter`` flags are
all built from :data:`OPTIONS`, so they cannot drift apart, and every value goes through
:meth:`Option.check`, which says what is wrong in the same one line wherever it was given.
:class:`Settings` holds one value of each and turns them into what the engine takes
(:class:`~pal_jupyter.backends.GenerationOptions`, :class:`~pal_jupyter.kernels.ExecutorLimits`).
"""

from __future__ import annotations

import argparse
import dataclasses
import os
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from ..backends import BACKENDS, SAMPLE_TEMPERATURE, GenerationOptions, ModelBackend, load_model
from ..errors import SettingError
from ..kernels import ExecutorLimits
from ..kernels.sandbox import readable_refusal

#: How a question's programs are asked for: "careful" (two independent greedy programs from prompts that
#: share no worked examples; more only when they disagree about data: engine.views) or "vote" (SAMPLES sampled programs from one prompt,
#: more while they disagree: the method before it, kept to compare against).
METHODS = ("careful", "vote")
MAX_SAMPLES = 16  # programs per round; beyond this a batch costs more than the vote gains
#: Programs sampled per round of the vote method when the caller does not say (the careful method
#: samples none: docs/decisions.md, "Careful first").
DEFAULT_SAMPLES = 4
#: Most programs one prompt may get when its programs disagree (docs/decisions.md, "Adaptive effort").
DEFAULT_MAX_PROGRAMS = 15
MAX_PROGRAMS = 48
#: What a weak vote asks for before more programs: "words" (engine.reasoning, questions without
#: data), "look" (that, and for questions about --use data a look at it first: engine.data_look;
#: opt-in, it lost answers in the measurement of docs/decisions.md, "Look at the data first") or "off".
SECOND_OPINIONS = ("words", "look", "off")
#: Most earlier cells a question may be sent with (``context``), and the cap on what they cost the
#: prompt: a few cells are what "fix the error above" needs; more would crowd out the question on a
#: small model's context and slow every prefill on a CPU.
MAX_CONTEXT_CELLS = 20
MAX_CONTEXT_TOKENS = 1000

GIB = 1024**3


OptionError = SettingError  # what Option.check raises: the setting and its allowed values, in one line


@dataclass(frozen=True)
class Option:
    """One setting. ``low``/``high`` bound it inclusively, ``above`` exclusively."""

    name: str
    kind: type
    default: Any
    help: str
    flags: tuple[str, ...] = ()  # extra short flags, e.g. ("-n",)
    low: float | None = None
    high: float | None = None
    above: float | None = None
    choices: tuple[str, ...] | None = None
    optional: bool = False  # None is a value (it means "decide for me")
    notebook_only: bool = False  # needs a notebook (its cells): a %%pal flag and trait, refused by the CLI

    @property
    def flag(self) -> str:
        return "--" + self.name.replace("_", "-")

    def allowed(self) -> str:
        """The allowed values, in words."""
        if self.choices:
            return "one of " + ", ".join(self.choices)
        noun = "a whole number" if self.kind is int else "a number" if self.kind is float else "text"
        if self.above is not None:
            noun += f" above {self.above:g}"
            if self.high is not None:
                noun += f" and at most {self.high:g}"
        elif self.low is not None and self.high is not None:
            noun += f" from {self.low:g} to {self.high:g}"
        elif self.low is not None:
            noun += f" of at least {self.low:g}"
        return noun

    def _refuse(self, value: Any) -> OptionError:
        return OptionError(f"{self.name} must be {self.allowed()} ({self.help}), not {value!r}.")

    def check(self, value: Any) -> Any:
        """``value`` converted to the option's type when it is allowed; OptionError otherwise."""
        if value is None:
            if self.optional:
                return None
            raise self._refuse(value)
        if self.kind in (int, float) and (isinstance(value, bool) or not isinstance(value, (int, float))):
            raise self._refuse(value)
        if self.kind is int and isinstance(value, float) and not value.is_integer():
            raise self._refuse(value)
        try:
            converted = self.kind(value)
        except (TypeError, ValueError):
            raise self._refuse(value) from None
        if self.choices and converted not in self.choices:
            raise self._refuse(value)
        if self.kind in (int, float):
            if converted != converted:  # NaN
                raise self._refuse(value)
            if (self.above is not None and not converted > self.above) \
                    or (self.low is not None and converted < self.low) \
                    or (self.high is not None and converted > self.high):
                raise self._refuse(value)
        return converted

    def parse(self, text: str) -> Any:
        """Text from a command line or a magic line to a checked value (an argparse ``type``)."""
        if self.optional and text.strip().lower() in {"none", "auto"}:
            return None
        try:
            value = self.kind(text) if self.kind in (int, float) else text
        except ValueError:
            raise argparse.ArgumentTypeError(f"{self.name} must be {self.allowed()} ({self.help}), not {text!r}") \
                from None
        try:
            return self.check(value)
        except OptionError:
            raise argparse.ArgumentTypeError(f"{self.name} must be {self.allowed()} ({self.help}), not {text!r}") \
                from None

    def add_to(self, parser: argparse.ArgumentParser, default: Any = None, help_suffix: str = "") -> None:
        """Add ``--name`` (and any short flags) to an argparse parser or a magic's arguments."""
        parser.add_argument(*self.flags, self.flag, dest=self.name, type=self.parse, default=default,
                            metavar=self.name.upper(), help=self.help + help_suffix)

    def trait(self) -> Any:
        """A traitlets trait (``config=True``) that checks values like everywhere else."""
        return _OptionTrait(self, default_value=self.default, allow_none=self.optional,
                            help=self.help).tag(config=True)


def _make_trait_class() -> type:
    from traitlets import TraitError, TraitType

    class OptionTrait(TraitType):  # type: ignore[misc]
        """A trait whose values are checked by an :class:`Option` (one message everywhere)."""

        info_text = "a valid value"

        def __init__(self, option: Option, **kwargs: Any):
            self.option = option
            super().__init__(**kwargs)

        def validate(self, obj: Any, value: Any) -> Any:
            try:
                return self.option.check(value)
            except OptionError as exc:
                raise TraitError(str(exc)) from None

        def from_string(self, s: str) -> Any:
            """A value written on a command line (``--PalMagics.seed=0`` in a kernel spec), read as a
            magic line reads it (:meth:`Option.parse`); what it refuses stays text, for ``validate``
            to refuse in the trait's words."""
            try:
                return self.option.parse(s)
            except argparse.ArgumentTypeError:
                return s

    return OptionTrait


_OptionTrait = _make_trait_class()


OPTIONS: dict[str, Option] = {o.name: o for o in (
    Option("model", str, "default", "preset (default, lite), model directory, .gguf file, Hugging Face id, or "
           "openai:MODEL@URL for a model server", flags=("-m",)),
    Option("adapter", str, "", "a LoRA adapter folder written by pal-jupyter train ('' = none)"),
    Option("device", str, "auto", "auto (the GPU when there is one), cpu, cuda, cuda:1 ..."),
    Option("backend", str, "auto", "how a local model runs: auto (transformers on a GPU, llama.cpp on a CPU), "
           "torch (transformers) or llamacpp (the GGUF file as it is)", choices=BACKENDS),
    Option("dtype", str, "auto", "auto: bf16 on a GPU or a CPU with AMX/AVX512-BF16, else fp32 (torch backend; "
           "llama.cpp uses the GGUF file's own quantisation)", choices=("auto", "float32", "bfloat16", "float16")),
    Option("method", str, METHODS[0], "how programs are asked for: careful (two independent greedy programs; when they "
           "disagree, a word problem's first program stands, and for --use data (charts included) the answer of the "
           "first program that worked stands; when both failed, a chart gets one more from pandas idioms) or vote "
           "(SAMPLES sampled programs per attempt; the answer most of them print wins)", choices=METHODS),
    Option("samples", int, DEFAULT_SAMPLES, "method vote: programs sampled per attempt (the careful method samples "
           "none)", flags=("-k",), low=0, high=MAX_SAMPLES),
    Option("max_programs", int, DEFAULT_MAX_PROGRAMS, "method vote: most programs per attempt: while fewer than 3 "
           "in 5 agree, SAMPLES more are written (1: never more than SAMPLES)", low=1, high=MAX_PROGRAMS),
    Option("second_opinion", str, SECOND_OPINIONS[0], "method vote: when the programs disagree, first: words (the model works "
           "the question out step by step in words, then writes one program that follows its steps; both join the "
           "vote; not for --use data), look (words, and for --use data a look at it, whose output the next programs "
           "get) or off", choices=SECOND_OPINIONS),
    # Two: the first attempt and one repair. A second repair of a data question's program answered 1 time
    # in 4, for ~30 s each on a 2-core Xeon (docs/decisions.md, "One repair; the whole traceback kept").
    Option("max_attempts", int, 2, "attempts per question, repairs included", flags=("-n",), low=1, high=10),
    Option("timeout", float, 30.0, "seconds a program may run", flags=("-t",), above=0, high=3600),
    Option("memory_gib", float, 2.0, "memory limit of the program's kernel, in GiB (its address space; in the "
           "sandbox a quarter of it is the in-memory folders it may write to)", low=1.5, high=4096),
    Option("isolation", str, "auto", "where programs run: sandbox (bubblewrap: no network, no files but their own), "
           "process (a plain child process), or auto (the sandbox where it works)",
           choices=("auto", "sandbox", "process")),
    Option("readable", str, "", "files or folders a sandboxed program may read, comma-separated (e.g. the "
           "folder of sales.csv); never the whole home", flags=("--read",)),
    Option("temperature", float, None, f"sampling temperature; none: greedy for one program, {SAMPLE_TEMPERATURE} "
           "for several", low=0, high=2, optional=True),
    Option("seed", int, None, "random seed for sampling", optional=True),
    # The longest greedy or sampled program of collect_views.py's DataFrame suite took 164 tokens (p95 110):
    # a row past 384 is rambling, and a repair's explanation fits beside its program.
    Option("max_new_tokens", int, 384, "most tokens the model may write per program", low=1, high=8192),
    Option("server_timeout", float, 60.0, "seconds to wait for a model server's next token (openai: models)",
           above=0, high=3600),
    Option("context", int, 0, "how many of the notebook's last code cells, with its last error when they raised "
           f"it, the model is shown before the question (at most {MAX_CONTEXT_TOKENS} tokens; 0: none)",
           low=0, high=MAX_CONTEXT_CELLS, notebook_only=True),
)}


@dataclass(frozen=True)
class Settings:
    """One value for every option: what a question is solved with."""

    model: str = OPTIONS["model"].default
    adapter: str = OPTIONS["adapter"].default
    device: str = OPTIONS["device"].default
    backend: str = OPTIONS["backend"].default
    dtype: str = OPTIONS["dtype"].default
    method: str = OPTIONS["method"].default
    samples: int = OPTIONS["samples"].default
    max_programs: int = OPTIONS["max_programs"].default
    second_opinion: str = OPTIONS["second_opinion"].default
    max_attempts: int = OPTIONS["max_attempts"].default
    timeout: float = OPTIONS["timeout"].default
    memory_gib: float = OPTIONS["memory_gib"].default
    isolation: str = OPTIONS["isolation"].default
    readable: str = OPTIONS["readable"].default
    temperature: float | None = OPTIONS["temperature"].default
    seed: int | None = OPTIONS["seed"].default
    max_new_tokens: int = OPTIONS["max_new_tokens"].default
    server_timeout: float = OPTIONS["server_timeout"].default
    context: int = OPTIONS["context"].default  # the notebook's (notebook.context); the engine has no cells to read

    def __post_init__(self) -> None:
        for name in OPTIONS:
            object.__setattr__(self, name, OPTIONS[name].check(getattr(self, name)))
        if self.method == "vote" and self.samples < 1:
            raise OptionError("samples 0 leaves the vote method no program to write: use samples 1 or more, "
                              "or method careful.")
        if self.samples > 1 and self.temperature == 0:
            raise OptionError(
                f"temperature 0 (greedy decoding) would write the same program {self.samples} times: use a "
                "temperature above 0 to draw several programs, or samples 1."
            )
        self.limits()  # the kernel's limits' own rules (readable paths that expose the home, ...), now
        for path in self.readable_paths:  # now, before the model is asked, not when a program's kernel starts
            if not os.path.exists(os.path.expanduser(path)):
                raise OptionError(readable_refusal(path, "it does not exist"))

    def updated(self, values: Mapping[str, Any]) -> Settings:
        """A copy with the given values (None means "not given", except where None is a value)."""
        given = {k: v for k, v in values.items() if k in OPTIONS and v is not None}
        return dataclasses.replace(self, **given)

    def load_model(self, dtype: str | None = None, backend: str | None = None) -> ModelBackend:
        """The model these settings name, with their device, dtype, runtime, adapter and server timeout
        (``dtype`` and ``backend`` override theirs): how solve(), the notebook and the command line
        all load a model."""
        return load_model(self.model, device=self.device, dtype=dtype or self.dtype, adapter=self.adapter,
                          backend=backend or self.backend, server_timeout=self.server_timeout)

    def generation(self) -> GenerationOptions:
        return GenerationOptions(max_new_tokens=self.max_new_tokens, temperature=self.temperature, seed=self.seed)

    def limits(self) -> ExecutorLimits:
        return ExecutorLimits(timeout_s=self.timeout, memory_bytes=int(self.memory_gib * GIB),
                              isolation=self.isolation, readable_paths=self.readable_paths)

    @property
    def readable_paths(self) -> tuple[str, ...]:
        return tuple(sorted({p.strip() for p in self.readable.split(",") if p.strip()}))

