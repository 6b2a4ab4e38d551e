"""Local Hugging Face models through ``transformers``: batched generation with a prompt cache.

:class:`TransformersBackend` runs a causal language model on the GPU (bf16) or the CPU (bf16
where the CPU has bf16 matrix instructions, fp32 otherwise; :func:`resolve_dtype`). Several
programs for one prompt are drawn in one batched ``generate`` call, and the key/value cache of
the prompt's fixed part is kept between questions. :func:`load_transformers` resolves a preset,
a GGUF file, a model directory or a Hugging Face id and loads it.
"""

from __future__ import annotations

import copy
import logging
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Sequence
from contextlib import closing
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..errors import ModelLoadError
from ..streaming import stream_from_worker
from . import presets
from .adapters import check_base, conditioned, read_adapter
from .base import (CODE_OPENING, BatchingBackend, ChatMessage, Generation, GenerationOptions, RowTokenCallback,
                   closed_code, code_prefilled, continues_turn, row_is_done)

log = logging.getLogger(__name__)



@dataclass
class TransformersBackend(BatchingBackend):
    """A causal language model from ``transformers``, loaded once and used for many turns.

    Two things make repeated questions cheap. Several programs for one prompt are drawn in ONE
    batched ``generate`` call (on a CPU with bf16 matrix units, 5 cost little more wall time
    than 1). And the key/value cache of the prompt's fixed part (system message and worked
    examples, everything before the last message) is computed once and reused, so the time to
    the first token does not grow with the number of worked examples; the question itself is
    prefilled once and then shared by all the rows of the batch.
    """

    model: Any
    tokenizer: Any
    name: str
    device: str
    dtype: str
    load_seconds: float = 0.0
    prefix: str = ""  # a LeTI adapter conditions every question on its reward token (see adapters)
    prompt_style: str | None = None  # how an adapter was trained to be asked (pal_jupyter.prompts styles)
    prefix_cache_size: int = 4  # distinct prompt prefixes kept (system + worked examples)
    runtime_reason: str = ""  # why this runtime was chosen (registry.choose_runtime)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)
    _prefixes: OrderedDict[tuple[int, ...], Any] = field(default_factory=OrderedDict, repr=False)
    _cache_broken: bool = field(default=False, repr=False)

    @property
    def runtime(self) -> str:
        return f"transformers ({self.device}, {self.dtype})"

    def render_prompt(self, messages: Sequence[ChatMessage], add_generation_prompt: bool = True,
                      continue_final: bool = False) -> str:
        """Chat template when the tokenizer has one; a plain instruction format otherwise.
        ``continue_final``: the last message is an assistant turn begun for the model to go on with."""
        if getattr(self.tokenizer, "chat_template", None):
            if continue_final:
                return self.tokenizer.apply_chat_template(
                    list(messages), tokenize=False, add_generation_prompt=False, continue_final_message=True)
            return self.tokenizer.apply_chat_template(
                list(messages), tokenize=False, add_generation_prompt=add_generation_prompt
            )
        blocks = [f"### {m['role'].capitalize()}\n{m['content']}" for m in messages]
        if continue_final:
            return "\n\n".join(blocks)
        return "\n\n".join(blocks) + ("\n\n### Assistant\n" if add_generation_prompt else "\n\n")

    def _encode(self, text: str) -> list[int]:
        return list(self.tokenizer(text, add_special_tokens=False)["input_ids"])

    def generate_many(
        self,
        messages: Sequence[ChatMessage],
        n: int,
        options: GenerationOptions | None = None,
        on_token: RowTokenCallback | None = None,
    ) -> list[Generation]:
        """``n`` completions of ``messages`` drawn in one batch; ``on_token(row, text)`` streams them."""
        if n < 1:
            raise ValueError("n must be at least 1")
        options = options or GenerationOptions()
        temperature = options.temperature_for(n)
        messages = code_prefilled(conditioned(list(messages), self.prefix), options)
        prompt_ids = self._encode(self.render_prompt(messages, continue_final=continues_turn(messages)))
        # One generation at a time per model: two threads in model.generate would only
        # thrash the same cores (or GPU) and interleave their streams.
        with self._lock:
            return self._generate(messages, prompt_ids, n, options, temperature, on_token)

    # -- the prompt's key/value cache -------------------------------------------------------------

    def _prefilled_cache(self, messages: Sequence[ChatMessage], prompt_ids: list[int], n: int) -> Any:
        """A cache holding all but the last prompt token, expanded to ``n`` rows (None: let
        ``generate`` prefill by itself, e.g. for a model whose cache cannot be copied)."""
        if self._cache_broken or len(prompt_ids) < 2:
            return None
        try:
            cache, done = self._prefix_cache(messages, prompt_ids)
            self._forward(prompt_ids[done:-1], cache)
            if n > 1:
                cache.batch_repeat_interleave(n)
            return cache
        except Exception as exc:  # an architecture whose cache does not support this: plain path
            log.warning("Prompt caching is not available for %s (%s); continuing without it.", self.name, exc)
            self._cache_broken = True
            return None

    def _prefix_cache(self, messages: Sequence[ChatMessage], prompt_ids: list[int]) -> tuple[Any, int]:
        """A private copy of the cached prefix (everything before the last message) and its length."""
        from transformers import DynamicCache

        if len(messages) > 1:
            prefix = self._encode(self.render_prompt(messages[:-1], add_generation_prompt=False))
            if 0 < len(prefix) < len(prompt_ids) - 1 and prompt_ids[: len(prefix)] == prefix:
                key = tuple(prefix)
                if key not in self._prefixes:
                    cache = DynamicCache(config=self.model.config)
                    self._forward(prefix, cache)
                    self._prefixes[key] = cache
                    while len(self._prefixes) > self.prefix_cache_size:
                        self._prefixes.popitem(last=False)
                self._prefixes.move_to_end(key)
                return copy.deepcopy(self._prefixes[key]), len(prefix)
        return DynamicCache(config=self.model.config), 0

    def _forward(self, ids: list[int], cache: Any) -> None:
        import torch

        if not ids:
            return
        with torch.inference_mode():
            self.model(torch.tensor([ids], device=self.device), **{self._cache_argument: cache}, use_cache=True)

    @property
    def _cache_argument(self) -> str:
        """transformers renamed ``past_key_values`` to ``cache`` (5.2x warns about the old name)."""
        import inspect

        base = self.model.get_base_model() if hasattr(self.model, "get_base_model") else self.model  # peft wraps it
        return "cache" if "cache" in inspect.signature(base.forward).parameters else "past_key_values"

    # -- generation -------------------------------------------------------------------------------

    def _generate(
        self,
        messages: Sequence[ChatMessage],
        prompt_ids: list[int],
        n: int,
        options: GenerationOptions,
        temperature: float,
        on_token: RowTokenCallback | None,
    ) -> list[Generation]:
        import torch
        from transformers import StoppingCriteriaList

        start = time.perf_counter()
        prompt_len = len(prompt_ids)
        cancel = threading.Event()
        opening = CODE_OPENING if options.code_only else ""  # the reply's start, given in the prompt
        stop = _StopWhen(self.tokenizer, prompt_len, cancel, options, opening)
        pad_id = self.tokenizer.pad_token_id if self.tokenizer.pad_token_id is not None else self.tokenizer.eos_token_id
        input_ids = torch.tensor([prompt_ids] * n, device=self.device)
        kwargs: dict[str, Any] = dict(
            input_ids=input_ids,
            attention_mask=torch.ones_like(input_ids),
            max_new_tokens=options.max_new_tokens,
            stopping_criteria=StoppingCriteriaList([stop]),
            pad_token_id=pad_id,
        )
        if temperature > 0:
            kwargs.update(do_sample=True, temperature=temperature, top_p=options.top_p)
        else:
            kwargs.update(do_sample=False, temperature=None, top_p=None, top_k=None)
        if options.seed is not None:
            torch.manual_seed(options.seed)

        result: dict[str, Any] = {}

        def generate(put: Callable[[tuple[int, str]], None], _cancelled: Callable[[], bool]) -> None:
            streamer = _RowStreamer(self.tokenizer, n, put)  # ``stop`` reads ``cancel`` at every step itself
            try:
                cache = self._prefilled_cache(messages, prompt_ids, n)
                if cache is not None:
                    kwargs[self._cache_argument] = cache
                with torch.inference_mode():
                    result["ids"] = self.model.generate(**kwargs, streamer=streamer)
            finally:
                streamer.end()  # the last pieces, before an error is re-raised in the caller's thread

        # Generation runs in a worker so the caller's thread receives the tokens (UIs update
        # from there) and stays interruptible: Ctrl-C / a Jupyter interrupt cancels generation.
        # A cancelled generate is waited for: it still holds the model (and this backend's lock).
        first_token_s: float | None = None
        started = [False] * n
        with closing(stream_from_worker(generate, name="pal-generate", cancel=cancel, wait_on_cancel=True)) as pieces:
            for row, piece in pieces:
                if first_token_s is None:
                    first_token_s = time.perf_counter() - start
                if on_token:
                    on_token(row, piece if started[row] else opening + piece)
                started[row] = True
        seconds = time.perf_counter() - start
        generations = []
        for row in range(n):
            end = stop.finished_at[row] if row < len(stop.finished_at) else None
            new_ids = result["ids"][row, prompt_len:end]
            count = int((new_ids != pad_id).sum()) if pad_id is not None else int(new_ids.shape[0])
            text = self.tokenizer.decode(new_ids, skip_special_tokens=True)
            if options.code_only:
                text = closed_code(opening + text)
            generations.append(Generation(text, prompt_len, max(count, 1 if text else 0), seconds, first_token_s))
        return generations


