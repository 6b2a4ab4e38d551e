"""Warm kernels (:class:`KernelPool`): started in the background with the heavy imports done, so a
program does not wait for a cold start; every program still gets a fresh kernel. And the sweep of
folders left by owners that were killed.
"""

from __future__ import annotations

import atexit
import logging
import os
import re
import shutil
import tempfile
import threading
import time
from collections import deque
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from ..errors import KernelError
from ..streaming import stream_from_worker
from . import cgroups
from .kernel import ChildKernel, close_thread_loop
from .limits import ExecutorLimits
from .outputs import IndexedOutputCallback, OutputCallback
from .processes import pid_alive
from .results import ExecutionResult
from .sandbox import resolve_level
from .transfer import pickle_variables

logger = logging.getLogger(__name__)


_OWNED_DIR = re.compile(r"^pal-(?:kernel|ipc)-(\d+)-")


def sweep_leftovers(root: str | None = None) -> list[str]:
    """Remove kernel folders (working dirs, sockets, connection files) whose owning process is gone.

    A killed notebook kernel's children exit by themselves, but nobody is left to delete their
    folders. Returns the folders removed.
    """
    root = root or tempfile.gettempdir()
    removed = []
    try:
        names = os.listdir(root)
    except OSError:
        return removed
    for name in names:
        match = _OWNED_DIR.match(name)
        if match is None or pid_alive(int(match.group(1))):
            continue
        path = os.path.join(root, name)
        shutil.rmtree(path, ignore_errors=True)
        if not os.path.exists(path):
            removed.append(path)
    if removed:
        logger.info("removed %d folder(s) left by pal-jupyter processes that are gone", len(removed))
    cgroups.sweep(pid_alive)
    return removed


