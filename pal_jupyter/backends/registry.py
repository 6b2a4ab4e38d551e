"""Loading models by name, choosing how they run, and the loaded-model cache (the only global state).

Two runtimes run a local model. On a GPU, transformers + torch in bf16 (:mod:`.huggingface`). On
a CPU, llama.cpp runs a GGUF file as it is, quantised (:mod:`.llamacpp`): 3-4x the decoding speed
of torch at a fraction of the memory, with no conversion. :func:`choose_runtime` decides, and says
why; ``backend="torch"`` or ``"llamacpp"`` forces one.

Models are cached per process, keyed by source, runtime, device and dtype, so every ``%%pal`` cell
after the first reuses the weights. :func:`register_model` makes any backend loadable by name (a
scripted classroom demo, an adapter to a model served elsewhere).
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from . import llamacpp, presets
from .base import ModelBackend
from ..errors import ModelLoadError
from .huggingface import TransformersBackend, gpu_available, load_transformers, resolve_device, resolve_dtype
from .llamacpp import LlamaCppBackend
from .openai_api import ServerBackend, is_server_source

log = logging.getLogger(__name__)

BACKENDS = ("auto", "torch", "llamacpp")

_CACHE: dict[tuple[str, ...], ModelBackend] = {}
_CACHE_LOCK = threading.Lock()
_REGISTERED: dict[str, ModelBackend] = {}


def register_model(name: str, backend: ModelBackend) -> None:
    """Make ``backend`` loadable by ``name`` (``%%pal --model NAME``, ``solve(model=NAME)``).

    For backends that are not transformers checkpoints: a scripted backend for a classroom demo
    that must not depend on a model's mood, or an adapter to a model served elsewhere.
    """
    _REGISTERED[name] = backend


@dataclass(frozen=True)
class Runtime:
    """How a local model will run, and why (said to the user once it is loaded)."""

    name: str  # "torch" or "llamacpp"
    reason: str


def choose_runtime(source: str, backend: str = "auto", *, device: str = "auto", dtype: str = "auto",
                   adapter: str = "") -> Runtime:
    """The runtime for ``source``: the one asked for, or by what the machine and the model allow.

    ``auto``: a GPU, an adapter, a dtype asked for, or a model that is not a GGUF file mean torch;
    otherwise (a CPU and a preset or .gguf file) llama.cpp. A forced choice that cannot work is a
    ModelLoadError that says why and what to do instead.
    """
    if backend not in BACKENDS:
        raise ModelLoadError(f"Unknown backend {backend!r}: use one of {', '.join(BACKENDS)}.")
    is_gguf = presets.find_preset(source) is not None or source.endswith(".gguf")
    if backend == "torch":
        return Runtime("torch", "asked for (--backend torch)")
    if backend == "llamacpp":
        problem = _llamacpp_problem(source, is_gguf, device, dtype, adapter)
        if problem:
            raise ModelLoadError(f"--backend llamacpp cannot run {source!r}: {problem}")
        return Runtime("llamacpp", "asked for (--backend llamacpp)")
    if adapter:
        return Runtime("torch", "LoRA adapters from pal-jupyter train run on transformers")
    if dtype != "auto":
        return Runtime("torch", f"--dtype {dtype} is a transformers setting")
    if not is_gguf:
        return Runtime("torch", "the model is not a GGUF file")
    if device.startswith("cuda") or (device == "auto" and gpu_available()):
        return Runtime("torch", "a GPU runs transformers in bf16")
    if not llamacpp.available():
        return Runtime("torch", f"llama.cpp is not installed (pip install xllamacpp=={llamacpp.XLLAMACPP_VERSION})")
    return Runtime("llamacpp", "no GPU: llama.cpp runs the quantised GGUF as it is; --backend torch for transformers")


def _llamacpp_problem(source: str, is_gguf: bool, device: str, dtype: str, adapter: str) -> str:
    if adapter:
        return ("LoRA adapters from pal-jupyter train add tokens to the vocabulary, which llama.cpp's adapters "
                "cannot; use --backend torch (or auto) with --adapter.")
    if not is_gguf:
        return "llama.cpp runs GGUF files (a preset or a .gguf path); use --backend torch for a model folder or id."
    if device.startswith("cuda"):
        return "this llama.cpp build runs on the CPU; use --device cpu, or --backend torch for the GPU."
    if dtype != "auto":
        return f"the GGUF file's own quantisation is used; --dtype {dtype} applies to --backend torch."
    if not llamacpp.available():
        return f"xllamacpp is not installed: pip install xllamacpp=={llamacpp.XLLAMACPP_VERSION}"
    return ""


def load_model(source: str = presets.DEFAULT_MODEL, *, device: str = "auto", dtype: str = "auto",
               adapter: str = "", backend: str = "auto", server_timeout: float = 60.0) -> ModelBackend:
    """Load (or reuse) a model. ``source``: registered name, preset, HF id, model directory or .gguf
    file; ``BASE+ADAPTER_DIR`` (or ``adapter=``) puts a LoRA adapter from ``pal-jupyter train`` on top;
    ``openai:MODEL@URL`` is a model on a server (``server_timeout``: the longest wait for its next token).
    ``backend`` picks the runtime of a local model (:func:`choose_runtime`)."""
    if source in _REGISTERED:
        return _REGISTERED[source]
    if is_server_source(source):
        if adapter:
            raise ModelLoadError("An adapter is loaded by the model server, not here: start vLLM with "
                                 "--enable-lora --lora-modules NAME=ADAPTER_DIR and use --model openai:NAME@URL.")
        return _cached((source, "server", str(server_timeout)),
                       lambda: ServerBackend.connect(source, timeout_s=server_timeout))
    source, adapter = split_adapter(source, adapter)
    runtime = choose_runtime(source, backend, device=device, dtype=dtype, adapter=adapter)
    if runtime.name == "llamacpp":
        return _cached((source, "llamacpp"), lambda: _load_llamacpp(source, runtime))
    device = resolve_device(device)
    dtype = resolve_dtype(dtype, device)
    return _cached((source, adapter, "torch", device, dtype),
                   lambda: _load_torch(source, device, dtype, adapter, runtime))


def _cached(key: tuple[str, ...], load: Callable[[], ModelBackend]) -> ModelBackend:
    with _CACHE_LOCK:
        if key not in _CACHE:
            _CACHE[key] = load()
        return _CACHE[key]


def _load_llamacpp(source: str, runtime: Runtime) -> LlamaCppBackend:
    backend = llamacpp.load_llamacpp(presets.gguf_file(source), name=source)
    backend.runtime_reason = runtime.reason
    log.info("%s runs on %s: %s", backend.name, backend.runtime, runtime.reason)
    return backend


def _load_torch(source: str, device: str, dtype: str, adapter: str, runtime: Runtime) -> TransformersBackend:
    backend = load_transformers(source, device, dtype, adapter)
    backend.runtime_reason = runtime.reason
    log.info("%s runs on %s: %s", backend.name, backend.runtime, runtime.reason)
    return backend


def split_adapter(source: str, adapter: str = "") -> tuple[str, str]:
    """``"lite+runs/adapter"`` -> ``("lite", "runs/adapter")``; a plain source keeps ``adapter``."""
    if "+" in source and not adapter:
        base, _, tail = source.partition("+")
        if base and tail:
            return base, str(Path(tail).expanduser())
    return source, str(Path(adapter).expanduser()) if adapter else ""


def clear_model_cache() -> None:
    """Forget loaded models (their memory is freed once nothing else refers to them)."""
    with _CACHE_LOCK:
        _CACHE.clear()
