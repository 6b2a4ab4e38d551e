"""What the magics, tutor mode and the widgets share in one IPython session.

:class:`NotebookRuntime` owns the services (the warm kernel pool, the loaded models, the class
log, the trace, the link to the JupyterLab extension) and resolves each ``%%pal`` cell once into
a :class:`Request`: the ``PalMagics`` defaults, the teacher's policy and the cell's options are
merged here and nowhere else, and :meth:`NotebookRuntime.solve` is the one place that calls the
engine for the notebook.
"""

from __future__ import annotations

import logging
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from IPython.display import display

from ..backends import ModelBackend
from ..classroom.classlog import ClassLog
from ..classroom.pack import PackMatch, TutorPack, pack_beside
from ..classroom.policy import TeacherPolicy
from ..engine.isolation import fallback_note
from ..engine.loop import SolveObserver, solve
from ..engine.options import OPTIONS, Settings
from ..engine.records import Program, Session
from ..engine.trace import TraceWriter, default_trace_path
from ..errors import PalError, PolicyError, SettingError
from ..kernels import KernelPool
from . import cells
from .context import NotebookContext, collect
from .error_help import CellWatcher
from .variables import data_namespace, mentioned_variables, named_variables
from .session_html import notice_bundle

log = logging.getLogger(__name__)

TUTOR_MIN_SAMPLES = 3  # the tutor always cross-checks its own answer: the careful method's two views do; a vote needs 3


@dataclass
class Request:
    """One ``%%pal`` cell, resolved: the question and everything it runs with."""

    question: str
    settings: Settings
    mode: str = "assist"  # "assist" (the program), "tutor" (hints) or "check" (the student's code)
    variables: dict[str, Any] = field(default_factory=dict)  # named: described to the model, guarded
    namespace: dict[str, Any] = field(default_factory=dict)  # other data: copied in when a program reads it
    origin: str | None = None  # the %%pal cell's id (where a program is inserted)
    insert: bool = True
    run: bool = False
    quiet: bool = False
    hint_level: int | None = None
    expect: float | None = None
    context: NotebookContext | None = None  # the notebook's last cells and error (--context N), capped


