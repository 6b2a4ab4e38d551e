"""``pal-jupyter doctor``: what this machine gives pal-jupyter, one ``name: value`` line each.

It answers in well under two seconds: no model is loaded and no kernel started, and torch is
imported only where a GPU driver exists (the backends' own rule for choosing a device). Each line
is ok, a warning (it works, with less: no sandbox, no process cap for root) or a problem
(something needed does not work: the model's files, its runtime). The last line sums them up; the
exit status is 1 for a problem only, so a missing sandbox alone still exits 0.
"""

from __future__ import annotations

import importlib.metadata
import importlib.util
import os
import platform
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

from ..backends import choose_runtime, presets
from ..backends.huggingface import GPU_DEVICE_FILES, cpu_flags, resolve_device, resolve_dtype
from ..backends.openai_api import is_server_source
from ..engine.isolation import fallback_note
from ..errors import PalError
from ..kernels import cgroups
from ..kernels.sandbox import bubblewrap_problem

OK, WARNING, PROBLEM = "ok", "warning", "problem"
SPEED_FLAGS = ("avx2", "avx512f", "avx512_bf16", "amx_bf16")  # llama.cpp's fast paths; bf16 units for torch
# Kernel settings that stop unprivileged user namespaces (and so bubblewrap), with the value that does.
USERNS_SWITCHES = {"/proc/sys/kernel/apparmor_restrict_unprivileged_userns": "1",
                   "/proc/sys/kernel/unprivileged_userns_clone": "0", "/proc/sys/user/max_user_namespaces": "0"}


@dataclass(frozen=True)
class Check:
    name: str
    value: str
    level: str = OK


def run_doctor(model: str) -> int:
    """Print every check and the summary; 1 when something needed does not work, else 0."""
    found = checks(model)
    for check in found:
        print(f"{check.name}: {check.value}")
    print(f"summary: {summary(found)}")
    return 1 if any(check.level == PROBLEM for check in found) else 0


def checks(model: str) -> list[Check]:
    """Every line of the report, in order, for ``model`` (the one a command would use by default)."""
    device = resolve_device("auto")
    backend, runtime = _backend(model)
    return [
        Check("pal-jupyter", _version()),
        Check("python", f"{platform.python_version()} ({sys.executable})"),
        Check("platform", platform.platform()),
        Check("cpu flags", speed_flags()),
        _model(model),
        backend,
        _device(device),
        _dtype(runtime, device),
        _isolation(),
        _bubblewrap(),
        _user_namespaces(),
        _pids_cgroup(),
        _jupyter_runtime(),
    ]


def summary(found: list[Check]) -> str:
    problems = [c.name for c in found if c.level == PROBLEM]
    warnings = [c.name for c in found if c.level == WARNING]
    parts = [_counted(names, word) for names, word in ((problems, "problem"), (warnings, "warning")) if names]
    parts.append("pal-jupyter cannot run as it is" if problems else "everything pal-jupyter needs works")
    return "; ".join(parts)


def _counted(names: list[str], word: str) -> str:
    """'1 warning (isolation)', '2 problems (model, backend)'."""
    return f"{len(names)} {word}{'s' if len(names) > 1 else ''} ({', '.join(names)})"


def _version() -> str:
    try:
        return importlib.metadata.version("pal-jupyter")
    except importlib.metadata.PackageNotFoundError:  # run from a checkout that is not installed
        return "unknown (not installed as a package)"


def speed_flags(cpuinfo: str = "/proc/cpuinfo") -> str:
    """Which of :data:`SPEED_FLAGS` the CPU has ('unknown' without a Linux x86 ``/proc/cpuinfo``)."""
    flags = cpu_flags(cpuinfo)
    if flags is None:
        return "unknown"
    return ", ".join(f"{flag} {'yes' if flag in flags else 'no'}" for flag in SPEED_FLAGS)


def _model(model: str) -> Check:
    """Whether the model's files are here (found, never read: reading is loading)."""
    preset = presets.find_preset(model)
    if preset is not None:
        try:
            presets.part_paths(preset)
        except PalError:
            return Check("model", f"{model} = {preset.name}: not installed ({preset.install_hint()})", PROBLEM)
        assembled = "assembled in the cache" if presets.is_assembled(model) else "assembled on first use"
        return Check("model", f"{model} = {preset.name}: files present ({assembled})")
    if is_server_source(model):
        return Check("model", f"{model}: on a model server (not contacted)")
    path = Path(model).expanduser()
    if path.exists():
        return Check("model", f"{model}: files present")
    if model.startswith((".", "/", "~")) or model.endswith(".gguf"):
        return Check("model", f"{model}: no such file or folder", PROBLEM)
    return _hub_model(model)


