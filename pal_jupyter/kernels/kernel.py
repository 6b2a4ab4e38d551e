"""One program's kernel (:class:`ChildKernel`): started, given the variables, run once, shut down.

Each program gets a fresh kernel (no state leaks between programs); :mod:`.pool` hides the cold
start. A :class:`ChildKernel` is one jupyter_client ``KernelManager`` (:mod:`.command` builds its
command and environment) plus its ``BlockingKernelClient``. Its output loop polls iopub with short
timeouts and checks the process every ~0.1 s, because a kernel that dies (``os._exit``, SIGXCPU,
an OOM kill) sends no message; it interrupts a program that overruns its time or floods its output
(:mod:`.outputs`), and kills the kernel when the interrupt is ignored. Shutdown ends everything the
program started (the launcher's keeper is the root of that tree: :mod:`.launcher`), then the
kernel's process group, and removes its folders.
"""


from __future__ import annotations

import asyncio
import logging
import os
import re
import shutil
import signal
import sys
import tempfile
import threading
import time
from collections.abc import Mapping
from pathlib import Path
from queue import Empty
from typing import Any

import cloudpickle
from jupyter_client.blocking import BlockingKernelClient

from ..errors import KernelError, VariableError
from . import cgroups
from .charts import CHARTS_EXPRESSION, Chart, parse_charts, reader_expression
from .command import LimitedKernelManager, kernel_env, kernel_spec, setup_code
from .limits import ExecutorLimits, describe_exit
from .outputs import OutputCallback, OutputCollector
from .processes import children_by_parent, kill_descendants
from .results import ErrorInfo, ExecutionResult, StopReason
from .sandbox import SOCKETS_DIR, resolve_level
from .tracebacks import PROGRAM_FILENAME, crash_trace, make_error_info, strip_ansi
from .transfer import VARIABLES_FILE, load_variables_code, pickle_variables

logger = logging.getLogger(__name__)

POLL_S = 0.1  # iopub poll timeout; also how often the kernel process is checked
SETUP_TIMEOUT_S = 10.0  # for small silent executes (variable loading)
CLOSED_WHILE_RUNNING = "The program's kernel was shut down while the program ran (its pool was closed)."


def close_thread_loop() -> None:
    """Close the asyncio loop that jupyter_client's blocking calls made for this thread, unless it is
    running (jupyter_core makes one per thread and never closes it). Call it where the thread's work
    with kernels is over: a kernel manager keeps a future of the loop it started in, so such a loop
    outlived its thread, and one left to the interpreter's exit could be finalised after its own
    sockets ("Exception ignored in: BaseEventLoop.__del__ ... Invalid file descriptor: -1" at the end
    of a fresh ``make demo``, twice). Never in a thread whose loop is someone else's (a Jupyter kernel's)."""
    try:
        loop = asyncio.get_event_loop_policy().get_event_loop()
    except RuntimeError:  # this thread has none
        return
    if loop.is_running():
        return
    loop.close()
    asyncio.set_event_loop(None)


