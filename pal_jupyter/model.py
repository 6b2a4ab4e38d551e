"""Model backends: the interface the repair loop talks to, and its transformers implementation.

A backend turns a list of chat messages into a completion, streaming text to a callback as it
is produced. :class:`TransformersBackend` runs a local Hugging Face model (GPU in bf16 when
there is one, CPU in fp32 otherwise); :class:`ScriptedBackend` replays fixed replies and is
what tests and offline demos use when they need exact code out of "the model".

Loaded models are cached per process (the only global state in pal-jupyter), keyed by
source, device and dtype, so every ``%%pal`` cell after the first reuses the weights.
"""

from __future__ import annotations

import logging
import queue
import re
import threading
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

from . import presets
from .errors import ModelLoadError

log = logging.getLogger(__name__)

ChatMessage = dict[str, str]  # {"role": "system" | "user" | "assistant", "content": str}
TokenCallback = Callable[[str], None]

# A reply is done once its first fenced code block is closed: whatever a model adds after
# the program is chatter we would throw away, and on a CPU every token costs ~0.3 s.
_CLOSED_FENCE = re.compile(r"```[^\n]*\n.*?^[ \t]*```", re.DOTALL | re.MULTILINE)


@dataclass
class GenerationOptions:
    """How to sample. Greedy by default; temperature > 0 samples (for self-consistency)."""

    max_new_tokens: int = 512
    temperature: float = 0.0
    top_p: float = 0.95
    seed: int | None = None
    stop_after_code: bool = True  # stop as soon as the first fenced code block is closed


@dataclass
class Generation:
    """One completion and what it cost."""

    text: str
    prompt_tokens: int
    completion_tokens: int
    seconds: float
    first_token_s: float | None = None

    @property
    def tokens_per_second(self) -> float:
        decode = self.seconds - (self.first_token_s or 0.0)
        return (self.completion_tokens - 1) / decode if self.completion_tokens > 1 and decode > 0 else 0.0


@runtime_checkable
class ModelBackend(Protocol):
    """What the repair loop needs from a model."""

    name: str

    def generate(
        self,
        messages: Sequence[ChatMessage],
        options: GenerationOptions | None = None,
        on_token: TokenCallback | None = None,
    ) -> Generation: ...


class ScriptedBackend:
    """A backend that replies with prepared completions, in order.

    ``replies`` is a list of strings, or a function from the messages to a string. Each reply
    is streamed word by word like a real model, ``token_delay_s`` apart (a typing pace for
    classroom demos and UI tests). Every prompt received is kept in ``calls``.
    """

    def __init__(
        self,
        replies: Iterable[str] | Callable[[Sequence[ChatMessage]], str],
        name: str = "scripted",
        token_delay_s: float = 0.0,
    ):
        self.name = name
        self.token_delay_s = token_delay_s
        self._reply = replies if callable(replies) else iter(list(replies)).__next__
        self._callable = callable(replies)
        self.calls: list[list[ChatMessage]] = []

    def generate(
        self,
        messages: Sequence[ChatMessage],
        options: GenerationOptions | None = None,
        on_token: TokenCallback | None = None,
    ) -> Generation:
        start = time.perf_counter()
        self.calls.append([dict(m) for m in messages])
        try:
            text = self._reply(messages) if self._callable else self._reply()
        except StopIteration:
            raise RuntimeError("ScriptedBackend ran out of replies") from None
        chunks = re.findall(r"\S+\s*|\s+", text)
        for chunk in chunks:
            if self.token_delay_s:
                time.sleep(self.token_delay_s)
            if on_token:
                on_token(chunk)
        prompt_words = sum(len(m["content"].split()) for m in messages)
        return Generation(text, prompt_words, len(chunks), time.perf_counter() - start, 0.0)


