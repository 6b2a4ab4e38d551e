"""Entry point of a child kernel: apply resource limits, then start ipykernel.

Run as ``python -m pal_jupyter.kernels.launcher --memory-bytes N --cpu-seconds N -f CONN``.
The limits are set here, inside the kernel process itself, before ipykernel (and the
program it will run) exist, so they cover everything the program does, including
subprocesses it starts (rlimits are inherited across fork/exec).

The launcher forks: the kernel runs in the child, and this process stays as its *keeper*
(:func:`keep`), the subreaper and root of everything the program starts. When the kernel exits,
or the parent that started it dies (even by ``kill -9``), the keeper ends the whole tree,
detached processes included, and exits as the kernel did.

The kernel reads no IPython configuration: not the user's profile, not the system-wide
``/etc/ipython`` a teacher sets, no startup files, no extensions. A profile that loads
``pal_jupyter`` would otherwise load it in every child kernel, each starting a pool of its own
children (seen: 6 kernels after 3 s, 10 after 6 s). Its environment (:mod:`.command`) also gives the
kernel an empty ``IPYTHONDIR`` of its own.
"""

from __future__ import annotations

import argparse
import faulthandler
import os
import resource
import signal
import sys
import time
from typing import IO, NoReturn

from .processes import kill_descendants

# The hard CPU limit sits a little above the soft one: at the soft limit the kernel gets
# SIGXCPU (its default action ends the process, which the parent reports as a CPU-limit
# death); should anything catch SIGXCPU, the hard limit still ends it with SIGKILL.
CPU_HARD_MARGIN_S = 5
KEEPER_POLL_S = 0.1  # how soon a dead kernel or parent is noticed


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
    """Make this process (the keeper) the "subreaper" of everything the program starts (Linux).

    A process that detaches itself (a double fork, ``start_new_session=True``) is then re-parented
    to the keeper instead of to init, so it stays in the tree that ends with the kernel: nothing a
    program started outlives it, sandbox or not. (Not inherited by fork: the kernel is no reaper.)
    """
    if not sys.platform.startswith("linux"):
        return
    import ctypes

    PR_SET_CHILD_SUBREAPER = 36
    try:
        ctypes.CDLL(None, use_errno=True).prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)
    except (OSError, AttributeError):  # no prctl: the process group still covers the common case
        pass


def keep(kernel: int, parent: int, poll_s: float = KEEPER_POLL_S) -> NoReturn:
    """Stay beside the kernel as the root of its process tree, and end the whole tree with it.

    This process is the subreaper of everything below it, so a program's detached processes
    (``setsid``, a double fork) stay in this tree even when the kernel itself dies. The tree
    ends, and this process exits as the kernel did, when:

    * the kernel exits (the program killed it, it crashed, it was shut down);
    * ``parent``, the process that started the kernel (the user's kernel, the CLI), dies, even by
      ``kill -9``, or is gone before we look: nothing would be left to clean up after us;
    * SIGTERM arrives. SIGINT is for the kernel (an interrupt reaches the whole process group).
    """
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, lambda *_: _end_tree(signal.SIGTERM))  # a signal number is its wait status
    while True:
        status = _reap_all(kernel)
        if status is not None:
            _end_tree(status)
        if os.getppid() != parent:
            _end_tree(signal.SIGKILL)
        time.sleep(poll_s)


def _reap_all(kernel: int) -> int | None:
    """Reap every finished child (adopted orphans too, or they stay zombies); the kernel's wait
    status once it has exited, else None."""
    kernel_status = None
    while True:
        try:
            pid, status = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:  # no children left at all
            return kernel_status if kernel_status is not None else 0
        if pid == 0:
            return kernel_status
        if pid == kernel:
            kernel_status = status


def _end_tree(status: int) -> NoReturn:
    """End everything below this process, then exit as a process with this wait status did, so our
    parent sees the kernel's own end (a signal stays a signal: the parent's :mod:`.kernel` tells a CPU
    limit or a segfault apart by it)."""
    kill_descendants(os.getpid())
    if os.WIFSIGNALED(status):
        signum = os.WTERMSIG(status)
        if signum not in (signal.SIGKILL, signal.SIGSTOP):  # the two that cannot be handled
            signal.signal(signum, signal.SIG_DFL)
        os.kill(os.getpid(), signum)
        os.kill(os.getpid(), signal.SIGKILL)  # a signal whose default is to be ignored: end anyway
    os._exit(os.WEXITSTATUS(status) if os.WIFEXITED(status) else 1)


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
    # The keeper below watches our parent; ipykernel's own parent poller would race it (and the
    # variable would show the program the pid of the user's kernel). jupyter_client sets it to the
    # pid of the process that started us, which may already be gone by now (then getppid() is 1).
    parent = int(os.environ.pop("JPY_PARENT_PID", "0") or 0) or os.getppid()
    adopt_orphans()
    kernel = os.fork()
    if kernel == 0:
        enable_crash_traces()
        _plain_kernel_app().launch_instance(argv=kernel_argv)
        return
    keep(kernel, parent)


if __name__ == "__main__":
    main()
