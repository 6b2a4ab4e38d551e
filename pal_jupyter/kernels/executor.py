"""Run generated Python programs in isolated, resource-limited child IPython kernels.

Each program gets a FRESH kernel (no state leaks between attempts); :class:`KernelPool` hides
the cold start by keeping kernels started (with the heavy imports done) in the background.
Everything goes through ``jupyter_client``: a :class:`ChildKernel` is one ``KernelManager``
plus its ``BlockingKernelClient``.

Why the pieces look the way they do:

* The kernel command is ``python -m pal_jupyter.kernels.launcher --memory-bytes N
  --cpu-seconds N -f {connection_file}``: the launcher sets RLIMIT_AS / RLIMIT_CPU on itself
  before ipykernel starts. jupyter_client builds the argv from ``KernelManager.kernel_spec``,
  so a subclass returns an in-memory ``KernelSpec`` (no kernel.json on disk to install).
* ``transport="ipc"`` (no port races); the socket files get an absolute path in a private temp
  dir, because jupyter_client's default ("kernel-ipc") is relative to the cwd and the kernel
  runs in a different cwd than its parent.
* A kernel that dies (``os._exit``, SIGXCPU, OOM kill) sends no message, so the output loop
  polls with short timeouts and checks the process every ~0.1 s.
* Orphans: jupyter_client starts the kernel in its own session/process group and sets
  ``JPY_PARENT_PID``; ipykernel's ``ParentPollerUnix`` then exits the kernel within ~1 s of the
  parent dying (even on SIGKILL). Shutdown SIGKILLs the whole process group and reaps it.
"""

from __future__ import annotations

import atexit
import keyword
import logging
import os
import re
import shutil
import signal
import sys
import tempfile
import threading
import time
from collections import deque
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, fields
from pathlib import Path
from queue import Empty, Queue
from typing import Any

import cloudpickle
from jupyter_client import KernelManager
from jupyter_client.blocking import BlockingKernelClient
from jupyter_client.kernelspec import KernelSpec

from ..errors import KernelError, SettingError, VariableError
from .results import ErrorInfo, ExecutionResult, StopReason
from . import cgroups
from .environment import allowed_environment
from .processes import children_by_parent, kill_descendants, pid_alive
from .sandbox import SOCKETS_DIR, Scratch, bwrap_command, exposure_problem, resolve_level
from .tracebacks import PROGRAM_FILENAME, crash_trace, make_error_info, strip_ansi

logger = logging.getLogger(__name__)

OutputCallback = Callable[[dict[str, Any]], None]
IndexedOutputCallback = Callable[[int, dict[str, Any]], None]  # (which program, output)

MIN_MEMORY_BYTES = int(1.5 * 1024**3)  # an idle warm kernel reserves ~0.4-1 GiB of address space
TRUNCATION_MARKER = "\n[output truncated]\n"
POLL_S = 0.1  # iopub poll timeout; also how often the kernel process is checked
SETUP_TIMEOUT_S = 10.0  # for small silent executes (variable loading)
VARIABLES_FILE = ".pal-variables.pkl"


