"""The teacher's policy for %%pal in a classroom: mode, hint cap, solutions, attempts, logs.

A teacher or JupyterHub admin sets it in the ordinary IPython/Jupyter traitlets configuration,
for example in the system-wide ``/etc/ipython/ipython_config.py`` (or
``{sys.prefix}/etc/ipython/ipython_config.py``, or a profile's ``ipython_config.py``)::

    c.TeacherPolicy.mode = "tutor"              # hints and checks instead of finished programs ("off": no AI)
    c.TeacherPolicy.max_requests_per_hour = 20  # per student; 0 = no limit
    c.TeacherPolicy.max_hint_level = 2          # sub-questions and skeletons, never the program
    c.TeacherPolicy.allow_solutions = False
    c.TeacherPolicy.max_attempts = 2
    c.TeacherPolicy.log_dir = "/srv/class/logs"
    c.TeacherPolicy.locked = ["mode", "max_hint_level", "allow_solutions", "log_dir"]

``%pal_policy`` (or ``TeacherPolicy.describe()``) shows the active policy and where it came from.

A locked setting keeps the value the configuration gave it: the magics refuse notebook overrides
of it (``%config``, magic options, assignments to the policy) with a
:class:`~pal_jupyter.errors.PolicyError` that names the policy. That keeps honest students inside
it; it is **not** a security boundary. The kernel runs as the student, who can shadow the system
configuration with their own profile, edit objects in memory or reinstall the package; real
enforcement needs JupyterHub with a read-only configuration and a model server that applies the
policy itself (docs/classroom.md, "Behind JupyterHub").
"""

from __future__ import annotations

import logging
import os
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from traitlets import Bool, Enum, Float, Int, List, TraitError, Unicode, default, validate
from traitlets.config import Application, Config, Configurable
from traitlets.config.loader import PyFileConfigLoader

from ..engine.options import OPTIONS
from ..errors import PolicyError
from .classlog import default_log_dir

log = logging.getLogger(__name__)

HINT_LEVELS = {
    0: "no hints (checks of the student's own code only)",
    1: "guiding sub-questions",
    2: "code skeleton with blanks",
    3: "full program",
}


class LockedSettingError(PolicyError, TraitError):
    """A locked setting was changed; a TraitError too, so traitlets rolls back a config update."""