class NotebookRuntime:
    """The services of one IPython session, and the resolution of its requests.

    ``defaults`` is the configurable that holds the user's defaults (``PalMagics``: one trait
    per option of :data:`~pal_jupyter.engine.options.OPTIONS`, plus ``insert``, ``run_inserted``,
    ``auto_variables``, ``preload`` and ``trace``).
    """

    def __init__(self, shell: Any, defaults: Any, policy: TeacherPolicy):
        self.shell = shell
        self.defaults = defaults
        self.policy = policy
        self.link = cells.FrontendLink()
        self.last_session: Session | None = None
        self.tutor_plan: Any = None  # the last tutor-mode question, for %pal_hint and --check
        self.pack: TutorPack | None = None  # the teacher's prepared hints (%pal_pack, the policy, or found)
        self._pack_sought = False
        self._classlog: ClassLog | None = None
        self._pool: KernelPool | None = None
        self._pool_lock = threading.Lock()
        self._notices: set[str] = set()  # the notices already shown in this session
        self.cells = CellWatcher(self)  # the user's own cells: their errors, for help where they fail

    # ------------------------------------------------------------------ lifecycle

    def start(self) -> None:
        """Greet the frontend extension, watch the user's cells, warm a kernel, optionally preload
        the model (with AI turned off by the policy, only the first two: nothing else may start)."""
        self.link.open()
        self.cells.register(self.shell)
        if self.policy.mode == "off":
            return
        try:
            self.pool(self.settings())
        except PalError as exc:  # e.g. a required sandbox that cannot run: said again, in one line, per cell
            log.warning("No warm kernel: %s", exc)
        if self.defaults.preload:
            threading.Thread(target=self._preload, name="pal-preload", daemon=True).start()

    def _preload(self) -> None:
        try:
            self.backend(self.settings())
        except PalError as exc:
            log.warning("Preloading the model failed: %s", exc)

    def close(self) -> None:
        self.cells.unregister()
        with self._pool_lock:
            if self._pool is not None:
                self._pool.close()
                self._pool = None
        self.link.close()

    # ------------------------------------------------------------------ services

    def pool(self, settings: Settings) -> KernelPool:
        """The warm pool. Per-run limits (a cell's ``-t``) do not replace it; a new memory limit does."""
        limits = settings.limits()
        with self._pool_lock:
            if self._pool is None or not self._pool.limits.same_kernels(limits):
                if self._pool is not None:
                    self._pool.close()
                self._pool = KernelPool(limits)
            return self._pool

    def backend(self, settings: Settings) -> ModelBackend:
        return settings.load_model()

    def load_pack(self, path: str) -> TutorPack:
        """Answer tutor questions from the pack at ``path`` first (``%pal_pack``)."""
        self.pack, self._pack_sought = TutorPack.load(path), True
        return self.pack

    def pack_match(self, question: str) -> PackMatch | None:
        """The pack question ``question`` is, when a pack is in use (:meth:`pack_in_use`)."""
        pack = self.pack_in_use()
        return pack.find(question) if pack is not None else None

    def pack_in_use(self) -> TutorPack | None:
        """The tutor pack: loaded with ``%pal_pack``, named by the teacher's policy, or the one pack in
        the notebook's folder (looked for once)."""
        if self.pack is None and not self._pack_sought:
            self._pack_sought = True
            if self.policy.pack:  # the teacher named it: a broken one is an error to fix
                self.pack = TutorPack.load(self.policy.pack)
            elif (beside := pack_beside(Path.cwd())) is not None:
                try:
                    self.pack = TutorPack.load(beside)
                except PalError as exc:  # a stray file must not stop tutoring: the live tutor answers
                    log.warning("Not using the tutor pack found beside the notebook: %s", exc)
        return self.pack

    @property
    def classlog(self) -> ClassLog:
        if self._classlog is None or str(self._classlog.log_dir) != str(Path(self.policy.log_dir).expanduser()):
            self._classlog = ClassLog(self.policy.log_dir)
        return self._classlog

    def trace_writer(self) -> TraceWriter | None:
        trace = self.defaults.trace.strip()
        if trace.lower() in {"off", "none", "false", "no"}:
            return None
        return TraceWriter(trace or default_trace_path())

    # ------------------------------------------------------------------ requests

    def settings(self) -> Settings:
        """The defaults: ``PalMagics`` traits, with the teacher's model and attempts where configured."""
        values = {name: getattr(self.defaults, name) for name in OPTIONS}
        if self.policy.model:
            values["model"] = self._from_policy("model")
        if self.policy.origin("max_attempts") == "config":
            values["max_attempts"] = self._from_policy("max_attempts")
        if self.policy.origin("isolation") == "config":
            values["isolation"] = self._from_policy("isolation")
        if self.policy.readable_paths:
            values["readable"] = ",".join([*self.policy.readable_paths, values["readable"]])
        return Settings(**values)

    def _from_policy(self, name: str) -> Any:
        """The policy's value of a setting, checked by the same declaration as the option; a bad one
        is the teacher's to fix, so the error names the policy file, not the student's cell."""
        value = getattr(self.policy, name)
        try:
            return OPTIONS[name].check(value)
        except SettingError as error:
            where = ", ".join(self.policy.sources) or "the IPython/Jupyter configuration"
            raise PolicyError(f"The class policy in {where} sets TeacherPolicy.{name} = {value!r}, which cannot "
                              f"be used: {error} Fix it there (students: ask your teacher).") from None

    def resolve(self, args: Any, question: str) -> Request:
        """A cell's options, checked against the policy and merged with the defaults."""
        mode = self._mode(args)
        given = {name: getattr(args, name, None) for name in OPTIONS}
        for name in ("model", "max_attempts", "isolation"):
            if given[name] is not None:
                given[name] = self._allowed(name, given[name])
        defaults = self.settings()
        if given.get("readable"):  # a cell's readable paths add to the teacher's
            given["readable"] = ",".join(p for p in (defaults.readable, given["readable"]) if p)
        settings = defaults.updated(given)
        if mode == "tutor" and settings.method == "vote" and settings.samples < TUTOR_MIN_SAMPLES:
            settings = settings.updated({"samples": TUTOR_MIN_SAMPLES})
        user = self.shell.user_ns
        variables = named_variables(getattr(args, "use", []) or [], user)
        namespace: dict[str, Any] = {}
        if self.defaults.auto_variables:
            namespace = data_namespace(user, getattr(self.shell, "user_ns_hidden", {}), exclude=variables)
            variables.update(mentioned_variables(question, namespace))
        return Request(
            question=question, settings=settings, mode=mode, variables=variables, namespace=namespace,
            origin=cells.current_cell_id(self.shell),
            insert=self.defaults.insert and not getattr(args, "no_insert", False),
            run=getattr(args, "run", False) or self.defaults.run_inserted,
            quiet=getattr(args, "quiet", False),
            hint_level=getattr(args, "hint_level", None), expect=getattr(args, "expect", None),
            context=collect(self.shell, settings.context, self.cells.last_error) if settings.context else None,
        )

    def _mode(self, args: Any) -> str:
        """check, tutor or assist: the policy's mode is the default, may be locked, and without
        solutions allowed a request for the program becomes tutoring."""
        tutor, assist = getattr(args, "tutor", False), getattr(args, "assist", False)
        if getattr(args, "check", False):
            if tutor or assist:
                raise PalError(f"--check checks your own code in the cell; it does not go with "
                               f"{'--tutor' if tutor else '--assist'}: choose one.")
            return "check"
        if tutor and assist:
            raise PalError("Choose one of --tutor and --assist.")
        mode = "tutor" if tutor else "assist" if assist else self.policy.mode
        self._allowed("mode", mode)
        return "tutor" if mode == "tutor" or not self.policy.allow_solutions else "assist"

    def turned_off(self) -> bool:
        """With ``TeacherPolicy.mode = "off"`` every magic shows the teacher's message and does nothing else."""
        if self.policy.mode != "off":
            return False
        display(notice_bundle(self.policy.off_message), raw=True)
        return True

    def count_request(self, kind: str, question: str = "") -> None:
        """Refuse a model request past the policy's hourly limit (PolicyError); otherwise count it.

        Counted from the student's class log (questions, checks, explanations in the last hour), so
        restarting the kernel does not reset it. An assist question is logged only when a limit applies.
        """
        limit = self.policy.max_requests_per_hour
        if not limit or (kind == "tutor" and self.pack_match(question) is not None):  # a pack's hints are free
            return
        recent = self.classlog.recent(seconds=3600)
        # A tutor question logs itself twice (asked, then ready) and its checks share its id: count
        # questions by id, and every check and explanation.
        used = len({r["question_id"] for r in recent if r.get("event") == "question"}) + \
            sum(1 for r in recent if r.get("event") in ("check", "explain"))
        if used >= limit:
            raise PolicyError(f"You have used the {limit} AI requests per hour your teacher's policy allows. "
                              "Try it yourself for a while, or ask your teacher.")
        if kind == "assist":  # tutor questions, checks and explanations log themselves
            self.classlog.question(f"q-{time.time() * 1000:.0f}", question, details={"mode": "assist"})

    def _allowed(self, name: str, value: Any) -> Any:
        """``value`` if the notebook may set ``name`` to it; PolicyError (one line) if the policy locks it."""
        return self.policy.check_override(name, value)

    def announce_isolation(self, settings: Settings) -> None:
        """Say, above the cell's output, that programs run without the sandbox ``auto`` wanted, and why:
        once per session (every cell would be noise), again only if the reason changes."""
        note = fallback_note(settings.isolation)
        if note is None or note in self._notices:
            return
        self._notices.add(note)
        display(notice_bundle(note[0].upper() + note[1:]), raw=True)

    # ------------------------------------------------------------------ the engine

    def solve(self, request: Request, observer: SolveObserver | None = None,
              backend: ModelBackend | None = None) -> Session:
        """Run the engine on ``request``: the one place the notebook assembles a ``solve`` call."""
        settings = request.settings
        model = backend or self.backend(settings)
        # The cap again, with the loaded model's tokenizer where it has one (resolve() could only estimate).
        context = request.context.sent_to(model) if request.context is not None else None
        return solve(request.question, settings, model=model, executor=self.pool(settings),
                     variables=request.variables, namespace=request.namespace, trace=self.trace_writer(), observer=observer,
                     context=context)

    def insert(self, session: Session, origin: str | None, program: Program | None = None, *, run: bool = False,
               allow_payload: bool = True) -> cells.Insertion:
        """Put a program of ``session`` into the cell below ``origin``; ``run`` it where no extension can."""
        insertion = cells.insert_program(self.shell, self.link, session, origin, program=program, run=run,
                                         allow_payload=allow_payload)
        if run and insertion.route != "extension":
            # No extension to run the new cell: run the program here, visibly, in this cell.
            self.shell.run_cell(cells.cell_source(session, program), store_history=False)
        return insertion