@dataclass(frozen=True)
class ExecutorLimits:
    """Resource limits. The first three apply to each program run and may differ from run to
    run (``KernelPool.run(..., limits=...)``); the rest shape the kernels a pool starts."""

    timeout_s: float = 30.0  # wall clock per program
    grace_s: float = 3.0  # after interrupt, wait this long for the kernel to go idle, else kill it
    max_output_bytes: int = 1_000_000  # stdout + stderr + display data
    memory_bytes: int = 2 * 1024**3  # RLIMIT_AS of the kernel process (0 = no limit)
    cpu_seconds: int = 300  # RLIMIT_CPU of the kernel process (0 = no limit)
    warm_imports: tuple[str, ...] = ("numpy", "pandas", "matplotlib", "matplotlib.pyplot")
    startup_timeout_s: float = 60.0  # kernel start + warm imports, else KernelError
    isolation: str = "auto"  # "sandbox" (bubblewrap), "process", or "auto": the sandbox where it works
    readable_paths: tuple[str, ...] = ()  # host files or folders a sandboxed program may read
    max_file_bytes: int = 256 * 1024**2  # RLIMIT_FSIZE: the largest file a program may write
    max_open_files: int = 1024  # RLIMIT_NOFILE
    max_processes: int = 256  # RLIMIT_NPROC in a sandbox (per user namespace); for root, a pids cgroup

    def same_kernels(self, other: ExecutorLimits) -> bool:
        """Whether kernels started for ``other`` serve these limits too (only per-run limits differ)."""
        per_run = {"timeout_s", "grace_s", "max_output_bytes"}
        return all(getattr(self, f.name) == getattr(other, f.name) for f in fields(self) if f.name not in per_run)

    def __post_init__(self) -> None:
        if self.memory_bytes and self.memory_bytes < MIN_MEMORY_BYTES:
            raise SettingError(
                f"memory_bytes={self.memory_bytes} is too small: an idle kernel already reserves "
                f"0.4-1 GiB of address space; use at least {MIN_MEMORY_BYTES} (1.5 GiB) or 0."
            )
        if self.timeout_s <= 0 or self.grace_s < 0 or self.max_output_bytes <= 0:
            raise SettingError(f"timeout_s ({self.timeout_s}) and max_output_bytes ({self.max_output_bytes}) must be "
                               f"above 0 and grace_s ({self.grace_s}) at least 0.")
        for path in self.readable_paths:  # whether it exists is checked when a kernel starts
            problem = exposure_problem(path)
            if problem:
                raise SettingError(f"Readable path {path!r} refused: {problem}.")


# --------------------------------------------------------------------------------------------
# Launching
# --------------------------------------------------------------------------------------------


