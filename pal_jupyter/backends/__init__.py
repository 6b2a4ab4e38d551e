"""Model backends: the protocol the engine talks to, local Hugging Face models, offline presets.

``base`` (protocol, generation options, scripted replies) <- ``huggingface`` (transformers) <-
``registry`` (load by name, the loaded-model cache). ``presets`` assembles the offline weights.
``server`` talks to a shared model server (any OpenAI-compatible endpoint, e.g. vLLM).
"""

from .base import (
    SAMPLE_TEMPERATURE,
    ChatMessage,
    Generation,
    GenerationOptions,
    ModelBackend,
    ScriptedBackend,
    generate_candidates,
)
from .huggingface import TransformersBackend
from .server import ServerBackend
from .registry import clear_model_cache, load_model, register_model

__all__ = [
    "SAMPLE_TEMPERATURE", "ChatMessage", "Generation", "GenerationOptions", "ModelBackend", "ScriptedBackend",
    "ServerBackend", "TransformersBackend", "clear_model_cache", "generate_candidates", "load_model", "register_model",
]
