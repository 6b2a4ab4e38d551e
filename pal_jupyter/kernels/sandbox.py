"""A real sandbox for child kernels, with bubblewrap (``bwrap``).

Isolation levels (``ExecutorLimits.isolation``, ``PalMagics.isolation``, ``TeacherPolicy.isolation``,
``--isolation``):

* ``sandbox``: the kernel runs under ``bwrap`` in its own user, pid, ipc, uts, cgroup and
  network namespaces (``--unshare-all``): no network at all, its own ``/proc`` (the user's kernel
  and its connection files are invisible), the whole filesystem read-only with the user's home,
  ``/tmp`` and ``/run`` hidden behind empty ones, a private working directory in memory (a size-
  capped tmpfs), and an environment reduced to an allow-list (no tokens or keys). ``--new-session``
  stops it from typing into the terminal; ``--die-with-parent`` and the pid namespace end
  everything it started when the kernel is stopped or its parent dies.
* ``process``: a plain child process with resource limits (what pal-jupyter did before).
* ``auto`` (the default): ``sandbox`` where bubblewrap works here, else ``process``.

A policy that requires ``sandbox`` where bubblewrap cannot run is an error that says how to fix
it, never a silent downgrade.

The kernel still talks to its parent: its sockets are ipc sockets in the kernel's own runtime
folder, the one folder of the host the sandbox can write. ``readable`` paths (``--read``,
``TeacherPolicy.readable_paths``) are bound read-only at their own place, e.g. the folder of a
``sales.csv`` an analyst asks about; never the whole home.
"""

from __future__ import annotations

import functools
import os
import shutil
import subprocess
import sys
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path

from ..errors import KernelError
from .environment import allowed_environment

LEVELS = ("auto", "sandbox", "process")
# The kernel's ipc sockets, in the sandbox's own /tmp: the parent reaches them through
# /proc/PID/root (see ChildKernel), so no folder of the host is writable from inside.
SOCKETS_DIR = "/tmp/pal-jupyter-sockets"
SCRATCH_SHARE = 4  # a quarter of a program's memory limit may be files it writes (all in memory)
UNLIMITED_SCRATCH_BYTES = 512 * 1024**2  # what it may write when its memory is not limited