class ChildKernel:
    """One started kernel (KernelManager + BlockingKernelClient). Used once per program.

    Constructing it starts the kernel process (with limits, env, temp cwd) and runs the warm
    imports; it raises :class:`KernelError` if the kernel cannot start in time.
    Attributes: ``pid`` (the process we started: the launcher's keeper, under bwrap in a sandbox;
    also the process group), ``cwd`` (the program's temp working dir), ``runtime_dir`` (the
    connection file, the kernel's own log; its ipc sockets too outside a sandbox), ``limits``.
    """

    def __init__(
        self, limits: ExecutorLimits | None = None, extra_env: Mapping[str, str] | None = None,
        isolation: str | None = None,
    ) -> None:
        self.limits = limits or ExecutorLimits()
        self.isolation = resolve_level(isolation or self.limits.isolation)  # "sandbox" or "process"
        self._active = self.limits  # the limits of the run in progress
        # Both folders carry our pid, so that a later start can sweep what a killed owner left.
        self.cwd = tempfile.mkdtemp(prefix=f"pal-kernel-{os.getpid()}-")
        self.runtime_dir = tempfile.mkdtemp(prefix=f"pal-ipc-{os.getpid()}-")  # ipc sockets, connection file
        self._lock = threading.Lock()
        self._closed = False
        self._exit_code: int | None = None
        self._shut = threading.Event()  # set at shutdown: a sandbox's keeper thread may end then
        self._env = kernel_env(extra_env, self.runtime_dir, self.cwd)
        self.cgroup = cgroups.pids_cgroup(f"k-{os.getpid()}-{os.path.basename(self.runtime_dir)}",
                                          self.limits.max_processes)
        self._kc: BlockingKernelClient | None = None
        try:  # from here on, a failure removes the folders and the cgroup made above
            self._km = LimitedKernelManager(
                spec=kernel_spec(self.limits, self.isolation, self.cwd, self.runtime_dir, self._env, self.cgroup),
                # A sandboxed kernel makes its sockets in its own /tmp (see _reach_sandboxed_sockets).
                transport="ipc", ip=os.path.join(SOCKETS_DIR if self.isolation == "sandbox" else self.runtime_dir, "k"),
                connection_file=os.path.join(self.runtime_dir, "connection.json"),
            )
            self._start()
        except KernelError:
            self.shutdown()
            raise
        except Exception as exc:
            self.shutdown()
            raise KernelError(f"The Python kernel for the program could not start: {exc}") from exc
        except BaseException:  # KeyboardInterrupt while starting: no orphan kernel
            self.shutdown()
            raise

    # -- lifecycle ---------------------------------------------------------------------------

    def _start(self) -> None:
        deadline = time.monotonic() + self.limits.startup_timeout_s
        started = time.monotonic()
        # The kernel's own stdout/stderr (start-up tracebacks, ipykernel warnings) go to a log
        # file, so a start-up failure can say why; the program's output travels over iopub.
        self._log_path = os.path.join(self.runtime_dir, "kernel.log")
        if self.isolation == "sandbox":
            self._launch_from_keeper_thread()
        else:
            self._launch()
        provisioner = self._km.provisioner
        self._proc = provisioner.process  # type: ignore[union-attr]
        self._pgid: int | None = provisioner.pgid  # type: ignore[union-attr]
        self.pid: int = provisioner.pid  # type: ignore[union-attr]
        if self.isolation == "sandbox":
            self._reach_sandboxed_sockets(deadline)
        # Share the manager's zmq context: shutdown destroys it (a client's own would linger).
        self._kc = self._km.client(context=self._km.context)
        self._kc.start_channels(hb=False)  # liveness comes from the process, not heartbeats
        try:
            self._kc.wait_for_ready(timeout=max(1.0, deadline - time.monotonic()))
        except RuntimeError as exc:
            raise KernelError(self._startup_failure(str(exc))) from exc
        reply = self._execute_quiet(setup_code(self.limits.warm_imports), deadline)
        if reply.get("status") != "ok":
            logger.warning("kernel setup reported %s: %s", reply.get("status"), reply.get("evalue"))
        logger.debug("kernel %s ready in %.2f s", self.pid, time.monotonic() - started)

    def _reach_sandboxed_sockets(self, deadline: float) -> None:
        """Point our side at the sockets the sandboxed kernel makes in its own ``/tmp``.

        No host folder is writable from the sandbox (a program could fill it); the kernel's
        sockets live in the sandbox's size-capped ``/tmp`` instead, and we reach them through
        ``/proc/PID/root`` of the sandbox's first process, a view into its filesystem that its
        owner (us) may use. Until that process has set up its mounts, connections are refused
        and retried (zmq reconnects by itself).
        """
        while True:
            inner = children_by_parent().get(self.pid, [])  # bwrap's one child: the sandbox's init
            if inner:
                break
            if self._proc.poll() is not None or time.monotonic() > deadline:
                raise KernelError(self._startup_failure("the sandbox did not start"))
            time.sleep(0.005)
        self._km.reach_sockets_at(f"/proc/{inner[0]}/root{self._km.ip}")

    def _launch(self) -> None:
        with open(self._log_path, "wb") as log:
            # A sandboxed kernel's working folder exists only inside its sandbox (in memory).
            cwd = self.cwd if self.isolation == "process" else self.runtime_dir
            self._km.start_kernel(env=self._env, cwd=cwd, stdout=log, stderr=log)

    def _launch_from_keeper_thread(self) -> None:
        """Start bwrap from a thread that lives as long as the kernel.

        ``bwrap --die-with-parent`` ends the sandbox when the *thread* that started it ends
        (that is how PR_SET_PDEATHSIG works), and kernels are started from short-lived pool
        threads. A keeper thread per kernel waits until the kernel is shut down, so the sandbox
        dies with this process, and not before.
        """
        launched = threading.Event()
        failure: list[BaseException] = []

        def keep() -> None:
            try:
                self._launch()
            except BaseException as exc:  # re-raised in the starting thread
                failure.append(exc)
            finally:
                close_thread_loop()  # this thread only waits from here on
                launched.set()
            if not failure:
                self._shut.wait()

        threading.Thread(target=keep, name="pal-sandbox-keeper", daemon=True).start()
        launched.wait()
        if failure:
            raise failure[0]

    def _startup_failure(self, detail: str) -> str:
        code = self._proc.poll()
        if code is None:
            what = f"did not start within {self.limits.startup_timeout_s:g} s ({detail})"
        else:
            what = f"exited during start-up (exit code {code})"
        log = self._log_tail()
        return (
            f"The Python kernel for the program {what}. Check that ipykernel is installed for "
            f"{sys.executable} and that the machine is not out of memory."
            + (f"\nKernel log:\n{log}" if log else "")
        )

    def _log_tail(self, max_chars: int = 2000) -> str:
        try:
            with open(self._log_path, "rb") as f:
                f.seek(0, os.SEEK_END)
                f.seek(max(0, f.tell() - max_chars))
                return f.read().decode(errors="replace").strip()
        except OSError:
            return ""

    @property
    def closed(self) -> bool:
        """True once shutdown() ran (or started)."""
        return self._closed

    def is_alive(self) -> bool:
        if self._closed:
            return False
        alive = bool(self._km.is_alive())
        if not alive and self._exit_code is None:
            code = self._proc.poll()
            if self.isolation == "sandbox" and code is not None and code > 128:
                code = -(code - 128)  # bwrap reports a signal that ended the kernel as 128 + signal
            self._exit_code = code
        return alive

    def shutdown(self) -> None:
        """Kill the kernel's whole process group, reap it, remove its temp dirs. Idempotent."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
        if self._kc is not None:
            self._kc.stop_channels()
        # What the program started, first: detached processes are re-parented to the kernel (the
        # launcher makes it their subreaper) only while it lives.
        kill_descendants(getattr(self, "pid", None))
        try:
            # now=True: SIGINT then SIGKILL to the process group, wait, remove connection/ipc files.
            km = getattr(self, "_km", None)  # absent when the kernel's command could not be built
            if km is not None:
                km.shutdown_kernel(now=True)
        except Exception:
            logger.exception("shutdown_kernel failed; killing the process group directly")
        self._reap()
        self._shut.set()
        shutil.rmtree(self.cwd, ignore_errors=True)
        shutil.rmtree(self.runtime_dir, ignore_errors=True)
        cgroups.remove(self.cgroup)

    def _reap(self) -> None:
        """Make sure no process of the kernel's group survives and the kernel is not a zombie."""
        proc = getattr(self, "_proc", None)
        if proc is None:
            return
        if self._pgid:
            try:
                os.killpg(self._pgid, signal.SIGKILL)  # sleeping grandchildren of the program too
            except (ProcessLookupError, PermissionError):
                pass
        try:
            proc.wait(timeout=5)
        except Exception:
            logger.warning("kernel process %s did not exit after SIGKILL", proc.pid)

    def __enter__(self) -> ChildKernel:
        return self

    def __exit__(self, *exc: object) -> None:
        self.shutdown()

    # -- running -----------------------------------------------------------------------------

    @property
    def client(self) -> BlockingKernelClient:
        if self._kc is None or self._closed:
            raise KernelError("This kernel has been shut down; start a new one.")
        return self._kc

    def _execute_quiet(self, code: str, deadline: float, user_expressions: dict[str, str] | None = None
                       ) -> dict[str, Any]:
        """Run setup code silently (no history, no outputs) and return the shell reply content."""
        msg_id = self.client.execute(code, silent=True, store_history=False, allow_stdin=False,
                                     user_expressions=user_expressions)
        while True:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise KernelError(self._startup_failure("no reply to a setup request"))
            try:
                reply = self.client.get_shell_msg(timeout=min(POLL_S, remaining))
            except Empty:
                if not self.is_alive():
                    raise KernelError(describe_exit(self._exit_code, self.limits)) from None
                continue
            if reply["parent_header"].get("msg_id") == msg_id:
                return dict(reply["content"])

    def _load_variables(self, blobs: Mapping[str, bytes]) -> None:
        """Hand pickled variables over through a file in the kernel's runtime folder, the one host
        folder a sandboxed kernel can read (read-only); we delete it before the program runs."""
        path = os.path.join(self.runtime_dir, VARIABLES_FILE)
        try:
            with open(path, "wb") as f:
                cloudpickle.dump(blobs, f)
            deadline = time.monotonic() + SETUP_TIMEOUT_S
            reply = self._execute_quiet(load_variables_code(path), deadline)
        finally:
            Path(path).unlink(missing_ok=True)
        if reply.get("status") != "ok":
            raise VariableError(
                f"Some variables could not be loaded in the program's kernel: "
                f"{strip_ansi(str(reply.get('evalue', '')))}"
            )

    def run(
        self,
        code: str,
        variables: Mapping[str, Any] | None = None,
        *,
        on_output: OutputCallback | None = None,
        limits: ExecutorLimits | None = None,
    ) -> ExecutionResult:
        """Run ``code`` as one cell; return what it printed/displayed and how it ended.

        ``variables`` are loaded into the program's globals first; VariableError names one that
        cannot be pickled here or unpickled in the kernel. ``limits`` overrides the per-run
        limits (timeout, grace, output cap) for this run.
        """
        return self._run(code, pickle_variables(variables or {}), on_output, limits)

    def _run(
        self, code: str, blobs: Mapping[str, bytes], on_output: OutputCallback | None,
        limits: ExecutorLimits | None = None,
    ) -> ExecutionResult:
        if not self.is_alive():
            raise KernelError("The program's kernel is not running; start a new one.")
        self._active = limits or self.limits
        if blobs:
            self._load_variables(blobs)
        collector = OutputCollector(self._active.max_output_bytes, on_output)
        started = time.monotonic()
        try:
            msg_id = self.client.execute(code, silent=False, store_history=True, allow_stdin=False)
            reason, error = self._collect(msg_id, collector, started)
        except Exception:
            if not self._closed:
                raise
            # close() from another thread (the pool was closed, the extension unloaded): the
            # sockets are gone, and zmq says so in its own words.
            raise KernelError(CLOSED_WHILE_RUNNING) from None
        result = ExecutionResult(
            reason=reason,
            stdout=collector.text("stdout"),
            stderr=collector.text("stderr"),
            outputs=collector.outputs,
            error=error,
            duration_s=time.monotonic() - started,
            truncated=collector.truncated,
        )
        if result.ok and result.shows_figure:
            result.charts = self._read_charts()
        return result

    def _read_charts(self) -> list[Chart] | None:
        """What the program's open figures draw (:mod:`.charts`); None when they cannot be read."""
        try:
            reply = self._execute_quiet("", time.monotonic() + SETUP_TIMEOUT_S,
                                        user_expressions={CHARTS_EXPRESSION: reader_expression()})
        except KernelError as exc:  # the figures' data is a bonus: the run's result stands without it
            logger.info("figures not read back: %s", exc)
            return None
        # No open figure after one was shown: the program closed it; what it drew is not known.
        return parse_charts(reply.get("user_expressions", {}).get(CHARTS_EXPRESSION, {})) or None

    def _collect(
        self, msg_id: str, collector: OutputCollector, started: float
    ) -> tuple[StopReason, ErrorInfo | None]:
        """Read iopub until the cell is idle, it overruns, floods, or the kernel dies."""
        deadline = started + self._active.timeout_s
        stopping: StopReason | None = None  # set once we interrupted the program
        grace_end = float("inf")
        error: ErrorInfo | None = None
        next_alive_check = 0.0
        while True:
            now = time.monotonic()
            if stopping is None and now >= deadline:
                stopping, grace_end = StopReason.TIMEOUT, self._interrupt(now)
            elif stopping is None and collector.truncated:
                stopping, grace_end = StopReason.OUTPUT_LIMIT, self._interrupt(now)
            elif now >= grace_end:
                logger.info("kernel %s ignored the interrupt: killing it", self.pid)
                self.shutdown()
                break
            if now >= next_alive_check:  # even while output floods in, never only on Empty
                next_alive_check = now + POLL_S
                if not self.is_alive():
                    if self._closed:  # shut down from another thread, not dead by itself
                        raise KernelError(CLOSED_WHILE_RUNNING)
                    if stopping is None:
                        return StopReason.DIED, self._died_error()
                    break
            try:
                msg = self.client.get_iopub_msg(timeout=POLL_S)
            except Empty:
                continue
            if msg["parent_header"].get("msg_id") != msg_id:
                continue
            quiet = stopping is not None or collector.truncated  # the KeyboardInterrupt we caused
            done, error = self._handle(msg, collector, error, quiet_errors=quiet)
            if done:
                break
        if stopping is not None:
            return stopping, self._stopped_error(stopping, error)
        return (StopReason.ERROR, error) if error else (StopReason.OK, None)

    def _handle(
        self,
        msg: dict[str, Any],
        collector: OutputCollector,
        error: ErrorInfo | None,
        quiet_errors: bool,
    ) -> tuple[bool, ErrorInfo | None]:
        """Apply one iopub message; returns (cell finished, error so far)."""
        msg_type, content = msg["msg_type"], msg["content"]
        if msg_type == "stream":
            collector.add_stream(content.get("name", "stdout"), content.get("text", ""))
        elif msg_type in ("display_data", "execute_result", "update_display_data"):
            collector.add_bundle(msg_type, content)
        elif msg_type == "clear_output":
            collector.clear(wait=bool(content.get("wait")))
        elif msg_type == "error":
            error = make_error_info(content)
            if not quiet_errors:
                collector.add_error(error)
        elif msg_type == "status" and content.get("execution_state") == "idle":
            return True, error
        return False, error

    def _interrupt(self, now: float) -> float:
        """Send SIGINT to the kernel; returns when to give up waiting and kill it."""
        try:
            self._km.interrupt_kernel()
        except Exception:
            logger.exception("interrupt_kernel failed")
        return now + self._active.grace_s

    def _died_error(self) -> ErrorInfo:
        """Explain the death; a faulthandler trace from the kernel log points at the line."""
        message = describe_exit(self._exit_code, self.limits)
        trace = crash_trace(self._log_tail(max_chars=50_000))
        lines = re.findall(rf'File "{re.escape(PROGRAM_FILENAME)}", line (\d+)', trace)
        return ErrorInfo(
            ename="KernelDied",
            evalue=message,
            traceback=f"{trace}\n{message}\n" if trace else message + "\n",
            lineno=int(lines[0]) if lines else None,  # faulthandler lists the innermost frame first
        )

    def _stopped_error(self, reason: StopReason, interrupted: ErrorInfo | None) -> ErrorInfo:
        """Timeout/OutputLimit error; keeps the KeyboardInterrupt traceback (where it was)."""
        if reason is StopReason.TIMEOUT:
            ename = "Timeout"
            evalue = f"The program ran longer than {self._active.timeout_s:g} s and was stopped."
        else:
            ename = "OutputLimit"
            evalue = (
                f"The program printed more than {self._active.max_output_bytes} bytes of output "
                f"and was stopped."
            )
        if interrupted is None:
            return ErrorInfo(ename=ename, evalue=evalue, traceback=evalue + "\n")
        return ErrorInfo(
            ename=ename,
            evalue=evalue,
            traceback=f"{interrupted.traceback}{evalue}\n",
            lineno=interrupted.lineno,
        )
