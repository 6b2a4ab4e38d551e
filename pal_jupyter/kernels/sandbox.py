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
from pathlib import Path

from ..errors import KernelError

LEVELS = ("auto", "sandbox", "process")
WORKDIR_BYTES = 512 * 1024**2  # the in-memory working directory of a sandboxed program

# What a program's environment may hold (everything else, tokens and keys above all, is dropped).
ALLOWED_ENVIRONMENT = frozenset({
    "PATH", "LANG", "LANGUAGE", "LC_ALL", "LC_CTYPE", "LC_NUMERIC", "LC_TIME", "LC_COLLATE", "LC_MONETARY",
    "LC_MESSAGES", "TZ", "PYTHONPATH", "PYTHONUNBUFFERED", "PYTHONHASHSEED", "PYTHONIOENCODING", "MPLBACKEND",
    "CUDA_VISIBLE_DEVICES", "MALLOC_ARENA_MAX", "OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS",
    "PAL_JUPYTER_CHILD_KERNEL", "VIRTUAL_ENV",
})
INSTALL_HINT = ("install bubblewrap (Debian/Ubuntu: sudo apt-get install bubblewrap) and allow unprivileged user "
                "namespaces (on by default on Debian; Ubuntu 24.04 restricts them with AppArmor: see the README), "
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
    kept = {k: v for k, v in env.items() if k in ALLOWED_ENVIRONMENT or k.startswith("LC_")}
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
    try:
        from jupyter_core.paths import jupyter_runtime_dir

        runtime = jupyter_runtime_dir()
        if os.path.isdir(runtime) and not any(_inside(runtime, r) for r in roots):
            roots.append(runtime)
    except Exception:  # jupyter_core missing or broken: the defaults above still hide its usual places
        pass
    return [r for r in roots if os.path.isdir(r)]


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
    workdir_bytes: int = WORKDIR_BYTES,
) -> list[str]:
    """``kernel_argv`` wrapped in a bubblewrap sandbox (see the module docstring)."""
    bwrap = shutil.which("bwrap")
    if bwrap is None:
        raise KernelError(f"A sandbox was asked for, but bubblewrap is not installed: {INSTALL_HINT}.")
    readable = [os.path.realpath(os.path.expanduser(p)) for p in readable]
    missing = [p for p in readable if not os.path.exists(p)]
    if missing:
        raise KernelError(f"Readable path(s) not found: {', '.join(missing)}.")
    hidden = _hidden_roots()
    argv = [bwrap, *_namespaces(), "--die-with-parent", "--new-session", "--ro-bind", "/", "/",
            "--proc", "/proc", "--dev", "/dev"]
    for root in hidden:
        argv += ["--tmpfs", root]
    for path in _needed_read_only(hidden, []):
        argv += ["--ro-bind", path, path]
    for path in readable:
        argv += ["--ro-bind", path, path]
    argv += ["--bind", runtime_dir, runtime_dir]  # the kernel's sockets, connection file, handed-over data
    argv += ["--size", str(workdir_bytes), "--tmpfs", workdir, "--chmod", "0777", workdir, "--chdir", workdir,
             "--clearenv"]
    for key, value in sorted(sandbox_environment(env, workdir).items()):
        argv += ["--setenv", key, value]
    return [*argv, "--", *kernel_argv]