class _RowStreamer:
    """Receives each decoding step's tokens (one per row) from ``generate`` and hands
    ``(row, new text)`` pairs to ``send`` (:func:`~pal_jupyter.streaming.stream_from_worker`'s
    ``put``, to the consuming thread).

    The first ``put`` is the prompt, which is skipped. Text is decoded per row from all of its
    tokens so far, so multi-token characters come out whole.
    """

    def __init__(self, tokenizer: Any, rows: int, send: Callable[[tuple[int, str]], None]):
        self.tokenizer = tokenizer
        self.ids: list[list[int]] = [[] for _ in range(rows)]
        self.sent = [""] * rows
        self.send = send
        self._prompt_seen = False

    def put(self, value: Any) -> None:
        if not self._prompt_seen:
            self._prompt_seen = True
            return
        for row, token in enumerate(value.reshape(-1).tolist()):
            self.ids[row].append(token)
            self._send(row, final=False)

    def _send(self, row: int, final: bool) -> None:
        text = self.tokenizer.decode(self.ids[row], skip_special_tokens=True)
        if not text.startswith(self.sent[row]) or (text.endswith("\ufffd") and not final):
            return  # a re-segmentation, or half a character: wait for the next token
        if len(text) > len(self.sent[row]):
            self.send((row, text[len(self.sent[row]) :]))
            self.sent[row] = text

    def end(self) -> None:
        """Send what is left of every row: ``generate`` calls it when it ends, and the worker once more
        (the one call after an error; otherwise it finds nothing new)."""
        for row in range(len(self.ids)):
            self._send(row, final=True)


