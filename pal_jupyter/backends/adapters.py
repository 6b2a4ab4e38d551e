"""LoRA adapters trained by ``pal-jupyter train``: what they are, and loading one onto its base model.

An adapter directory holds peft's files (``adapter_config.json``, ``adapter_model.safetensors``),
the tokenizer with the reward tokens added, and :data:`METADATA` (``pal_adapter.json``): the
format it was trained in, the base model and its fingerprint, the data and settings, and the
figures measured before and after, when known.

Two formats:

* ``leti`` (LeTI, Wang et al. 2023): every program, good or bad, was trained behind its reward
  token and the interpreter's feedback, ``<|good|><|feedback|>...<|/feedback|>question``; at
  inference the question is conditioned on ``<|good|>`` alone.
* ``sft`` (PAL fine-tuning on verified programs only): the plain prompt.

An adapter is refused with one clear line when it is missing, damaged, or was trained on another
base model (its fingerprint differs); the base model itself keeps working.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from ..errors import ModelLoadError

METADATA = "pal_adapter.json"
GOOD, BAD = "<|good|>", "<|bad|>"
FEEDBACK_BEGIN, FEEDBACK_END = "<|feedback|>", "<|/feedback|>"
SPECIAL_TOKENS = (GOOD, BAD, FEEDBACK_BEGIN, FEEDBACK_END)
FORMATS = ("leti", "sft")


@dataclass
class AdapterInfo:
    """The metadata of an adapter directory."""

    format: str  # "leti" or "sft"
    base: str  # the base model as the user named it (preset, directory ...)
    base_fingerprint: str  # see fingerprint(): the adapter only fits this base
    prompt: str = "chat-0shot"  # the prompt style it was trained with, and is used with
    data: list[dict[str, Any]] = field(default_factory=list)  # files and their SHA-256
    examples: dict[str, int] = field(default_factory=dict)  # good / bad counts
    settings: dict[str, Any] = field(default_factory=dict)  # rank, learning rate, epochs, seed ...
    training: dict[str, Any] = field(default_factory=dict)  # seconds, final loss, peak memory
    figures: dict[str, Any] = field(default_factory=dict)  # before/after benchmark figures, when known

    @property
    def prefix(self) -> str:
        """What the question is conditioned on at inference."""
        return GOOD if self.format == "leti" else ""

    def save(self, directory: str | Path) -> None:
        Path(directory, METADATA).write_text(json.dumps(asdict(self), indent=2) + "\n", encoding="utf-8")


def fingerprint(model_dir: str | Path) -> str:
    """A cheap identity of a model directory: its config and the names and shapes of its tensors.

    Enough to tell the lite model from the default one, or a model from a retrained copy, without
    hashing gigabytes; the same for the model's fp32 and bf16 copies (an adapter fits both).
    """
    folder = Path(model_dir)
    digest = hashlib.sha256()
    _digest_config(folder, digest)
    for weights in sorted(folder.glob("*.safetensors")):
        for name, shape in _tensor_shapes(weights):
            digest.update(f"{name}:{shape};".encode())
    return digest.hexdigest()[:16]


def _legacy_fingerprint(model_dir: str | Path) -> str:
    """The fingerprint adapters were stamped with before it ignored the dtype: the config and the
    names and sizes of the weight files (so it matches only the copy they were trained on)."""
    folder = Path(model_dir)
    digest = hashlib.sha256()
    _digest_config(folder, digest)
    for weights in sorted(folder.glob("*.safetensors")):
        digest.update(f"{weights.name}:{weights.stat().st_size};".encode())
    return digest.hexdigest()[:16]


def _digest_config(folder: Path, digest: Any) -> None:
    config = folder / "config.json"
    if config.is_file():
        settings = json.loads(config.read_text(encoding="utf-8"))
        for key in ("architectures", "hidden_size", "intermediate_size", "num_hidden_layers",
                    "num_attention_heads", "num_key_value_heads", "vocab_size", "model_type"):
            digest.update(f"{key}={settings.get(key)!r};".encode())


def _tensor_shapes(weights: Path) -> list[tuple[str, list[int]]]:
    """Names and shapes from a safetensors file's header (8 bytes of length, then JSON), sorted."""
    with weights.open("rb") as handle:
        length = int.from_bytes(handle.read(8), "little")
        header = json.loads(handle.read(length))
    return sorted((name, list(entry["shape"])) for name, entry in header.items() if name != "__metadata__")


def file_sha256(path: str | Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def read_adapter(directory: str | Path) -> AdapterInfo:
    """The adapter's metadata; ModelLoadError (one line) when the directory is not a usable adapter."""
    folder = Path(directory).expanduser()
    if not folder.is_dir():
        raise ModelLoadError(f"No adapter at {folder}: give the folder written by pal-jupyter train.")
    meta = folder / METADATA
    if not meta.is_file() or not (folder / "adapter_config.json").is_file():
        raise ModelLoadError(f"{folder} is not an adapter trained by pal-jupyter train (no {METADATA} or "
                             "adapter_config.json in it).")
    weights = [folder / "adapter_model.safetensors", folder / "adapter_model.bin"]
    if not any(w.is_file() and w.stat().st_size > 0 for w in weights):
        raise ModelLoadError(f"The adapter at {folder} has no weights (adapter_model.safetensors is missing or empty).")
    try:
        data = json.loads(meta.read_text(encoding="utf-8"))
        info = AdapterInfo(**data)
    except (ValueError, TypeError) as exc:
        raise ModelLoadError(f"The adapter's {METADATA} in {folder} is damaged ({exc}).") from None
    if info.format not in FORMATS:
        raise ModelLoadError(f"The adapter at {folder} has an unknown format {info.format!r} (expected leti or sft).")
    return info


def check_base(info: AdapterInfo, base_dir: str | Path, base_name: str, adapter_dir: str | Path) -> None:
    """Refuse an adapter trained on another base model."""
    found = fingerprint(base_dir)
    if info.base_fingerprint not in (found, _legacy_fingerprint(base_dir)):
        raise ModelLoadError(
            f"The adapter at {adapter_dir} was trained on {info.base!r} (fingerprint {info.base_fingerprint}), "
            f"not on {base_name!r} ({found}); load it with --model {info.base} --adapter {adapter_dir}."
        )


def conditioned(messages: list[dict[str, str]], prefix: str) -> list[dict[str, str]]:
    """``messages`` with the last user message conditioned on ``prefix`` (a reward token)."""
    if not prefix:
        return messages
    out = [dict(m) for m in messages]
    for message in reversed(out):
        if message["role"] == "user":
            message["content"] = prefix + message["content"]
            break
    return out