class TeacherPolicy(Configurable):
    """What %%pal may do for a student: set it in the system-wide IPython/Jupyter config."""

    mode = Enum(["assist", "tutor", "off"], "assist",
                help="assist: write and run programs for the user; tutor: hints and checks first; "
                     "off: the magics show off_message and do nothing else (an exam, a course without AI)."
                ).tag(config=True)
    off_message = Unicode("AI help is turned off here by your teacher's policy.",
                          help="What every %%pal magic answers while mode is 'off'.").tag(config=True)
    max_requests_per_hour = Int(0, min=0,
                                help="Most model requests per student in any hour (%%pal questions, checks and "
                                     "explanations; hints already prepared are free); 0 = no limit. Counted "
                                     "from the student's class log, so a restarted kernel does not reset it."
                                ).tag(config=True)
    error_help = Enum(["off", "button", "tip"], "button",
                      help="Help at a student's failing cell: 'button' shows 'Explain this error' (and 'Hint' "
                           "in tutor mode) on the cell in JupyterLab; 'tip' also prints a one-line tip once "
                           "per session where no extension can show it; 'off' neither.").tag(config=True)
    max_hint_level = Int(3, min=0, max=3,
                         help="Highest hint: 0 none, 1 sub-questions, 2 code skeleton, 3 full program."
                         ).tag(config=True)
    allow_solutions = Bool(True, help="Whether full programs may be inserted or revealed.").tag(config=True)
    max_attempts = Int(OPTIONS["max_attempts"].default, min=1,
                       help="Most attempts (repairs included) per question.").tag(config=True)
    model = Unicode("", help="Model students should use ('' = no preference).").tag(config=True)
    isolation = Enum(["auto", "sandbox", "process"], "auto",
                     help="Where programs run: 'sandbox' requires bubblewrap (a clear error where it cannot run); "
                          "'auto' uses it where it works.").tag(config=True)
    readable_paths = List(Unicode(), help="Files or folders every student's programs may read in the sandbox, "
                                          "e.g. ['/srv/class/data']").tag(config=True)
    min_agreement = Float(0.6, min=0.0, max=1.0,
                          help="Tutor mode: the share of the tutor's own programs that must agree on an answer "
                               "before it gives hints towards it; below it, the tutor says it is not sure.").tag(config=True)
    pack = Unicode("", help="A tutor pack (made by 'pal-jupyter prepare') whose questions %%pal --tutor answers "
                            "from its verified hints, with no model run; '' = the one *.pal-pack.json in the "
                            "notebook's folder, if any.").tag(config=True)
    log_dir = Unicode(help="Folder of the per-student JSONL class logs "
                           "(default: $PAL_JUPYTER_LOG_DIR or ~/.local/share/pal-jupyter/logs).").tag(config=True)
    locked = List(Unicode(), help="Settings students may not change from the notebook, "
                                  "e.g. ['mode', 'max_hint_level', 'allow_solutions'].").tag(config=True)

    def __init__(self, sources: Iterable[str] = (), **kwargs: Any):
        super().__init__(**kwargs)
        self.sources = [str(s) for s in sources]  # config files the values came from, for describe()
        # Freeze what the configuration said: locks compare against it, describe() reports it.
        self._configured = {n for n in self.setting_names() if f"TeacherPolicy.{n}" in self.config}
        self._sealed: dict[str, Any] = {n: getattr(self, n) for n in self.setting_names()}

    # ------------------------------------------------------------------ construction

    @classmethod
    def from_config(cls, config: Config, sources: Iterable[str] = ()) -> TeacherPolicy:
        """The policy a traitlets ``Config`` describes (``sources``: where that config came from)."""
        return cls(config=config, sources=sources)

    @classmethod
    def from_file(cls, path: str) -> TeacherPolicy:
        """The policy in one ``ipython_config.py``-style file."""
        file = Path(path).expanduser().resolve()
        config = PyFileConfigLoader(file.name, path=str(file.parent)).load_config()
        return cls.from_config(config, sources=[str(file)])

    @classmethod
    def current(cls, shell: Any = None) -> TeacherPolicy:
        """The policy of the running IPython/Jupyter application (defaults outside one)."""
        app = Application.instance() if Application.initialized() else None
        config = shell.config if shell is not None else (app.config if app is not None else Config())
        sources = getattr(app, "loaded_config_files", []) if app is not None else []
        return cls.from_config(config, sources=sources)

    @default("log_dir")
    def _default_log_dir(self) -> str:
        return str(default_log_dir())

    @classmethod
    def setting_names(cls) -> list[str]:
        return sorted(cls.class_trait_names(config=True))

    # ------------------------------------------------------------------ locks

    @validate("locked")
    def _known_names(self, proposal: Any) -> list[str]:
        unknown = sorted(set(proposal.value) - set(self.setting_names()))
        if unknown:
            raise TraitError(f"TeacherPolicy.locked names unknown settings {unknown}; "
                             f"known settings: {', '.join(self.setting_names())}")
        return self._guard(proposal)

    @validate("mode", "off_message", "max_requests_per_hour", "error_help", "max_hint_level", "allow_solutions",
              "max_attempts", "model", "log_dir", "min_agreement", "isolation", "readable_paths", "pack")
    def _refuse_locked(self, proposal: Any) -> Any:
        return self._guard(proposal)

    def _guard(self, proposal: Any) -> Any:
        """Runs on every change (assignment, %config, config reload): locked values stay put."""
        sealed = getattr(self, "_sealed", None)
        if sealed is not None:  # None while the configuration itself is being loaded
            self._check_lock(proposal.trait.name, proposal.value, sealed, LockedSettingError)
        return proposal.value

    @staticmethod
    def _check_lock(name: str, value: Any, sealed: dict[str, Any], error: type[PolicyError]) -> None:
        if name == "locked" and value != sealed["locked"]:
            raise error("TeacherPolicy.locked can only be set in the system configuration, not from a notebook.")
        if name in sealed["locked"] and value != sealed[name]:
            raise error(f"TeacherPolicy.{name} is locked by your teacher's policy at {sealed[name]!r}; "
                        f"it cannot be changed to {value!r} from the notebook. Ask your teacher if you need this.")

    def check_override(self, name: str, value: Any) -> Any:
        """Check that the notebook may set ``name`` to ``value``; return the validated value.

        Raises PolicyError for unknown settings, invalid values, and changes of locked settings.
        """
        if name not in self.setting_names():
            raise PolicyError(f"No policy setting {name!r}; the settings are: {', '.join(self.setting_names())}")
        try:
            value = self.traits()[name].validate(self, value)
        except TraitError as exc:
            raise PolicyError(f"Invalid value for TeacherPolicy.{name}: {exc}") from exc
        self._check_lock(name, value, self._sealed, PolicyError)  # compare validated values
        return value

    def override(self, name: str, value: Any) -> None:
        """Set ``name`` from the notebook after :meth:`check_override` allowed it."""
        setattr(self, name, self.check_override(name, value))
        log.info("policy setting %s changed from the notebook to %r", name, value)

    # ------------------------------------------------------------------ what it means

    def effective_hint_cap(self) -> int:
        """The highest hint level that may be shown: 3 (a full program) only if solutions are allowed."""
        return min(self.max_hint_level, 3 if self.allow_solutions else 2)

    @property
    def solutions_allowed(self) -> bool:
        """Whether a full, working program may be inserted or revealed."""
        return self.effective_hint_cap() >= 3

    def origin(self, name: str) -> str:
        """Where the current value of ``name`` came from: notebook, config, environment or default."""
        if getattr(self, name) != self._sealed[name]:
            return "changed in the notebook"
        if name in self._configured:
            return "config"
        if name == "log_dir" and os.environ.get("PAL_JUPYTER_LOG_DIR"):
            return "$PAL_JUPYTER_LOG_DIR"
        return "default"

    def describe(self) -> str:
        """A readable summary: every setting, its origin, which are locked, and what that means."""
        lines = [f"pal-jupyter teacher policy ({self.mode} mode)"]
        for name in self.setting_names():
            if name == "locked":
                continue
            lock = "locked" if name in self.locked else "student may change"
            lines.append(f"  {name:<16} = {getattr(self, name)!r:<28} [{self.origin(name)}; {lock}]")
        cap = self.effective_hint_cap()
        lines.append(f"  hints up to level {cap}: {HINT_LEVELS[cap]}")
        lines.append(f"  full solutions: {'may be inserted/revealed' if self.solutions_allowed else 'not allowed'}")
        lines.append(f"  locked settings: {', '.join(self.locked) if self.locked else 'none'}")
        lines.append("  loaded from: " + ("; ".join(self.sources) if self.sources else
                                          "built-in defaults and the running configuration"))
        if self.locked:
            lines.append("  (A lock stops %%pal from honouring notebook overrides; it is not a security "
                         "boundary on a kernel the student controls.)")
        return "\n".join(lines)
