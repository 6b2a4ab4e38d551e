"""Reading a GGUF file's header: what it holds, and whether it is whole, before anything loads it.

llama.cpp says only "failed to load" about a damaged file, and a file that is cut short is the
commonest damage (an interrupted copy or download). :func:`read_gguf_info` walks the header (the
metadata and the table of tensors, never the weights) and checks that every tensor's bytes lie
inside the file, so a bad file gets one line that says what is wrong with it. It reads only
the header's pages (a few megabytes: mostly the vocabulary) and takes a fraction of a second.

The format: https://github.com/ggml-org/ggml/blob/master/docs/gguf.md
"""

from __future__ import annotations

import math
import mmap
import struct
from dataclasses import dataclass
from pathlib import Path

from ..errors import ModelLoadError

MAGIC = b"GGUF"
VERSIONS = (2, 3)
DEFAULT_ALIGNMENT = 32

# Metadata value types: fixed sizes of the scalar ones (8 = string, 9 = array).
_SCALAR = {0: "B", 1: "b", 2: "H", 3: "h", 4: "I", 5: "i", 6: "f", 7: "?", 10: "Q", 11: "q", 12: "d"}
_STRING, _ARRAY = 8, 9

@dataclass(frozen=True)
class GgufInfo:
    """What a GGUF file's header says."""

    path: Path
    version: int
    architecture: str
    file_type: str  # e.g. "Q4_K_M"; "unknown" when the file does not say
    tensors: int
    has_chat_template: bool
    size: int  # bytes on disk

    @property
    def description(self) -> str:
        return f"{self.architecture} {self.file_type} GGUF, {self.size / 1e9:.2f} GB"


class _Truncated(Exception):
    pass


class _Reader:
    """Reads the header from a memory map (no copy; only the pages touched are read)."""

    def __init__(self, data: mmap.mmap):
        self.data, self.at = data, 0

    def read(self, size: int) -> bytes:
        if size < 0 or self.at + size > len(self.data):
            raise _Truncated
        self.at += size
        return self.data[self.at - size:self.at]

    def unpack(self, fmt: str) -> int | float | bool:
        size = struct.calcsize(fmt)
        if self.at + size > len(self.data):
            raise _Truncated
        self.at += size
        return struct.unpack_from("<" + fmt, self.data, self.at - size)[0]

    def skip(self, size: int) -> None:
        self.read(0)
        self.at += size

    def string(self) -> str:
        return self.read(int(self.unpack("Q"))).decode("utf-8", errors="replace")

    def value(self, kind: int) -> object:
        """One metadata value; arrays of scalars are skipped without decoding (token scores, types)."""
        if kind in _SCALAR:
            return self.unpack(_SCALAR[kind])
        if kind == _STRING:
            return self.string()
        if kind == _ARRAY:
            item, count = int(self.unpack("I")), int(self.unpack("Q"))
            if item in _SCALAR:
                self.skip(count * struct.calcsize(_SCALAR[item]))
            elif item == _STRING:  # e.g. the vocabulary: step over each string by its length
                for _ in range(count):
                    self.skip(int(self.unpack("Q")))
            else:
                for _ in range(count):
                    self.value(item)
            return None
        raise ValueError(f"unknown metadata type {kind}")


def read_gguf_info(path: str | Path) -> GgufInfo:
    """The header of the GGUF file at ``path``; ModelLoadError (one line) when it is not a whole GGUF file."""
    path = Path(path)
    try:
        size = path.stat().st_size
        if size < len(MAGIC):
            raise _Truncated
        with path.open("rb") as handle, mmap.mmap(handle.fileno(), 0, access=mmap.ACCESS_READ) as data:
            return _read(_Reader(data), path, size)
    except _Truncated:
        raise ModelLoadError(f"{path} is cut short ({size:,} bytes): its header ends early. Copy or "
                             "download it again.") from None
    except (ValueError, UnicodeDecodeError, struct.error, MemoryError, OverflowError) as exc:
        raise ModelLoadError(f"{path} is not a readable GGUF file ({exc}).") from None
    except OSError as exc:
        raise ModelLoadError(f"Cannot read {path}: {exc.strerror or exc}.") from None


def _read(reader: _Reader, path: Path, size: int) -> GgufInfo:
    from gguf import GGML_QUANT_SIZES, LlamaFileType

    sizes = {int(kind): block for kind, block in GGML_QUANT_SIZES.items()}  # (elements, bytes) per block
    if reader.read(4) != MAGIC:
        raise ModelLoadError(f"{path} is not a GGUF file (it does not start with 'GGUF').")
    version = int(reader.unpack("I"))
    if version not in VERSIONS:
        raise ModelLoadError(f"{path} is GGUF version {version}; only versions 2 and 3 can be read.")
    tensor_count, kv_count = int(reader.unpack("Q")), int(reader.unpack("Q"))
    metadata: dict[str, object] = {}
    for _ in range(kv_count):
        key = reader.string()
        metadata[key] = reader.value(int(reader.unpack("I")))
    end = 0
    for _ in range(tensor_count):
        name = reader.string()
        dims = [int(reader.unpack("Q")) for _ in range(int(reader.unpack("I")))]
        kind, offset = int(reader.unpack("I")), int(reader.unpack("Q"))
        if kind not in sizes:
            raise ModelLoadError(f"{path}: tensor {name!r} has a type ({kind}) this reader does not know.")
        per_block, block_bytes = sizes[kind]
        end = max(end, offset + math.prod(dims) // per_block * block_bytes)
    alignment = int(metadata.get("general.alignment") or DEFAULT_ALIGNMENT)  # type: ignore[call-overload]
    data_start = -(-reader.at // alignment) * alignment
    if data_start + end > size:
        raise ModelLoadError(f"{path} is cut short: its tensors need {data_start + end:,} bytes, the file has "
                             f"{size:,}. Copy or download it again.")
    return GgufInfo(
        path=path, version=version, architecture=str(metadata.get("general.architecture") or "unknown"),
        file_type=_file_type_name(metadata.get("general.file_type"), LlamaFileType),
        tensors=tensor_count, has_chat_template="tokenizer.chat_template" in metadata, size=size,
    )


def _file_type_name(value: object, names: type) -> str:
    """``15`` -> ``"Q4_K_M"`` (llama.cpp's name of the file's main quantisation)."""
    try:
        return names(value).name.removeprefix("MOSTLY_").removeprefix("ALL_")
    except ValueError:
        return "unknown"
