"""Loading models by name, and the loaded-model cache (the only global state in pal-jupyter).

Models are cached per process, keyed by source, device and dtype, so every ``%%pal`` cell after
the first reuses the weights. :func:`register_model` makes any backend loadable by name (a
scripted classroom demo, an adapter to a model served elsewhere).
"""

from __future__ import annotations

import threading
from pathlib import Path

from . import presets
from .base import ModelBackend
from ..errors import ModelLoadError
from .huggingface import TransformersBackend, load_transformers, resolve_device, resolve_dtype
from .server import ServerBackend, is_server_source

_CACHE: dict[tuple[str, str, str, str], TransformersBackend | ServerBackend] = {}
_CACHE_LOCK = threading.Lock()
_REGISTERED: dict[str, ModelBackend] = {}


def register_model(name: str, backend: ModelBackend) -> None:
    """Make ``backend`` loadable by ``name`` (``%%pal --model NAME``, ``solve(model=NAME)``).

    For backends that are not transformers checkpoints: a scripted backend for a classroom demo
    that must not depend on a model's mood, or an adapter to a model served elsewhere.
    """
    _REGISTERED[name] = backend


def load_model(source: str = presets.DEFAULT_MODEL, *, device: str = "auto", dtype: str = "auto",
               adapter: str = "", server_timeout: float = 60.0) -> ModelBackend:
    """Load (or reuse) a model. ``source``: registered name, preset, HF id, model directory or .gguf
    file; ``BASE+ADAPTER_DIR`` (or ``adapter=``) puts a LoRA adapter from ``pal-jupyter train`` on top;
    ``openai:MODEL@URL`` is a model on a server (``server_timeout``: the longest wait for its next token)."""
    if source in _REGISTERED:
        return _REGISTERED[source]
    if is_server_source(source):
        if adapter:
            raise ModelLoadError("An adapter is loaded by the model server, not here: start vLLM with "
                                 "--enable-lora --lora-modules NAME=ADAPTER_DIR and use --model openai:NAME@URL.")
        with _CACHE_LOCK:
            key = (source, "", "server", str(server_timeout))
            if key not in _CACHE:
                _CACHE[key] = ServerBackend.connect(source, timeout_s=server_timeout)
            return _CACHE[key]
    source, adapter = split_adapter(source, adapter)
    device = resolve_device(device)
    dtype = resolve_dtype(dtype, device)
    key = (source, adapter, device, dtype)
    with _CACHE_LOCK:
        if key not in _CACHE:
            _CACHE[key] = load_transformers(source, device, dtype, adapter)
        return _CACHE[key]


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