class _StopWhen:
    """Stopping criterion, per row: the caller cancelled, or the row is done (:func:`row_is_done`:
    its first code block is complete, or the options' own rule says so).

    ``finished_at[row]`` is the sequence length at which the row stopped (None while it runs),
    so tokens a model without an end-of-text token keeps writing after that are cut off.
    """

    def __init__(self, tokenizer: Any, prompt_len: int, cancel: threading.Event, options: GenerationOptions,
                 opening: str = ""):
        self.tokenizer, self.prompt_len, self.cancel, self.options = tokenizer, prompt_len, cancel, options
        self.opening = opening  # the start of the reply that the prompt already holds (code_only)
        self.finished_at: list[int | None] = []

    def __call__(self, input_ids: Any, scores: Any, **kwargs: Any) -> Any:
        import torch

        rows, length = input_ids.shape
        if len(self.finished_at) != rows:
            self.finished_at = [None] * rows
        watching = self.options.stop_after_code or self.options.stop_when is not None
        for row in range(rows):
            if self.finished_at[row] is not None:
                continue
            if self.cancel.is_set():
                self.finished_at[row] = length
            elif watching:
                tail = self.opening + self.tokenizer.decode(input_ids[row, self.prompt_len :], skip_special_tokens=True)
                if row_is_done(tail, self.options):
                    self.finished_at[row] = length
        done = [at is not None for at in self.finished_at]
        return torch.tensor(done, dtype=torch.bool, device=input_ids.device)


