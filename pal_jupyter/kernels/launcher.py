"""Entry point of a child kernel: apply resource limits, then start ipykernel.

Run as ``python -m pal_jupyter.kernels.launcher --memory-bytes N --cpu-seconds N -f CONN``.
The limits are set here, inside the kernel process itself, before ipykernel (and the
program it will run) exist, so they cover everything the program does, including
subprocesses it starts (rlimits are inherited across fork/exec).

The kernel exits on its own when its parent dies: jupyter_client's launcher puts the
parent's pid in ``JPY_PARENT_PID`` and ipykernel's ``ParentPollerUnix`` watches it. This
module keeps that working by passing the environment through untouched.

The kernel reads no IPython configuration: not the user's profile, not the system-wide
``/etc/ipython`` a teacher sets, no startup files, no extensions. A profile that loads
``pal_jupyter`` would otherwise load it in every child kernel, each starting a pool of its own
children (seen: 6 kernels after 3 s, 10 after 6 s). The executor also gives the kernel an
empty ``IPYTHONDIR`` of its own.
"""

from __future__ import annotations

import argparse
import faulthandler
import os
import resource
import sys
from typing import IO

# The hard CPU limit sits a little above the soft one: at the soft limit the kernel gets
# SIGXCPU (its default action ends the process, which the parent reports as a CPU-limit
# death); should anything catch SIGXCPU, the hard limit still ends it with SIGKILL.
CPU_HARD_MARGIN_S = 5


def _parse_args(argv: list[str]) -> tuple[argparse.Namespace, list[str]]:
    parser = argparse.ArgumentParser(prog="pal_jupyter.kernels.launcher", add_help=False)
    parser.add_argument("--memory-bytes", type=int, default=0, help="RLIMIT_AS; 0 = no limit")
    parser.add_argument("--cpu-seconds", type=int, default=0, help="RLIMIT_CPU; 0 = no limit")
    parser.add_argument("--file-bytes", type=int, default=0, help="RLIMIT_FSIZE; 0 = no limit")
    parser.add_argument("--open-files", type=int, default=0, help="RLIMIT_NOFILE; 0 = no limit")
    parser.add_argument("--processes", type=int, default=0, help="RLIMIT_NPROC; 0 = no limit")
    # Everything else (-f CONNECTION_FILE, ...) is ipykernel's.
    return parser.parse_known_args(argv)


def _set_limit(which: int, soft: int, hard: int) -> None:
    """Lower a limit, never above the hard limit this process inherited (that would fail)."""
    _, inherited_hard = resource.getrlimit(which)
    if inherited_hard != resource.RLIM_INFINITY:
        soft, hard = min(soft, inherited_hard), min(hard, inherited_hard)
    resource.setrlimit(which, (soft, hard))


def apply_limits(memory_bytes: int, cpu_seconds: int, file_bytes: int = 0, open_files: int = 0,
                 processes: int = 0) -> None:
    """Set the resource limits of the current process (0 leaves one as it is).

    RLIMIT_NPROC counts every process and thread of the user, so it is only set in a sandbox,
    whose user namespace has a count of its own (Linux 5.14+); root is exempt from it anyway,
    and there the pid namespace and the timeout bound a fork bomb.
    """
    if memory_bytes > 0:
        _set_limit(resource.RLIMIT_AS, memory_bytes, memory_bytes)
    if cpu_seconds > 0:
        _set_limit(resource.RLIMIT_CPU, cpu_seconds, cpu_seconds + CPU_HARD_MARGIN_S)
    if file_bytes > 0:
        _set_limit(resource.RLIMIT_FSIZE, file_bytes, file_bytes)
    if open_files > 0:
        _set_limit(resource.RLIMIT_NOFILE, open_files, open_files)
    if processes > 0:
        _set_limit(resource.RLIMIT_NPROC, processes, processes)


def enable_crash_traces() -> None:
    """On a fatal signal (segfault in a C extension), dump the Python stacks to the kernel log.

    ipykernel later points fd 2 at a pipe that it forwards to the frontend, which dies with
    the process; so faulthandler writes to a duplicate of the original stderr (the log file
    the parent reads when it reports the death).
    """
    global _CRASH_LOG
    _CRASH_LOG = os.fdopen(os.dup(sys.stderr.fileno()), "w")
    faulthandler.enable(file=_CRASH_LOG, all_threads=False)


_CRASH_LOG: IO[str] | None = None  # kept referenced so the duplicated fd stays open


def adopt_orphans() -> None:
    """Make the kernel the "subreaper" of everything the program starts (Linux).

    A process that detaches itself (a double fork, ``start_new_session=True``) is then re-parented
    to the kernel instead of to init, so the executor finds it among the kernel's descendants and
    ends it with the kernel: nothing a program started outlives it, sandbox or not.
    """
    if not sys.platform.startswith("linux"):
        return
    import ctypes

    PR_SET_CHILD_SUBREAPER = 36
    try:
        ctypes.CDLL(None, use_errno=True).prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)
    except (OSError, AttributeError):  # no prctl: the process group still covers the common case
        pass


def _plain_kernel_app() -> type:
    from ipykernel.kernelapp import IPKernelApp

    class PlainKernelApp(IPKernelApp):  # type: ignore[misc]
        """ipykernel that loads no configuration file (profile or system-wide)."""

        def load_config_file(self, *args: object, **kwargs: object) -> None:
            return None

    return PlainKernelApp


def main(argv: list[str] | None = None) -> None:
    args, kernel_argv = _parse_args(sys.argv[1:] if argv is None else argv)
    apply_limits(args.memory_bytes, args.cpu_seconds, args.file_bytes, args.open_files, args.processes)
    enable_crash_traces()
    adopt_orphans()
    _plain_kernel_app().launch_instance(argv=kernel_argv)


if __name__ == "__main__":
    main()
