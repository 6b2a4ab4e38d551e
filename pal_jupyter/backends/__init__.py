"""Model backends: the protocol the engine talks to, the local runtimes, offline presets.

``base`` (protocol, generation options, scripted replies) <- ``huggingface`` (transformers + torch:
GPUs, adapters) and ``llamacpp`` (GGUF files on the CPU) <- ``registry`` (load by name, choose the
runtime, the loaded-model cache). ``presets`` assembles the offline weights; ``gguf_file`` reads a
GGUF header. ``server`` talks to a shared model server (any OpenAI-compatible endpoint, e.g. vLLM).
"""

from .base import (
    SAMPLE_TEMPERATURE,
    ChatMessage,
    Generation,
    GenerationOptions,
    ModelBackend,
    ScriptedBackend,
    generate_candidates,
    generate_each,
)
from .huggingface import TransformersBackend
from .llamacpp import LlamaCppBackend
from .openai_api import ServerBackend
from .registry import BACKENDS, choose_runtime, clear_model_cache, load_model, register_model

__all__ = [
    "BACKENDS", "SAMPLE_TEMPERATURE", "ChatMessage", "Generation", "GenerationOptions", "LlamaCppBackend",
    "ModelBackend", "ScriptedBackend", "ServerBackend", "TransformersBackend", "choose_runtime", "clear_model_cache",
    "generate_candidates", "generate_each", "load_model", "register_model",
]