class _LimitedKernelManager(KernelManager):
    """A KernelManager whose kernel command is our launcher instead of an installed kernelspec.

    ``kernel_spec`` is the one hook jupyter_client 8 reads the argv from
    (``format_kernel_cmd``, provisioner choice, interrupt mode), so overriding it is enough.
    """

    def __init__(self, *, spec: KernelSpec, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self._pal_spec = spec

    @property
    def kernel_spec(self) -> KernelSpec:
        return self._pal_spec

    def reach_sockets_at(self, ip: str) -> None:
        """Reach the kernel's ipc sockets at ``ip`` from now on, the control socket too (jupyter_client
        connects it as the kernel starts; interrupts and shutdown requests travel on it)."""
        self.ip = ip
        self._close_control_socket()
        self._connect_control_socket()


def _kernel_spec(limits: ExecutorLimits, isolation: str, workdir: str, runtime_dir: str,
                 env: Mapping[str, str], cgroup: str | None = None) -> KernelSpec:
    scratch = Scratch.within(limits.memory_bytes)
    memory = limits.memory_bytes
    if isolation == "sandbox" and memory:  # the sandbox's in-memory folders count against the same limit
        memory -= scratch.total
    argv = [
        sys.executable, "-m", "pal_jupyter.kernels.launcher",
        "--memory-bytes", str(memory),
        "--cpu-seconds", str(limits.cpu_seconds),
        "--file-bytes", str(limits.max_file_bytes),
        "--open-files", str(limits.max_open_files),
        "--processes", str(limits.max_processes if isolation == "sandbox" else 0),
        "-f", "{connection_file}",
    ]  # fmt: skip
    if isolation == "sandbox":
        argv = bwrap_command(argv, workdir=workdir, runtime_dir=runtime_dir, env=env, readable=limits.readable_paths,
                             scratch=scratch)
    if cgroup is not None:  # root, exempt from RLIMIT_NPROC: a pids cgroup caps the processes instead
        argv = cgroups.join_command(cgroup, argv)
    # A sandboxed kernel sits in its own session and pid namespace, out of reach of our signals:
    # interrupts go as messages on the control channel, which ipykernel turns into SIGINT inside.
    interrupt = "message" if isolation == "sandbox" else "signal"
    return KernelSpec(argv=argv, display_name="pal child kernel", language="python", interrupt_mode=interrupt)


def _kernel_env(extra_env: Mapping[str, str] | None, runtime_dir: str, workdir: str) -> dict[str, str]:
    """The kernel's whole environment: the allow-listed part of ours (no tokens or keys reach a
    program, sandbox or not), what the kernel needs, and ``extra_env`` (the caller's own choice)."""
    env = allowed_environment(os.environ)
    # The launcher must be importable even when pal_jupyter is not installed (run from a
    # checkout): the kernel's cwd is a temp dir, so put the package's parent on the path.
    package_root = str(Path(__file__).resolve().parents[2])
    paths = [p for p in env.get("PYTHONPATH", "").split(os.pathsep) if p]
    if package_root not in paths:
        env["PYTHONPATH"] = os.pathsep.join([package_root, *paths])
    env.update(
        HOME=workdir,  # not the user's: nothing of theirs is found through ~ (the sandbox hides it too)
        CUDA_VISIBLE_DEVICES="",  # the GPU belongs to the model
        MPLBACKEND="module://matplotlib_inline.backend_inline",  # figures -> image/png outputs
        MPLCONFIGDIR=os.path.join(runtime_dir, "matplotlib"),
        PYTHONUNBUFFERED="1",
        # An IPython home of its own: none of the user's profiles, startup files or history.
        IPYTHONDIR=os.path.join(runtime_dir, "ipython"),
        PAL_JUPYTER_CHILD_KERNEL="1",  # %load_ext pal_jupyter refuses to run here
    )
    # glibc reserves a 64 MiB heap arena per thread that allocates concurrently; a kernel has
    # ~14 threads, so arenas alone took ~0.6 GiB of the RLIMIT_AS budget (measured: an idle
    # kernel with pandas/matplotlib 991 MiB virtual -> 415 MiB with 2 arenas).
    env.setdefault("MALLOC_ARENA_MAX", "2")
    env.update(extra_env or {})
    return env


def _setup_code(warm_imports: tuple[str, ...]) -> str:
    """Silent first execute: plain tracebacks and the slow imports, leaving globals clean."""
    return (
        "%colors nocolor\n"
        "%xmode Plain\n"
        "def __pal_warm(names):\n"
        "    import importlib\n"
        "    for name in names:\n"
        "        try:\n"
        "            importlib.import_module(name)\n"
        "        except Exception:\n"
        "            pass\n"
        f"__pal_warm({list(warm_imports)!r})\n"
        "del __pal_warm\n"
    )


def _load_variables_code(path: str) -> str:
    """Silent execute that loads pickled variables into the program's globals."""
    return (
        "def __pal_load(path):\n"
        "    import pickle\n"
        "    with open(path, 'rb') as f:\n"
        "        blobs = pickle.load(f)\n"
        "    bad = []\n"
        "    for name, blob in blobs.items():\n"
        "        try:\n"
        "            globals()[name] = pickle.loads(blob)\n"
        "        except Exception as e:\n"
        "            bad.append(f'{name!r} ({type(e).__name__}: {e})')\n"
        "    if bad:\n"
        "        raise RuntimeError(', '.join(bad))\n"
        "try:\n"
        f"    __pal_load({path!r})\n"
        "finally:\n"
        "    del __pal_load\n"
    )


def pickling_problem(value: Any) -> str | None:
    """Why ``value`` cannot be copied into a program's kernel ('TypeError: ...'), or None."""
    try:
        cloudpickle.dumps(value)
    except Exception as exc:  # TypeError, PicklingError, RecursionError, ...
        return f"{type(exc).__name__}: {exc}"
    return None


def pickle_variables(variables: Mapping[str, Any]) -> dict[str, bytes]:
    """cloudpickle each variable on its own so a failure names the variable."""
    blobs: dict[str, bytes] = {}
    for name, value in variables.items():
        if not isinstance(name, str) or not name.isidentifier() or keyword.iskeyword(name):
            raise VariableError(f"Variable name {name!r} is not a valid Python identifier.")
        problem = pickling_problem(value)
        if problem is not None:
            raise VariableError(
                f"Variable {name!r} ({type(value).__name__}) cannot be sent to the program's "
                f"kernel: it cannot be pickled ({problem})."
            )
        blobs[name] = cloudpickle.dumps(value)
    return blobs


# --------------------------------------------------------------------------------------------
# Output collection
# --------------------------------------------------------------------------------------------


def _bundle_size(data: Mapping[str, Any]) -> int:
    return sum(len(v.encode()) if isinstance(v, str) else len(repr(v)) for v in data.values())


class _OutputCollector:
    """Accumulates outputs up to a byte budget and forwards them to ``on_output``."""

    def __init__(self, max_bytes: int, on_output: OutputCallback | None) -> None:
        self.remaining = max_bytes
        self.on_output = on_output
        self.streams: dict[str, list[str]] = {"stdout": [], "stderr": []}
        self.outputs: list[dict[str, Any]] = []
        self.truncated = False

    def _emit(self, output: dict[str, Any]) -> None:
        if self.on_output is None:
            return
        try:
            self.on_output(output)
        except Exception:  # a broken UI callback must not break the run
            logger.exception("on_output callback failed")

    def add_stream(self, name: str, text: str) -> None:
        if self.truncated:
            return
        raw = text.encode()
        if len(raw) > self.remaining:
            text = raw[: self.remaining].decode(errors="ignore") + TRUNCATION_MARKER
            self.truncated = True
        self.remaining -= min(len(raw), self.remaining)
        self.streams.setdefault(name, []).append(text)
        self._emit({"output_type": "stream", "name": name, "text": text})

    def add_bundle(self, msg_type: str, content: Mapping[str, Any]) -> None:
        if self.truncated:
            return
        data = dict(content.get("data") or {})
        size = _bundle_size(data)
        if size > self.remaining:  # an image cannot be cut in half: drop it
            self.remaining = 0
            self.truncated = True
            self.streams["stderr"].append(TRUNCATION_MARKER)
            return
        self.remaining -= size
        metadata = dict(content.get("metadata") or {})
        output = {"output_type": msg_type, "data": data, "metadata": metadata}
        if msg_type == "execute_result":
            output["execution_count"] = content.get("execution_count")
        self.outputs.append(output)
        self._emit(output)

    def add_error(self, error: ErrorInfo) -> None:
        self._emit({
            "output_type": "error", "ename": error.ename, "evalue": error.evalue,
            "traceback": error.traceback.splitlines(),
        })  # fmt: skip

    def text(self, name: str) -> str:
        return "".join(self.streams.get(name, []))


# --------------------------------------------------------------------------------------------
# One kernel
# --------------------------------------------------------------------------------------------


def _describe_exit(code: int | None, limits: ExecutorLimits) -> str:
    """Human explanation of a kernel process exit status (negative = killed by a signal)."""
    if code is None:
        return "The program's kernel died."
    base = f"The program's kernel died (exit code {code})"
    if code < 0:
        try:
            name = signal.Signals(-code).name
        except ValueError:
            name = f"signal {-code}"
        base = f"The program's kernel died (exit code {code}, killed by {name})"
        if -code == signal.SIGXCPU:
            return f"{base}: it used more than the CPU time limit of {limits.cpu_seconds} s."
        if -code == signal.SIGKILL:
            return f"{base}: most likely it ran out of memory and was killed by the system."
        if -code == signal.SIGSEGV:
            return f"{base}: it crashed (segmentation fault), e.g. in a C extension."
        return f"{base}."
    return f"{base}: the program ended the process (e.g. os._exit) or it crashed."


class ChildKernel:
    """One started kernel (KernelManager + BlockingKernelClient). Used once per program.

    Constructing it starts the kernel process (with limits, env, temp cwd) and runs the warm
    imports; it raises :class:`KernelError` if the kernel cannot start in time.
    Attributes: ``pid`` (kernel process, also its process group), ``cwd`` (the program's temp
    working dir), ``runtime_dir`` (ipc sockets and the kernel's own log), ``limits``.
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
        self._env = _kernel_env(extra_env, self.runtime_dir, self.cwd)
        self.cgroup = cgroups.pids_cgroup(f"k-{os.getpid()}-{os.path.basename(self.runtime_dir)}",
                                          self.limits.max_processes)
        self._kc: BlockingKernelClient | None = None
        try:  # from here on, a failure removes the folders and the cgroup made above
            self._km = _LimitedKernelManager(
                spec=_kernel_spec(self.limits, self.isolation, self.cwd, self.runtime_dir, self._env, self.cgroup),
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
        reply = self._execute_quiet(_setup_code(self.limits.warm_imports), deadline)
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

    def _execute_quiet(self, code: str, deadline: float) -> dict[str, Any]:
        """Run setup code silently (no history, no outputs) and return the shell reply content."""
        msg_id = self.client.execute(code, silent=True, store_history=False, allow_stdin=False)
        while True:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise KernelError(self._startup_failure("no reply to a setup request"))
            try:
                reply = self.client.get_shell_msg(timeout=min(POLL_S, remaining))
            except Empty:
                if not self.is_alive():
                    raise KernelError(_describe_exit(self._exit_code, self.limits)) from None
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
            reply = self._execute_quiet(_load_variables_code(path), deadline)
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
        collector = _OutputCollector(self._active.max_output_bytes, on_output)
        started = time.monotonic()
        try:
            msg_id = self.client.execute(code, silent=False, store_history=True, allow_stdin=False)
            reason, error = self._collect(msg_id, collector, started)
        except Exception:
            if not self._closed:
                raise
            # close() from another thread (the pool was closed, the extension unloaded): the
            # sockets are gone, and zmq says so in its own words.
            raise KernelError("The program's kernel was shut down while the program ran (its pool was closed).") \
                from None
        return ExecutionResult(
            reason=reason,
            stdout=collector.text("stdout"),
            stderr=collector.text("stderr"),
            outputs=collector.outputs,
            error=error,
            duration_s=time.monotonic() - started,
            truncated=collector.truncated,
        )

    def _collect(
        self, msg_id: str, collector: _OutputCollector, started: float
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
        collector: _OutputCollector,
        error: ErrorInfo | None,
        quiet_errors: bool,
    ) -> tuple[bool, ErrorInfo | None]:
        """Apply one iopub message; returns (cell finished, error so far)."""
        msg_type, content = msg["msg_type"], msg["content"]
        if msg_type == "stream":
            collector.add_stream(content.get("name", "stdout"), content.get("text", ""))
        elif msg_type in ("display_data", "execute_result"):
            collector.add_bundle(msg_type, content)
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
        message = _describe_exit(self._exit_code, self.limits)
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


# --------------------------------------------------------------------------------------------
# Pool
# --------------------------------------------------------------------------------------------

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
        events: Queue[tuple[int, dict[str, Any]] | None] = Queue()
        results: list[ExecutionResult | KernelError | None] = [None] * len(programs)

        def run_one(index: int) -> None:
            try:
                kernel = self.acquire()
                try:
                    results[index] = kernel._run(programs[index][0], blobs[index],
                                                 lambda out: events.put((index, out)), limits)
                finally:
                    kernel.shutdown()
                    with self._cond:
                        self._live.discard(kernel)
            except KernelError as exc:
                results[index] = exc
            finally:
                events.put(None)

        workers = [threading.Thread(target=run_one, args=(i,), name=f"pal-run-{i}", daemon=True)
                   for i in range(len(programs))]
        for worker in workers:
            worker.start()
        finished = 0
        while finished < len(workers):
            event = events.get()
            if event is None:
                finished += 1
            elif on_output is not None:
                try:
                    on_output(*event)
                except Exception:  # a broken UI callback must not break the runs
                    logger.exception("on_output callback failed")
        for worker in workers:
            worker.join()
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