@dataclass
class TransformersBackend:
    """A causal language model from ``transformers``, loaded once and used for many turns."""

    model: Any
    tokenizer: Any
    name: str
    device: str
    dtype: str
    load_seconds: float = 0.0
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def render_prompt(self, messages: Sequence[ChatMessage]) -> str:
        """Chat template when the tokenizer has one; a plain instruction format otherwise."""
        if getattr(self.tokenizer, "chat_template", None):
            return self.tokenizer.apply_chat_template(list(messages), tokenize=False, add_generation_prompt=True)
        blocks = [f"### {m['role'].capitalize()}\n{m['content']}" for m in messages]
        return "\n\n".join(blocks) + "\n\n### Assistant\n"

    def generate(
        self,
        messages: Sequence[ChatMessage],
        options: GenerationOptions | None = None,
        on_token: TokenCallback | None = None,
    ) -> Generation:
        options = options or GenerationOptions()
        prompt = self.render_prompt(messages)
        inputs = self.tokenizer(prompt, return_tensors="pt", add_special_tokens=False).to(self.device)
        prompt_len = int(inputs["input_ids"].shape[1])
        # One generation at a time per model: two threads in model.generate would only
        # thrash the same cores (or GPU) and interleave their streams.
        with self._lock:
            return self._generate(inputs, prompt_len, options, on_token)

    def _generate(self, inputs: Any, prompt_len: int, options: GenerationOptions, on_token: TokenCallback | None) -> Generation:
        import torch
        from transformers import StoppingCriteriaList, TextIteratorStreamer

        streamer = TextIteratorStreamer(self.tokenizer, skip_prompt=True, skip_special_tokens=True, timeout=0.5)
        cancel = threading.Event()
        stopping = StoppingCriteriaList([_StopWhen(self.tokenizer, prompt_len, cancel, options.stop_after_code)])
        kwargs: dict[str, Any] = dict(
            **inputs,
            max_new_tokens=options.max_new_tokens,
            streamer=streamer,
            stopping_criteria=stopping,
            pad_token_id=self.tokenizer.pad_token_id if self.tokenizer.pad_token_id is not None else self.tokenizer.eos_token_id,
        )
        if options.temperature > 0:
            kwargs.update(do_sample=True, temperature=options.temperature, top_p=options.top_p)
        else:
            kwargs.update(do_sample=False, temperature=None, top_p=None, top_k=None)
        if options.seed is not None:
            torch.manual_seed(options.seed)

        result: dict[str, Any] = {}

        def worker() -> None:
            try:
                with torch.inference_mode():
                    result["ids"] = self.model.generate(**kwargs)
            except BaseException as exc:  # re-raised in the caller's thread below
                result["error"] = exc
                streamer.end()

        # Generation runs in a worker so the caller's thread receives the tokens (UIs update
        # from there) and stays interruptible: Ctrl-C / a Jupyter interrupt cancels generation.
        start = time.perf_counter()
        first_token_s: float | None = None
        text_parts: list[str] = []
        thread = threading.Thread(target=worker, name="pal-generate", daemon=True)
        thread.start()
        try:
            while True:
                try:
                    piece = next(streamer)
                except StopIteration:
                    break
                except queue.Empty:
                    if not thread.is_alive() and "error" in result:
                        break
                    continue
                if piece and first_token_s is None:
                    first_token_s = time.perf_counter() - start
                text_parts.append(piece)
                if on_token and piece:
                    on_token(piece)
        except BaseException:
            cancel.set()
            thread.join()
            raise
        thread.join()
        if "error" in result:
            raise result["error"]
        seconds = time.perf_counter() - start
        new_ids = result["ids"][0, prompt_len:]
        text = self.tokenizer.decode(new_ids, skip_special_tokens=True)
        return Generation(text, prompt_len, int(new_ids.shape[0]), seconds, first_token_s)


class _StopWhen:
    """Stopping criterion: the caller cancelled, or the first code block is complete."""

    def __init__(self, tokenizer: Any, prompt_len: int, cancel: threading.Event, after_code: bool):
        self.tokenizer, self.prompt_len, self.cancel, self.after_code = tokenizer, prompt_len, cancel, after_code

    def __call__(self, input_ids: Any, scores: Any, **kwargs: Any) -> Any:
        import torch

        done = self.cancel.is_set()
        if not done and self.after_code:
            tail = self.tokenizer.decode(input_ids[0, self.prompt_len :], skip_special_tokens=True)
            done = bool(_CLOSED_FENCE.search(tail))
        return torch.full((input_ids.shape[0],), done, dtype=torch.bool, device=input_ids.device)


# --------------------------------------------------------------------------- loading

_CACHE: dict[tuple[str, str, str], TransformersBackend] = {}
_CACHE_LOCK = threading.Lock()
_REGISTERED: dict[str, ModelBackend] = {}


def register_model(name: str, backend: ModelBackend) -> None:
    """Make ``backend`` loadable by ``name`` (``%%pal --model NAME``, ``solve(model=NAME)``).

    For backends that are not transformers checkpoints: a scripted backend for a classroom demo
    that must not depend on a model's mood, or an adapter to a model served elsewhere.
    """
    _REGISTERED[name] = backend


