"""The limits of a program's kernel (:class:`ExecutorLimits`), and what a kernel's end says about them.

The first three apply to each run; the rest shape the kernels a pool starts. The launcher
(:mod:`.launcher`) applies the resource limits inside the kernel process itself.
"""

from __future__ import annotations

import signal
from dataclasses import dataclass, fields

from ..errors import SettingError
from .sandbox import exposure_problem, readable_refusal

MIN_MEMORY_BYTES = int(1.5 * 1024**3)  # an idle warm kernel reserves ~0.4-1 GiB of address space


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
                raise SettingError(readable_refusal(path, problem))


def describe_exit(code: int | None, limits: ExecutorLimits) -> str:
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
