"""Starting a kernel: its command line (the launcher, wrapped in the sandbox and a cgroup where
they apply), its environment, and the silent first cell that makes it ready.

* The kernel command is ``python -m pal_jupyter.kernels.launcher --memory-bytes N ... -f
  {connection_file}``: the launcher sets the resource limits on itself before ipykernel starts.
  jupyter_client builds the argv from ``KernelManager.kernel_spec``, so a subclass returns an
  in-memory ``KernelSpec`` (no kernel.json on disk to install).
* ``transport="ipc"`` (no port races); the socket files get an absolute path, in the kernel's own
  runtime folder, or in a sandbox's own ``/tmp`` (:func:`.sandbox.bwrap_command`).
"""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from jupyter_client import KernelManager
from jupyter_client.kernelspec import KernelSpec

from . import cgroups
from .environment import allowed_environment
from .limits import ExecutorLimits
from .sandbox import Scratch, bwrap_command


class LimitedKernelManager(KernelManager):
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


def kernel_spec(limits: ExecutorLimits, isolation: str, workdir: str, runtime_dir: str,
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


def kernel_env(extra_env: Mapping[str, str] | None, runtime_dir: str, workdir: str) -> dict[str, str]:
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


def setup_code(warm_imports: tuple[str, ...]) -> str:
    """Silent first execute: plain tracebacks, the slow imports and figures kept open, leaving globals clean."""
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
        # Figures stay open after the program, so that what they draw can be read back (.charts);
        # each kernel runs one program, so nothing carries over to another.
        "try:\n"
        "    from matplotlib_inline.backend_inline import set_matplotlib_close as __pal_close\n"
        "    __pal_close(False)\n"
        "    del __pal_close\n"
        "except ImportError:\n"
        "    pass\n"
    )
