"""The IPython surface: ``%%pal`` / ``%pal``, ``%pal_hint``, ``%pal_explain``, ``%pal_pack``, ``%pal_mode``,
``%pal_policy``, ``%pal_config``.

``%load_ext pal_jupyter`` registers :class:`PalMagics`, starts warming a child kernel, and says
hello to the JupyterLab extension. Defaults are traitlets built from the option declarations
(:data:`~pal_jupyter.engine.options.OPTIONS`), so ``%config PalMagics.model = 'lite'`` works and
``c.PalMagics.samples = 3`` can go in ``ipython_config.py``. The magics only parse and dispatch:
the session's services and the merging of defaults, policy and cell options live in
:class:`~pal_jupyter.notebook.runtime.NotebookRuntime`. Every expected failure reaches the user
as one ``UsageError`` line.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Callable
from typing import Any

from IPython.core.error import UsageError
from IPython.core.magic import Magics, line_cell_magic, line_magic, magics_class, no_var_expand
from IPython.core.magic_arguments import argument, magic_arguments, parse_argstring
from traitlets import Bool, TraitError, Unicode
from traitlets.config import Config
from traitlets.config.loader import DeferredConfig

from ..classroom.policy import TeacherPolicy
from ..engine.options import OPTIONS
from ..errors import PalError, unexpected_error_message
from . import assist, tutor_view
from .runtime import NotebookRuntime

log = logging.getLogger(__name__)

CHILD_KERNEL_VARIABLE = "PAL_JUPYTER_CHILD_KERNEL"  # set in every child kernel's environment
CELL_OPTIONS = ("model", "adapter", "backend", "method", "samples", "max_programs", "second_opinion", "max_attempts", "timeout",
                "temperature", "seed", "isolation", "readable", "server_timeout", "context")  # per-cell flags


def option_arguments(*names: str) -> Callable[[Any], Any]:
    """``@argument`` decorators for the named options, built from their one declaration."""

    def decorate(func: Any) -> Any:
        for name in reversed(names):
            option = OPTIONS[name]
            func = argument(*option.flags, option.flag, dest=name, type=option.parse, default=None,
                            metavar=name.upper(), help=f"{option.help} (default: %%config PalMagics.{name})")(func)
        return func

    return decorate


@magics_class
class PalMagics(Magics):
    """Ask a local model for programs, run them in isolated kernels, vote, repair, insert."""

    model = OPTIONS["model"].trait()
    adapter = OPTIONS["adapter"].trait()
    device = OPTIONS["device"].trait()
    backend = OPTIONS["backend"].trait()
    dtype = OPTIONS["dtype"].trait()
    method = OPTIONS["method"].trait()
    samples = OPTIONS["samples"].trait()
    max_programs = OPTIONS["max_programs"].trait()
    second_opinion = OPTIONS["second_opinion"].trait()
    max_attempts = OPTIONS["max_attempts"].trait()
    timeout = OPTIONS["timeout"].trait()
    memory_gib = OPTIONS["memory_gib"].trait()
    isolation = OPTIONS["isolation"].trait()
    readable = OPTIONS["readable"].trait()
    temperature = OPTIONS["temperature"].trait()
    seed = OPTIONS["seed"].trait()
    max_new_tokens = OPTIONS["max_new_tokens"].trait()
    server_timeout = OPTIONS["server_timeout"].trait()
    context = OPTIONS["context"].trait()
    insert = Bool(True, help="Insert the winning program as a new cell below the %%pal cell.").tag(config=True)
    run_inserted = Bool(False, help="Run the inserted cell in your kernel (it has side effects).").tag(config=True)
    auto_variables = Bool(True, help="Copy in data variables that the question or program names.").tag(config=True)
    preload = Bool(False, help="Load the model in the background as soon as the extension loads.").tag(config=True)
    freeze = Bool(False, help="When a question is done, replace the live widget by static HTML "
                           "(for notebooks exported with nbconvert, which cannot render live widgets).").tag(config=True)
    trace = Unicode("", help="JSONL trace of every program: '' = the default path, 'off' = none.").tag(config=True)

    def __init__(self, shell: Any = None, **kwargs: Any):
        super().__init__(shell=shell, **kwargs)
        self.runtime = NotebookRuntime(shell, defaults=self, policy=TeacherPolicy.current(shell))

    @property
    def policy(self) -> TeacherPolicy:
        return self.runtime.policy

    @property
    def last_session(self) -> Any:
        return self.runtime.last_session

    # ------------------------------------------------------------------ magics

    @magic_arguments()
    @option_arguments(*CELL_OPTIONS)
    @argument("-u", "--use", action="append", default=[], metavar="NAME[,NAME]",
              help="copy these variables (e.g. a DataFrame) into the programs' kernels")
    @argument("--no-insert", action="store_true", help="do not insert the program as a new cell")
    @argument("--run", action="store_true", help="run the inserted cell in this kernel (side effects!)")
    @argument("-q", "--quiet", action="store_true", help="no live widget; print a summary at the end")
    @argument("--tutor", action="store_true", help="tutor mode: hints step by step instead of the program")
    @argument("--assist", action="store_true", help="assist mode: the program (when the policy allows it)")
    @argument("--hint-level", type=int, choices=range(0, 4), default=None,
              help="tutor mode: reveal hints up to this level at once")
    @argument("--check", action="store_true", help="check the student's own code in the cell body")
    @argument("--expect", type=float, default=None, help="with --check: the answer the code should print")
    @argument("question", nargs="*", help="the question (line form: %%pal QUESTION)")
    @no_var_expand
    @line_cell_magic
    def pal(self, line: str, cell: str | None = None) -> None:
        """Answer a question with programs written by a local model, each run in an isolated kernel.

        Cell form: options on the %%pal line, the question in the cell body. Line form:
        ``%pal What is 17% of 250`` (no final "?": IPython reads that as a help request; ``{x}``
        and ``$x`` are left as they are). Several programs are written at once; the answer most
        of them print wins and the widget says how many agree. When every program fails, the
        error is explained and repaired. The winning program is inserted as a new cell below.
        """
        args = parse_argstring(self.pal, line)
        question = (cell if cell is not None else " ".join(args.question)).strip()
        if cell is not None and args.question:
            raise UsageError(f"Unexpected words on the %%pal line: {' '.join(args.question)!r}. "
                             "Put the question in the cell body; options go on the %%pal line.")
        if not question:
            raise UsageError("The %%pal cell is empty: write your question in the cell below '%%pal', "
                             "for example: How far does a train go at 60 mph in 2.5 hours?")
        if self.runtime.turned_off():
            return
        with _one_line_errors():
            request = self.runtime.resolve(args, question)
            self.runtime.count_request(request.mode, question)
            self.runtime.announce_isolation(request.settings)
            {"assist": assist.ask, "tutor": tutor_view.run_tutor, "check": tutor_view.run_check}[request.mode](
                self.runtime, request)

    @line_magic
    def pal_hint(self, line: str = "") -> None:
        """Reveal the next hint for the last tutor-mode question."""
        if self.runtime.turned_off():
            return
        with _one_line_errors():
            tutor_view.reveal_next(self.runtime, from_button=False)

    @magic_arguments()
    @argument("--cell", default=None, metavar="CELL_ID",
              help="the cell whose error to explain (the 'Explain this error' button names it)")
    @line_magic
    def pal_explain(self, line: str = "") -> None:
        """Explain the error of the cell run last (or of --cell), in plain words, without re-running it.

        With a tutor question open, a last cell that ran but printed a wrong number is checked:
        the step to re-check is named, never the answer.
        """
        args = parse_argstring(self.pal_explain, line)
        if self.runtime.turned_off():
            return
        with _one_line_errors():
            self.runtime.count_request("explain")
            tutor_view.explain(self.runtime, cell_id=args.cell)

    @line_magic
    def pal_mode(self, line: str = "") -> None:
        """Switch AI help for this notebook: %pal_mode off | tutor | assist (a locked policy refuses).

        A teacher can put ``%pal_mode off`` at the top of an exam notebook; without an argument it
        shows the mode in force.
        """
        mode = line.strip()
        with _one_line_errors():
            if mode:
                self.policy.override("mode", mode)
            print(f"AI help in this notebook: {self.policy.mode} ({self.policy.origin('mode')}).")

    @line_magic
    def pal_pack(self, line: str = "") -> None:
        """Answer tutor questions from a teacher's tutor pack first: %pal_pack week3.pal-pack.json

        A pack (made with ``pal-jupyter prepare``) holds verified hints for an assignment's questions:
        ``%%pal --tutor`` on one of them shows its hints at once, with no model run, and ``%%pal --check``
        uses its key. Other questions go to the model as before. Without an argument it says which
        pack is in use.
        """
        path = line.strip().strip("'\"")
        if self.runtime.turned_off():
            return
        with _one_line_errors():
            pack = self.runtime.load_pack(path) if path else self.runtime.pack_in_use()
            if pack is None:
                print("No tutor pack is in use: load one with %pal_pack PATH (made by 'pal-jupyter prepare').")
                return
            ready = sum(bool(q.hints) for q in pack.questions)
            print(f"Tutor pack {pack.name}: {len(pack.questions)} questions, {ready} with prepared hints. "
                  "%%pal --tutor answers those from it.")

    @line_magic
    def pal_policy(self, line: str = "") -> None:
        """Show the teacher's policy in force (set in the system-wide IPython/Jupyter config)."""
        print(self.policy.describe())

    @line_magic
    def pal_config(self, line: str = "") -> None:
        """Show the current %%pal settings (change them with %config PalMagics.NAME = VALUE)."""
        rows = [f"  PalMagics.{name:<15} = {getattr(self, name)!r}" for name in sorted(self.trait_names(config=True))]
        link = self.runtime.link
        frontend = f"JupyterLab extension: {'connected (' + str(link.frontend) + ')' if link.available else 'not connected'}"
        print("\n".join(["%%pal settings:", *rows, frontend]))


