"""What the repair loop needs from a model, and a model that replays prepared replies.

A backend turns a list of chat messages into completions, streaming text to a callback as it
is produced. :class:`ModelBackend` is the protocol; :func:`generate_candidates` draws several
completions of one prompt (in one batch when the backend can); :class:`ScriptedBackend`
replays fixed replies and is what tests and classroom demos use when they need exact code out
of "the model". The local Hugging Face implementation is in :mod:`.huggingface`.
"""

from __future__ import annotations

import dataclasses
import re
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Protocol, runtime_checkable

from ..errors import SettingError

# A reply is done once its first fenced code block is closed: whatever a model adds after
# the program is chatter we would throw away, and on a CPU every token costs ~0.3 s.
CLOSED_FENCE = re.compile(r"```[^\n]*\n.*?^[ \t]*```", re.DOTALL | re.MULTILINE)
#: What a reply is made to begin with when only code is wanted (``GenerationOptions.code_only``).
CODE_OPENING = "```python\n"
CODE_CLOSING = "```"

ChatMessage = dict[str, str]  # {"role": "system" | "user" | "assistant", "content": str}
TokenCallback = Callable[[str], None]
RowTokenCallback = Callable[[int, str], None]  # (row of the batch, new text)

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
    # The reply is a program and nothing else: the assistant's turn is begun with CODE_OPENING and
    # each row ends at its closing fence (a stop string where the backend has them), so no token is
    # spent on words before or after the code. Backends that cannot continue a turn ignore it.
    code_only: bool = False
    # Stop one program early when this says so about its text so far (e.g. it starts replacing the
    # user's data). Checked after each token, per program: the others go on.
    stop_when: Callable[[str], bool] | None = field(default=None, repr=False, compare=False)
    # Prompts asked with the same key are kept in the same place of the backend's prompt cache (a
    # llama.cpp slot of their own), so that prompts of another kind asked between them do not push
    # out the part they share: each of the careful method's views names itself. None: anywhere. A key
    # "family:member" whose slot is new starts from a copy of its family's last slot (llama.cpp).
    cache_key: str | None = None
    # How many leading messages (the system message, fixed worked examples) every prompt asked this way
    # shares, whatever the question: a backend that can keep their prompt cache on disk (llama.cpp)
    # reads it from there in a later session, instead of reading those messages again. 0: none.
    shared_messages: int = 0

    def temperature_for(self, samples: int) -> float:
        """The temperature to use when drawing ``samples`` completions of one prompt."""
        if self.temperature is not None:
            if samples > 1 and self.temperature <= 0:
                raise SettingError(
                    f"temperature 0 (greedy decoding) would write the same program {samples} times: "
                    "use a temperature above 0 to draw several programs, or draw one."
                )
            return self.temperature
        return SAMPLE_TEMPERATURE if samples > 1 else 0.0


def row_is_done(text: str, options: GenerationOptions) -> bool:
    """Whether a program being written needs no more text: its code block has closed (with
    ``stop_after_code``), or ``options.stop_when`` says so. Every backend asks this per program."""
    if options.stop_after_code and CLOSED_FENCE.search(text):
        return True
    return options.stop_when is not None and options.stop_when(text)


def code_prefilled(messages: Sequence[ChatMessage], options: GenerationOptions) -> list[ChatMessage]:
    """``messages`` with the assistant's turn begun by the opening fence when ``options.code_only``:
    the model continues that turn, so its first token is code."""
    messages = [dict(m) for m in messages]
    if options.code_only:
        messages.append({"role": "assistant", "content": CODE_OPENING})
    return messages


def continues_turn(messages: Sequence[ChatMessage]) -> bool:
    """Whether the prompt ends with an assistant turn begun for the model to go on with (the code
    fence of ``code_only``, or a prompt's own opening, such as that of an answer in words): every backend
    continues that turn rather than starting a new one, and returns only what the model added."""
    return bool(messages) and messages[-1]["role"] == "assistant"