# Device files of GPU drivers: without any of them there is no GPU, and torch need not be imported
# (which costs seconds and hundreds of MB) to find that out.
GPU_DEVICE_FILES = ("/dev/nvidia0", "/dev/nvidiactl", "/dev/kfd", "/dev/dxg")


def gpu_available() -> bool:
    """Whether torch sees a usable CUDA (or ROCm) GPU; answered without importing torch when no
    GPU driver is present."""
    if not any(Path(p).exists() for p in GPU_DEVICE_FILES):
        return False
    try:
        import torch

        return bool(torch.cuda.is_available())
    except Exception:  # a broken driver or torch: no usable GPU
        return False


def resolve_device(device: str = "auto") -> str:
    """'auto' -> 'cuda' when a usable GPU is present, else 'cpu'. A requested GPU must work."""
    if device == "auto":
        return "cuda" if gpu_available() else "cpu"
    if device.startswith("cuda"):
        import torch

        try:
            usable = torch.cuda.is_available() and torch.zeros(1, device=device) is not None
        except Exception as exc:  # a dead or busy GPU raises here, not at is_available()
            raise ModelLoadError(f"The GPU '{device}' is not usable ({exc}). Use --device cpu.") from None
        if not usable:
            raise ModelLoadError(f"No usable CUDA GPU for device '{device}'. Use --device cpu (or auto).")
    return device


def resolve_dtype(dtype: str, device: str) -> str:
    """'auto' -> bf16 on a GPU, and on a CPU with bf16 matrix instructions; fp32 on other CPUs.

    bf16 halves the memory traffic. On CPUs with AMX or AVX512-BF16 it is also the faster format
    (measured here: prefill 0.60 s vs 1.61 s, a batch of 5 at 13.6 vs 7.1 tokens/s), but on CPUs
    without them PyTorch emulates it and it can be 10-100x slower, so it is never assumed.
    """
    if dtype == "auto":
        if device.startswith("cuda"):
            return "bfloat16"
        return "bfloat16" if cpu_has_bf16() else "float32"
    if dtype not in {"float32", "bfloat16", "float16"}:
        raise ModelLoadError(f"Unknown dtype {dtype!r}: use auto, float32, bfloat16 or float16.")
    return dtype


BF16_CPU_FLAGS = frozenset({"amx_bf16", "avx512_bf16"})


def cpu_has_bf16(cpuinfo: str | Path = "/proc/cpuinfo") -> bool:
    """Whether this CPU computes bf16 matrix products natively (Linux ``/proc/cpuinfo`` flags).

    Elsewhere (macOS, Windows, no /proc) the answer is False: fp32 is the safe choice.
    """
    return bool(BF16_CPU_FLAGS & (cpu_flags(cpuinfo) or set()))


def cpu_flags(cpuinfo: str | Path = "/proc/cpuinfo") -> set[str] | None:
    """The CPU's feature flags from Linux ``/proc/cpuinfo``; None where there is no such file or line."""
    try:
        text = Path(cpuinfo).read_text(errors="replace")
    except OSError:
        return None
    line = next((line for line in text.splitlines() if line.startswith("flags")), None)
    return None if line is None else set(line.partition(":")[2].split())