class _one_line_errors:
    """The magics' error boundary: an expected failure is one UsageError line; anything else is
    one line too, with the full traceback written to a file the line names."""

    def __enter__(self) -> None:
        return None

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None, tb: Any) -> bool:
        if error is None or isinstance(error, (KeyboardInterrupt, UsageError)):
            return False
        if isinstance(error, PalError):
            raise UsageError(str(error)) from None
        if isinstance(error, Exception):
            raise UsageError(unexpected_error_message(error)) from None
        return False


def load_ipython_extension(ipython: Any) -> None:
    if os.environ.get(CHILD_KERNEL_VARIABLE):
        # A child kernel that still found this extension in a configuration it should not have
        # read: loading it would start a pool in every child, and each of those another.
        log.warning("pal_jupyter is not loaded inside a pal-jupyter child kernel.")
        return
    magics = _configured_magics(ipython)
    ipython.register_magics(magics)
    for configurable in (magics, magics.policy):  # so that %config PalMagics / TeacherPolicy work
        if configurable not in ipython.configurables:
            ipython.configurables.append(configurable)
    magics.runtime.start()
    ipython._pal_magics = magics  # found again by unload


def _configured_magics(ipython: Any) -> PalMagics:
    """PalMagics with the shell's configuration, skipping values the traits refuse.

    ``%config PalMagics.samples = 0`` is refused by the trait, yet IPython keeps the value in the
    shell's config; without this, every later ``%load_ext pal_jupyter`` would fail on it.
    """
    settings = dict(ipython.config.get("PalMagics", {}))
    others = Config({k: v for k, v in ipython.config.items() if k != "PalMagics"})
    magics = PalMagics(shell=ipython, config=others)
    for name, value in settings.items():
        if isinstance(value, DeferredConfig) and magics.has_trait(name):
            # ``--PalMagics.seed=0`` on the kernel's command line arrives as the text "0": read it
            # the way traitlets reads config it loads itself, with the trait's from_string.
            value = value.get_value(magics.traits()[name])
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
    magics.runtime.close()
    for configurable in (magics, magics.policy):
        if configurable in ipython.configurables:
            ipython.configurables.remove(configurable)
    del ipython._pal_magics