def closed_code(text: str) -> str:
    """A ``code_only`` row's whole reply (``text`` begins with :data:`CODE_OPENING`), with the closing
    fence that stopped it: a stop string is not part of the text a backend returns."""
    if CLOSED_FENCE.search(text):
        return text
    return (text if text.endswith("\n") else text + "\n") + CODE_CLOSING


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
    """What the engine, the notebook and the command line need from a model.

    A backend may also offer ``generate_many(messages, n, options, on_token)`` returning ``n``
    completions drawn in one batch (``on_token`` then receives ``(row, text)``);
    :func:`generate_candidates` uses it when present and falls back to ``n`` calls of
    ``generate`` otherwise. Likewise ``generate_each(requests, on_token)``: one completion of each
    of several prompts, written at once (:func:`generate_each`). :class:`BatchingBackend` gives every
    attribute below a default, so a backend of one's own subclasses it and writes ``generate_many``.
    """

    name: str  # how the user called the model
    device: str  # where it runs: "cpu", "cuda:0", a server's address
    dtype: str  # its weights in memory: "bfloat16", a GGUF quantisation ("Q4_K_M"), "served"
    load_seconds: float  # how long loading it took
    prompt_style: str | None  # the prompt style it was trained to be asked in (an adapter's); None: the default
    runtime_reason: str  # why this runtime was chosen (registry.choose_runtime); "" when none was

    @property
    def runtime(self) -> str:
        """What runs it, for people: 'llama.cpp (Q4_K_M GGUF, 2 threads)'."""
        ...

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


def generate_each(
    backend: ModelBackend,
    requests: Sequence[tuple[Sequence[ChatMessage], GenerationOptions]],
    on_token: RowTokenCallback | None = None,
) -> list[Generation]:
    """One completion of each prompt (``on_token`` receives ``(request, text)``): written at once when
    the backend can (its ``generate_each``: llama.cpp decodes them as one batch), else one after the other."""
    each = getattr(backend, "generate_each", None)
    if each is not None:
        return list(each(requests, on_token))
    return [generate_candidates(backend, messages, 1, options,
                                (lambda _row, text, index=index: on_token(index, text)) if on_token else None)[0]
            for index, (messages, options) in enumerate(requests)]


class BatchingBackend:
    """A backend whose ``generate`` is its ``generate_many`` with one row, with the defaults of
    :class:`ModelBackend`'s attributes (a subclass, often a dataclass, sets its own)."""

    device: str = "cpu"
    dtype: str = "unknown"
    load_seconds: float = 0.0
    prompt_style: str | None = None
    runtime_reason: str = ""

    @property
    def runtime(self) -> str:
        return ""

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
        raise NotImplementedError


class ScriptedBackend(BatchingBackend):
    """A backend that replies with prepared completions, in order.

    ``replies`` is a list of strings, or a function from the messages to a string. Each reply
    is streamed word by word like a real model, ``token_delay_s`` apart (a typing pace for
    classroom demos and UI tests). Every prompt received is kept in ``calls``; a batch of
    ``n`` (``generate_many``) takes the next ``n`` replies and counts as one call, whose options are
    kept in ``options``. A reply ends where ``options.stop_when`` would have stopped a real model
    (checked line by line); replies are written whole, fences included, also when ``code_only``.
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
        self.options: list[GenerationOptions] = []  # how each call asked (greedy or sampled, code only ...)

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
        self.options.append(options or GenerationOptions())
        texts = [self._cut(self._next(messages), options) for _ in range(n)]
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

    @staticmethod
    def _cut(text: str, options: GenerationOptions | None) -> str:
        """The reply as far as ``options.stop_when`` lets a model write it (line by line)."""
        if options is None or options.stop_when is None:
            return text
        lines = text.splitlines(keepends=True)
        for end in range(1, len(lines) + 1):
            if options.stop_when("".join(lines[:end])):
                return "".join(lines[:end])
        return text

    def _next(self, messages: Sequence[ChatMessage]) -> str:
        try:
            return self._reply(messages) if self._callable else self._reply()
        except StopIteration:
            raise RuntimeError("ScriptedBackend ran out of replies") from None