@dataclass(frozen=True)
class Scratch:
    """Everything a sandboxed program may write, in size-capped in-memory folders: its working
    folder (half), ``/tmp`` and ``/dev/shm`` (a quarter each). Every other place is read-only.

    The total is carved out of the program's memory limit (its address space shrinks by as much),
    so files it writes and memory it takes together stay within that one limit: tmpfs pages are
    host memory, and the user's machine must not pay for a program that fills its folders.
    """

    workdir: int
    tmp: int
    shm: int

    @classmethod
    def within(cls, memory_bytes: int) -> Scratch:
        total = memory_bytes // SCRATCH_SHARE if memory_bytes > 0 else UNLIMITED_SCRATCH_BYTES
        return cls(workdir=total // 2, tmp=total // 4, shm=total // 4)

    @property
    def total(self) -> int:
        return self.workdir + self.tmp + self.shm

INSTALL_HINT = ("install bubblewrap (Debian/Ubuntu: sudo apt-get install bubblewrap) and allow unprivileged user "
                "namespaces (on by default on Debian; Ubuntu 24.04 restricts them with AppArmor: see docs/sandbox.md), "
                "or choose isolation 'process'")


def check_level(level: str) -> str:
    if level not in LEVELS:
        raise KernelError(f"isolation must be one of {', '.join(LEVELS)}, not {level!r}.")
    return level


def bubblewrap_problem(bwrap: str | None = None) -> str | None:
    """Why a bubblewrap sandbox cannot run here (None: it can)."""
    bwrap = bwrap or shutil.which("bwrap")
    if bwrap is None:
        return "bubblewrap (bwrap) is not installed"
    return _probe(bwrap)


@functools.lru_cache(maxsize=None)
def _probe(bwrap: str) -> str | None:
    """Start one empty sandbox with ``bwrap``; what the machine allows does not change while we
    run, so every kernel start after the first reuses the answer instead of starting a process."""
    probe = [bwrap, *_namespaces(), "--die-with-parent", "--new-session", "--ro-bind", "/", "/",
             "--proc", "/proc", "--dev", "/dev", "--", sys.executable, "-c", "pass"]
    try:
        done = subprocess.run(probe, capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return f"bubblewrap could not start ({exc})"
    if done.returncode != 0:
        detail = (done.stderr.strip().splitlines() or ["no message"])[-1]
        return f"bubblewrap cannot create its namespaces here ({detail})"
    return None


def resolve_level(level: str) -> str:
    """``sandbox`` or ``process``: ``auto`` becomes the best that works; a required sandbox that cannot
    run is a KernelError naming the fix."""
    check_level(level)
    if level == "process":
        return "process"
    problem = bubblewrap_problem()
    if problem is None:
        return "sandbox"
    if level == "sandbox":
        raise KernelError(f"A sandbox is required for the program's kernel, but {problem}: {INSTALL_HINT}.")
    return "process"


def _namespaces() -> list[str]:
    """Every namespace, the user namespace included (it also gives the sandbox a process count of
    its own for RLIMIT_NPROC); no further user namespaces inside."""
    return ["--unshare-all", "--unshare-user", "--disable-userns"]


def sandbox_environment(env: Mapping[str, str], workdir: str) -> dict[str, str]:
    """The allow-listed environment of a sandboxed kernel; its home is its working directory."""
    kept = allowed_environment(env)
    # IPython's and matplotlib's state go to the sandbox's own /tmp, not into the program's folder.
    kept.update(HOME=workdir, TMPDIR="/tmp", IPYTHONDIR="/tmp/ipython", MPLCONFIGDIR="/tmp/matplotlib")
    return kept


def _hidden_roots() -> list[str]:
    """Folders replaced by empty ones in the sandbox: the home (keys, the Jupyter runtime folder
    with every kernel's connection file), /tmp (other kernels' sockets), /run (the per-user
    runtime folder) and an explicitly set Jupyter runtime folder."""
    roots = ["/tmp", "/run", "/var/tmp"]
    home = os.path.expanduser("~")
    if home not in ("/", "") and os.path.isdir(home):
        roots.append(home)
    runtime = _jupyter_runtime_dir()
    if runtime and os.path.isdir(runtime) and not any(_inside(runtime, r) for r in roots):
        roots.append(runtime)
    return [r for r in roots if os.path.isdir(r)]


# Folders of the home that hold keys, tokens, history or other kernels' connection files.
PRIVATE_HOME_FOLDERS = (
    ".ssh", ".gnupg", ".aws", ".azure", ".config", ".docker", ".kube", ".jupyter", ".ipython", ".local",
    ".cache", ".mozilla", ".pki", ".password-store", ".netrc", ".git-credentials", ".pypirc",
    ".bash_history", ".python_history", ".zsh_history",
)


def check_readable(paths: Iterable[str]) -> list[str]:
    """The real paths of ``paths`` (links resolved), each checked: it exists and exposes nothing
    of the user's world (:func:`exposure_problem`). A KernelError names the first that fails."""
    checked = []
    for given in paths:
        real = os.path.realpath(os.path.expanduser(given))
        problem = exposure_problem(given) or (None if os.path.exists(real) else "it does not exist")
        if problem:
            raise KernelError(readable_refusal(given, problem))
        checked.append(real)
    return checked


def readable_refusal(given: str, problem: str) -> str:
    """The one line that refuses a readable path, wherever it is checked."""
    return f"Readable path {given!r} refused: {problem}."


def exposure_problem(given: str) -> str | None:
    """Why letting programs read ``given`` would expose the user's world, or None.

    Refused: ``/``; the home folder, the temporary folder, ``/run`` and the Jupyter runtime folder,
    and any folder above them (they hold keys and every kernel's connection file); anything inside
    the home's private folders (``~/.ssh``, ``~/.jupyter``, ...) or the Jupyter runtime folder. A
    link is judged by where it leads. A specific data folder or file is fine.
    """
    real = os.path.realpath(os.path.expanduser(given))
    shown = given if real == given else f"{given} (which leads to {real})"
    if real == os.sep:
        return f"{shown} is the whole filesystem; name the data folder or file instead"
    home = os.path.realpath(os.path.expanduser("~"))
    for place, what in _private_places(home):
        if _inside(place, real):
            verb = "is" if place == real else "contains"
            return f"{shown} {verb} {what}; name the data folder or file inside it instead"
    for private in [*(os.path.join(home, name) for name in PRIVATE_HOME_FOLDERS), _jupyter_runtime_dir()]:
        if private and _inside(real, private):
            return f"{shown} is inside {private}, which holds keys, tokens or kernels' connection files"
    return None


def _private_places(home: str) -> list[tuple[str, str]]:
    import tempfile

    places = [(home, f"your home folder {home}"), (tempfile.gettempdir(), "the temporary folder, where "
              "kernels keep their sockets and connection files"), ("/run", "/run, the runtime folders of "
              "every user and service")]
    runtime = _jupyter_runtime_dir()
    if runtime:
        places.append((runtime, f"the Jupyter runtime folder {runtime} (every kernel's connection file)"))
    return [(os.path.realpath(p), what) for p, what in places if p and p != os.sep]


def _jupyter_runtime_dir() -> str | None:
    try:
        from jupyter_core.paths import jupyter_runtime_dir

        return jupyter_runtime_dir()
    except Exception:  # jupyter_core missing or broken: the home and /tmp still cover its usual places
        return None


def _inside(path: str, root: str) -> bool:
    path, root = os.path.realpath(path), os.path.realpath(root)
    return path == root or path.startswith(root.rstrip(os.sep) + os.sep)


def _needed_read_only(hidden: list[str], extra: Iterable[str]) -> list[str]:
    """Host paths the kernel must still read though they lie in a hidden folder: the Python
    installation, pal_jupyter itself, the matplotlib cache, and the readable paths asked for."""
    import sysconfig

    wanted = [sys.prefix, sys.base_prefix, sys.exec_prefix, str(Path(__file__).resolve().parents[2]),
              *(sysconfig.get_paths().get(k, "") for k in ("stdlib", "platstdlib", "purelib", "platlib")),
              *[p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p], *extra]
    out: list[str] = []
    for path in wanted:
        if path and os.path.exists(path):
            real = os.path.realpath(path)
            if any(_inside(real, h) for h in hidden) and not any(_inside(real, o) for o in out):
                out.append(real)
    return out


def bwrap_command(
    kernel_argv: list[str],
    *,
    workdir: str,
    runtime_dir: str,
    env: Mapping[str, str],
    readable: Iterable[str] = (),
    scratch: Scratch = Scratch.within(0),
) -> list[str]:
    """``kernel_argv`` wrapped in a bubblewrap sandbox (see the module docstring)."""
    bwrap = shutil.which("bwrap")
    if bwrap is None:
        raise KernelError(f"A sandbox was asked for, but bubblewrap is not installed: {INSTALL_HINT}.")
    readable = check_readable(readable)
    hidden = _hidden_roots()
    argv = [bwrap, *_namespaces(), "--die-with-parent", "--new-session", "--ro-bind", "/", "/",
            "--proc", "/proc", "--dev", "/dev", *_tmpfs("/dev/shm", scratch.shm)]
    for root in hidden:  # empty in the sandbox; all but /tmp are made read-only below
        argv += _tmpfs(root, scratch.tmp if root == "/tmp" else 0)
    for path in [*_needed_read_only(hidden, []), *readable]:
        argv += ["--ro-bind", path, path]
    # Read-only: the connection file and the variables handed over; the sockets are made inside.
    argv += ["--ro-bind", runtime_dir, runtime_dir, "--dir", SOCKETS_DIR]
    argv += [*_tmpfs(workdir, scratch.workdir), "--chmod", "0777", workdir, "--chdir", workdir]
    for root in [*(r for r in hidden if r != "/tmp"), "/dev"]:
        argv += ["--remount-ro", root]
    argv += ["--clearenv"]
    for key, value in sorted(sandbox_environment(env, workdir).items()):
        argv += ["--setenv", key, value]
    return [*argv, "--", *kernel_argv]


def _tmpfs(path: str, size: int) -> list[str]:
    """An empty in-memory folder at ``path``, capped at ``size`` bytes (0: uncapped, for one
    that is made read-only)."""
    return [*(["--size", str(size)] if size else []), "--tmpfs", path]