def _hub_model(model: str) -> Check:
    try:
        from huggingface_hub import try_to_load_from_cache

        cached = isinstance(try_to_load_from_cache(model, "config.json"), str)
    except Exception:  # not an id the hub library accepts, or the library is missing
        cached = False
    if cached:
        return Check("model", f"{model}: in the Hugging Face cache")
    return Check("model", f"{model}: not in the Hugging Face cache (downloaded on first use where the hub "
                          "is reachable)", WARNING)


def _backend(model: str) -> tuple[Check, str | None]:
    """The runtime ``--backend auto`` picks for ``model``, and why (None: none can run it)."""
    if is_server_source(model):
        return Check("backend", "server (an OpenAI-compatible endpoint)"), "server"
    try:
        runtime = choose_runtime(model)
    except PalError as exc:
        return Check("backend", str(exc), PROBLEM), None
    if runtime.name == "torch" and not all(importlib.util.find_spec(m) for m in ("torch", "transformers")):
        return Check("backend", "torch, which is not installed (pip install pal-jupyter)", PROBLEM), None
    return Check("backend", f"{runtime.name} ({runtime.reason})"), runtime.name


def _device(device: str) -> Check:
    if device.startswith("cuda"):
        return Check("device", f"cuda ({_gpu_name()})")
    driver = any(Path(p).exists() for p in GPU_DEVICE_FILES)
    return Check("device", "cpu (a GPU driver is present, but torch cannot use it)" if driver else "cpu (no GPU)")


def _gpu_name() -> str:
    import torch  # imported already: gpu_available() answered with it

    try:
        return str(torch.cuda.get_device_name(0))
    except Exception:  # the name is a nicety: the device is usable all the same
        return "a usable GPU"


def _dtype(runtime: str | None, device: str) -> Check:
    """What the weights compute in: llama.cpp keeps the GGUF file's quantisation; torch's is chosen
    by :func:`resolve_dtype` (bf16 on a GPU or a CPU with bf16 units, else fp32)."""
    torch_dtype = resolve_dtype("auto", device)
    if runtime == "llamacpp":
        return Check("dtype", f"the GGUF file's own quantisation (llama.cpp); {torch_dtype} with --backend torch")
    if runtime == "server":
        return Check("dtype", "the model server's")
    return Check("dtype", torch_dtype)


def _isolation() -> Check:
    note = fallback_note("auto")
    if note is None:
        return Check("isolation", "sandbox (auto: bubblewrap works here)")
    return Check("isolation", f"process (auto): {note}", WARNING)


def _bubblewrap() -> Check:
    bwrap = shutil.which("bwrap")
    if bwrap is None:
        return Check("bubblewrap", "not found on PATH")
    try:
        done = subprocess.run([bwrap, "--version"], capture_output=True, text=True, timeout=5)
        version = done.stdout.strip() or done.stderr.strip() or f"exit status {done.returncode}"
    except (OSError, subprocess.TimeoutExpired) as exc:
        version = f"--version failed: {exc}"
    return Check("bubblewrap", f"{bwrap} ({version})")


def _user_namespaces() -> Check:
    """Whether bubblewrap can make its namespaces; where not, the kernel setting that forbids them."""
    if shutil.which("bwrap") is None:
        return Check("user namespaces", "not checked (needs bubblewrap)")
    problem = bubblewrap_problem()
    if problem is None:
        return Check("user namespaces", "ok")
    switches = [f"{Path(path).relative_to('/proc/sys').as_posix().replace('/', '.')} = {value}"
                for path, value in USERNS_SWITCHES.items() if _read(path) == value]
    return Check("user namespaces", problem + (f" ({', '.join(switches)})" if switches else ""))


def _read(path: str) -> str | None:
    try:
        return Path(path).read_text().strip()
    except OSError:
        return None


def _pids_cgroup() -> Check:
    """Whether each kernel would get a ``pids.max`` cgroup: tried for real (one made and removed),
    as only root needs one (root is exempt from RLIMIT_NPROC)."""
    if os.geteuid() != 0:
        return Check("cgroup pids", "not used (only root needs it: RLIMIT_NPROC does not bind root)")
    # Named like a kernel's cgroup, so that a doctor killed right here is swept by the next start.
    path = cgroups.pids_cgroup(f"k-{os.getpid()}-doctor", 1)
    if path is None:
        return Check("cgroup pids", "unavailable (running as root, but no writable cgroup pids controller): "
                                    "only the timeout bounds a fork bomb outside the sandbox", WARNING)
    cgroups.remove(path)
    return Check("cgroup pids", f"ok (each kernel gets a pids.max cgroup in {os.path.dirname(path)})")


def _jupyter_runtime() -> Check:
    from jupyter_core.paths import jupyter_runtime_dir

    folder = Path(jupyter_runtime_dir())
    existing = next(p for p in (folder, *folder.parents) if p.exists())
    if not os.access(existing, os.W_OK | os.X_OK):
        return Check("jupyter runtime dir", f"{folder} (not writable by this user)", WARNING)
    return Check("jupyter runtime dir", f"{folder}" + ("" if existing == folder else " (made on first use)"))