def resolve_device(device: str = "auto") -> str:
    """'auto' -> 'cuda' when a usable GPU is present, else 'cpu'. A requested GPU must work."""
    import torch

    if device == "auto":
        return "cuda" if torch.cuda.is_available() else "cpu"
    if device.startswith("cuda"):
        try:
            usable = torch.cuda.is_available() and torch.zeros(1, device=device) is not None
        except Exception as exc:  # a dead or busy GPU raises here, not at is_available()
            raise ModelLoadError(f"The GPU '{device}' is not usable ({exc}). Use --device cpu.") from None
        if not usable:
            raise ModelLoadError(f"No usable CUDA GPU for device '{device}'. Use --device cpu (or auto).")
    return device


def resolve_dtype(dtype: str, device: str) -> str:
    """'auto' -> bf16 on a GPU (half the memory traffic), fp32 on a CPU (faster there)."""
    if dtype == "auto":
        return "bfloat16" if device.startswith("cuda") else "float32"
    if dtype not in {"float32", "bfloat16", "float16"}:
        raise ModelLoadError(f"Unknown dtype {dtype!r}: use auto, float32, bfloat16 or float16.")
    return dtype


def resolve_source(source: str) -> str:
    """Turn a preset name, a GGUF file or a directory into something from_pretrained loads."""
    if presets.find_preset(source):
        return str(presets.prepare_preset(source))
    path = Path(source).expanduser()
    if path.is_file() and path.suffix == ".gguf":
        try:
            return str(presets.convert_gguf(path))
        except Exception as exc:
            raise ModelLoadError(f"Could not read the GGUF file {path}: {exc}") from None
    if path.is_dir():
        if not (path / "config.json").is_file():
            raise ModelLoadError(f"{path} is a directory but holds no config.json: not a transformers model.")
        return str(path)
    if path.exists():
        raise ModelLoadError(f"{path} is neither a model directory nor a .gguf file.")
    if source.startswith((".", "/", "~")) or source.endswith(".gguf"):
        raise ModelLoadError(f"No model at {path}: the path does not exist.")
    return source  # a Hugging Face id: from the local HF cache, or the hub when reachable


def load_model(source: str = presets.DEFAULT_MODEL, *, device: str = "auto", dtype: str = "auto") -> ModelBackend:
    """Load (or reuse) a model. ``source``: registered name, preset, HF id, model directory or .gguf file."""
    if source in _REGISTERED:
        return _REGISTERED[source]
    device = resolve_device(device)
    dtype = resolve_dtype(dtype, device)
    key = (source, device, dtype)
    with _CACHE_LOCK:
        if key not in _CACHE:
            _CACHE[key] = _load_uncached(source, device, dtype)
        return _CACHE[key]


def clear_model_cache() -> None:
    """Forget loaded models (their memory is freed once nothing else refers to them)."""
    with _CACHE_LOCK:
        _CACHE.clear()


def _load_uncached(source: str, device: str, dtype: str) -> TransformersBackend:
    import torch
    from safetensors import SafetensorError  # a damaged weights file raises this, not OSError
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from transformers.utils import logging as hf_logging

    start = time.perf_counter()
    resolved = resolve_source(source)
    bars = hf_logging.is_progress_bar_enabled()
    hf_logging.disable_progress_bar()  # a per-tensor bar in every notebook cell is noise
    try:
        tokenizer = AutoTokenizer.from_pretrained(resolved)
        if len(tokenizer) <= 1:  # transformers 5 builds an empty tokenizer when its files are missing
            raise ModelLoadError(
                f"The model {source!r} has no tokenizer (no tokenizer.json / tokenizer_config.json in "
                f"{resolved}): save the tokenizer next to the weights, or pass the original model."
            )
        model = AutoModelForCausalLM.from_pretrained(resolved, dtype=getattr(torch, dtype))
        model.to(device).eval()
    except ModelLoadError:
        raise
    except (OSError, ValueError, RuntimeError, ImportError, SafetensorError) as exc:
        first_line = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise ModelLoadError(
            f"Could not load the model {source!r}: {first_line}\n"
            "Pass a local model directory, a .gguf file, a Hugging Face id that is in your local "
            f"cache, or a preset ({', '.join(presets.ALIASES)}; install with "
            f"{presets.find_preset('default').install_hint()})."  # type: ignore[union-attr]
        ) from None
    finally:
        if bars:
            hf_logging.enable_progress_bar()
    seconds = time.perf_counter() - start
    log.info("Loaded %s on %s (%s) in %.1f s", source, device, dtype, seconds)
    return TransformersBackend(model, tokenizer, name=source, device=device, dtype=dtype, load_seconds=seconds)