class KernelPool:
    """Keeps `warm` kernels started in the background (with warm_imports done) so a program
    doesn't wait for a cold start. Every program still gets a fresh kernel.

    Thread-safe: ``acquire``/``run`` may be called from any thread. Closed at interpreter exit
    (atexit); kernels also exit on their own if this process is killed (parent poller).
    """

    def __init__(
        self,
        limits: ExecutorLimits | None = None,
        warm: int = 1,
        extra_env: Mapping[str, str] | None = None,
    ) -> None:
        if warm < 0:
            raise ValueError("warm must be >= 0")
        self.limits = limits or ExecutorLimits()
        self.isolation = resolve_level(self.limits.isolation)  # once per pool: a sandbox probe is a process
        self.warm = warm
        self.extra_env = dict(extra_env or {})
        self._cond = threading.Condition(threading.Lock())
        self._ready: deque[ChildKernel] = deque()
        self._live: set[ChildKernel] = set()  # every kernel not yet shut down, for close()
        self._starters: set[threading.Thread] = set()
        self._start_error: KernelError | None = None
        self._closed = False
        sweep_leftovers()
        atexit.register(self.close)
        with self._cond:
            self._top_up()

    # -- background starting -----------------------------------------------------------------

    def _top_up(self, at_least: int = 0) -> None:
        """Start kernels in the background until ready + starting >= max(warm, at_least)."""
        missing = max(self.warm, at_least) - len(self._ready) - len(self._starters)
        for _ in range(missing):
            thread = threading.Thread(
                target=self._start_one, name="pal-kernel-starter", daemon=True
            )
            self._starters.add(thread)
            thread.start()

    def _start_one(self) -> None:
        kernel: ChildKernel | None = None
        error: KernelError | None = None
        try:
            kernel = ChildKernel(self.limits, self.extra_env, self.isolation)
        except KernelError as exc:
            error = exc
        except Exception as exc:  # never let a starter thread die silently
            logger.exception("unexpected error starting a kernel")
            error = KernelError(f"The Python kernel for the program could not start: {exc}")
        with self._cond:
            self._starters.discard(threading.current_thread())
            if kernel is not None and not self._closed:
                self._ready.append(kernel)
                self._live.add(kernel)
                kernel = None
            elif error is not None:
                self._start_error = error
            self._cond.notify_all()
        if kernel is not None:  # the pool closed while it was starting
            kernel.shutdown()
        close_thread_loop()  # this thread ends here

    # -- public API --------------------------------------------------------------------------

    def acquire(self) -> ChildKernel:
        """Take a warm kernel (waiting if it is still starting); start its replacement."""
        wait_limit = time.monotonic() + self.limits.startup_timeout_s + 5
        with self._cond:
            while True:
                if self._closed:
                    raise KernelError("The kernel pool has been closed.")
                kernel = self._take_ready()
                if kernel is not None:
                    self._live = {k for k in self._live if not k.closed}  # forget shut ones
                    self._live.add(kernel)
                    self._top_up()
                    return kernel
                if not self._starters:
                    if self._start_error is not None:
                        error, self._start_error = self._start_error, None
                        raise error
                    self._top_up(at_least=1)
                if time.monotonic() > wait_limit:
                    raise KernelError("Timed out waiting for a Python kernel to start.")
                self._cond.wait(timeout=1.0)

    def _take_ready(self) -> ChildKernel | None:
        """Pop a ready kernel that is still alive (one could have been killed while idle)."""
        while self._ready:
            kernel = self._ready.popleft()
            if kernel.is_alive():
                return kernel
            logger.warning("a warm kernel died while idle (exit code %s)", kernel._exit_code)
            self._live.discard(kernel)
            kernel.shutdown()
        return None

    def run(
        self,
        code: str,
        variables: Mapping[str, Any] | None = None,
        *,
        on_output: OutputCallback | None = None,
        limits: ExecutorLimits | None = None,
    ) -> ExecutionResult:
        """Run one program in a fresh kernel, then shut that kernel down (``limits``: per-run
        overrides of the timeout, grace and output cap)."""
        blobs = pickle_variables(variables or {})  # fail before using up a warm kernel
        kernel = self.acquire()
        try:
            return kernel._run(code, blobs, on_output, limits)
        finally:
            kernel.shutdown()
            with self._cond:
                self._live.discard(kernel)

    def run_many(
        self,
        programs: Sequence[tuple[str, Mapping[str, Any] | None]],
        *,
        on_output: IndexedOutputCallback | None = None,
        limits: ExecutorLimits | None = None,
    ) -> list[ExecutionResult | KernelError]:
        """Run several programs at once, each in its own fresh kernel, and return their results
        in order.

        Used for the candidate programs of one question: none can see another's variables,
        files or imports, and one that hangs, floods or kills its kernel costs only its own
        result (its kernel is replaced as usual). ``on_output(i, output)`` is called from this
        thread, never from the workers, so a UI can update safely. A program whose kernel could
        not start gets a :class:`KernelError` in its place.
        """
        blobs = [pickle_variables(variables or {}) for _, variables in programs]  # fail before starting
        self.ensure_warm(len(programs))
        results: list[ExecutionResult | KernelError | None] = [None] * len(programs)

        def run_one(index: int, put: Callable[[tuple[int, dict[str, Any]]], None]) -> None:
            try:
                kernel = self.acquire()
                try:
                    results[index] = kernel._run(programs[index][0], blobs[index],
                                                 lambda out: put((index, out)), limits)
                finally:
                    kernel.shutdown()
                    with self._cond:
                        self._live.discard(kernel)
            except KernelError as exc:
                results[index] = exc
            finally:
                close_thread_loop()  # this thread ends here

        def run_all(put: Callable[[tuple[int, dict[str, Any]]], None], _cancelled: Callable[[], bool]) -> None:
            # One thread per program, so they run at once; the stream's own worker waits for them all.
            # Nothing is cancelled: a run ends by itself, within its limits.
            workers = [threading.Thread(target=run_one, args=(i, put), name=f"pal-run-{i}", daemon=True)
                       for i in range(len(programs))]
            for worker in workers:
                worker.start()
            for worker in workers:
                worker.join()

        for index, output in stream_from_worker(run_all, name="pal-run-many"):
            if on_output is not None:
                try:
                    on_output(index, output)
                except Exception:  # a broken UI callback must not break the runs
                    logger.exception("on_output callback failed")
        return [r if r is not None else KernelError("The program was not run.") for r in results]

    def ensure_warm(self, count: int) -> None:
        """Keep at least ``count`` kernels ready from now on (e.g. one per candidate program)."""
        with self._cond:
            if count > self.warm and not self._closed:
                self.warm = count
                self._top_up()

    def wait_warm(self, timeout_s: float | None = None) -> bool:
        """Wait until ``warm`` kernels are ready: True, or False when a start failed or time ran out.
        (A benchmark that times questions waits here first, as a user who reads the last answer would.)"""
        def settled() -> bool:
            return len(self._ready) >= self.warm or self._start_error is not None or self._closed

        with self._cond:
            return self._cond.wait_for(settled, timeout_s) and len(self._ready) >= self.warm

    def close(self) -> None:
        """Shut every kernel down (waiting for ones still starting). Idempotent."""
        with self._cond:
            if self._closed:
                return
            self._closed = True
            kernels, self._live = list(self._live), set()
            self._ready.clear()
            starters = list(self._starters)
            self._cond.notify_all()
        for kernel in kernels:
            kernel.shutdown()
        for thread in starters:  # each one shuts its kernel down itself once started
            thread.join(timeout=self.limits.startup_timeout_s + 5)
        atexit.unregister(self.close)

    def __enter__(self) -> KernelPool:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