def resolve_source(source: str, dtype: str = "float32") -> str:
    """Turn a preset name, a GGUF file or a directory into something from_pretrained loads (a GGUF
    file: its conversion to ``dtype``)."""
    if presets.find_preset(source):
        return str(presets.prepare_preset(source, dtype))
    path = Path(source).expanduser()
    if path.is_file() and path.suffix == ".gguf":
        try:
            return str(presets.convert_gguf(path, dtype))
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


def load_transformers(source: str, device: str, dtype: str, adapter: str = "") -> TransformersBackend:
    """Load ``source`` (preset, GGUF file, model directory or Hugging Face id) on ``device`` in
    ``dtype``, with the LoRA ``adapter`` (a directory written by ``pal-jupyter train``) on top."""
    import torch
    from safetensors import SafetensorError  # a damaged weights file raises this, not OSError
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from transformers.utils import logging as hf_logging

    start = time.perf_counter()
    resolved = resolve_source(source, dtype)
    info = read_adapter(adapter) if adapter else None
    if info is not None:
        check_base(info, model_directory(resolved), source, adapter)
    bars = hf_logging.is_progress_bar_enabled()
    hf_logging.disable_progress_bar()  # a per-tensor bar in every notebook cell is noise
    try:
        tokenizer = AutoTokenizer.from_pretrained(adapter or resolved)  # an adapter's has the reward tokens
        if len(tokenizer) <= 1:  # transformers 5 builds an empty tokenizer when its files are missing
            raise ModelLoadError(
                f"The model {source!r} has no tokenizer (no tokenizer.json / tokenizer_config.json in "
                f"{resolved}): save the tokenizer next to the weights, or pass the original model."
            )
        model = AutoModelForCausalLM.from_pretrained(resolved, dtype=getattr(torch, dtype))
        if info is not None:
            model = _with_adapter(model, tokenizer, adapter)
        model.to(device).eval()
    except ModelLoadError:
        raise
    except (OSError, ValueError, RuntimeError, ImportError, KeyError, SafetensorError) as exc:
        first_line = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        if info is not None:
            raise ModelLoadError(f"Could not load the adapter {adapter!r} onto {source!r}: {first_line}") from None
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
    name = f"{source}+{adapter}" if adapter else source
    log.info("Loaded %s on %s (%s) in %.1f s", name, device, dtype, seconds)
    return TransformersBackend(model, tokenizer, name=name, device=device, dtype=dtype, load_seconds=seconds,
                               prefix=info.prefix if info is not None else "",
                               prompt_style=info.prompt if info is not None else None)


def _with_adapter(model: Any, tokenizer: Any, adapter: str) -> Any:
    from peft import PeftModel

    if len(tokenizer) > model.get_input_embeddings().weight.shape[0]:  # the reward tokens need rows
        # The adapter brings their trained values, so no initialisation (transformers' default one
        # prints two warnings and computes a covariance over the whole vocabulary).
        model.resize_token_embeddings(len(tokenizer), mean_resizing=False)
    # Folded into the weights: an unmerged adapter runs its LoRA matrices beside every projection
    # and rebuilds the whole embedding matrix for its trainable reward tokens at every token,
    # which halved the lite model's decoding speed on this CPU (docs/training.md, "Learning from the interpreter").
    return PeftModel.from_pretrained(model, adapter).merge_and_unload()


def model_directory(resolved: str) -> str:
    """The local folder of a resolved model (a Hugging Face id: its snapshot in the local cache)."""
    if Path(resolved).is_dir():
        return resolved
    try:
        from huggingface_hub import snapshot_download

        return snapshot_download(resolved, local_files_only=True)
    except Exception as exc:  # not in the cache: nothing to compare an adapter against
        raise ModelLoadError(f"The model {resolved!r} is not in the local cache: {exc}") from None
