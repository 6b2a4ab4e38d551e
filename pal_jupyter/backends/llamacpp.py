"""GGUF models on the CPU through llama.cpp: the packaged weights as they are, quantised in memory.

:class:`LlamaCppBackend` runs llama.cpp's own server inside this process (the ``xllamacpp``
binding) and sends it requests as Python dicts in OpenAI's chat format; its streamed chunks come
back through a callback. Nothing is converted or de-quantised: a 1.1 GB Q4_K_M file is what sits
in memory (mapped from the file), where the transformers path needs a bf16/fp32 copy of 3-7 GB.

The k programs of one attempt are ONE request with ``n=k``. llama.cpp prefills the prompt once in
one slot and copies its key/value cache to k-1 more, then decodes all k as one batch; a row leaves
the batch when it ends (end of turn, token budget), so the rows still writing speed up. A row whose
code block has closed is done for us; once every row is done the request is cancelled, so nobody
waits for chatter after the code. Different prompts (the careful method's views) are requests sent
at once (:meth:`LlamaCppBackend.generate_each`), each in its own slot, and their rows are decoded as
one batch too. The prompt's cache stays in its slot, and a RAM cache of recent
prompts (:data:`PROMPT_CACHE_MIB`) keeps the fixed part (system message, worked examples) across
repair prompts and questions: only what is new is prefilled. The start every question of a kind
shares (system message, fixed worked examples) is kept on disk after the first session ever reads it
(:meth:`LlamaCppBackend._start_from_kept`), so a new session's first question reads only the rest.

llama.cpp's server always listens for HTTP too. It is bound to a Unix socket in a private folder
(mode 0700) and guarded by a random key, so nothing else on the machine can use it.
"""

from __future__ import annotations

import hashlib
import http.client
import json
import logging
import os
import secrets
import socket
import shutil
import tempfile
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import closing, suppress
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..errors import ModelLoadError, PalError
from ..streaming import stream_from_worker
from .base import (CODE_CLOSING, CODE_OPENING, BatchingBackend, ChatMessage, Generation, GenerationOptions,
                   RowTokenCallback, closed_code, code_prefilled, row_is_done)
from .gguf_file import GgufInfo, read_gguf_info
from .presets import cache_dir

log = logging.getLogger(__name__)

#: Pinned, tested version of the binding (pyproject.toml pins the same).
XLLAMACPP_VERSION = "2026.10.11549"
#: llama.cpp's socket, in the backend's private folder.
SOCKET_NAME = "llama.sock"
#: Slots: programs that can be written at once (the engine's MAX_SAMPLES).
SLOTS = 16
#: Key/value cache cells shared by all slots (one unified cache: a prompt copied to k slots is stored
#: once). Enough for a long prompt plus 16 programs of 512 tokens.
CONTEXT = 16384
#: RAM for llama.cpp's cache of earlier prompts' key/value states (a 600-token prompt of the
#: default model is about 17 MB).
PROMPT_CACHE_MIB = 256
#: Kept prompt starts (:meth:`LlamaCppBackend._start_from_kept`) per model: the newest are kept, the
#: others removed (one is ~47 MB for the data questions' ~1,600 tokens of fixed examples).
KEPT_PROMPTS = 6
#: Prompt tokens prefilled per step. Progress is reported after each step, which is also when a
#: cancelled request stops, so this bounds how long Ctrl-C waits during a long prefill.
PREFILL_BATCH = 256
#: transformers samples with top-k 50 when the model's generation config does not say otherwise (it
#: does not for the packaged models), and applies the temperature before top-k/top-p. The same here,
#: so that both backends draw programs from the same distribution.
TOP_K = 50
SAMPLERS = ["top_k", "temperature", "top_p"]


def available() -> bool:
    """Whether the llama.cpp binding is installed (without importing it: that loads the library)."""
    import importlib.util

    return importlib.util.find_spec("xllamacpp") is not None


def default_threads() -> int:
    """The physical cores this process may use: decoding is bound by memory and arithmetic units,
    so a second hyper-thread per core only adds contention (llama.cpp's own default rule)."""
    try:
        cpus = sorted(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return max(1, os.cpu_count() or 1)
    cores = set()
    for cpu in cpus:
        topology = Path(f"/sys/devices/system/cpu/cpu{cpu}/topology")
        try:
            package = (topology / "physical_package_id").read_text().strip()
            cores.add((package, (topology / "core_id").read_text().strip()))
        except OSError:
            cores.add(("", str(cpu)))  # no topology (a container, another OS): count the CPU
    return max(1, len(cores))


@dataclass
class _Row:
    """One program being written: its text so far and what it cost."""

    text: str = ""  # begins with the opening fence it was given (code_only)
    wrote: bool = False  # the model wrote some of it
    tokens: int = 0
    done: bool = False  # no more text wanted: its code block closed, or the server finished it
    ended: bool = False  # the server finished it
    timings: dict[str, float] = field(default_factory=dict)  # llama.cpp's own, as of its last piece


@dataclass
class _Request:
    """One request to llama.cpp: its body, its options, the programs it is writing and its timings."""

    body: dict[str, Any]
    options: GenerationOptions
    n: int = 1
    rows: list[_Row] = field(init=False)
    stats: dict[str, float] = field(default_factory=dict)
    finished: threading.Event = field(default_factory=threading.Event)  # every row done: cancel the rest

    def __post_init__(self) -> None:
        self.rows = [_Row(text=self.opening) for _ in range(self.n)]

    @property
    def opening(self) -> str:
        return CODE_OPENING if self.options.code_only else ""


@dataclass
class LlamaCppBackend(BatchingBackend):
    """A GGUF model served by llama.cpp inside this process (see the module docstring)."""

    server: Any = field(repr=False)
    gguf: GgufInfo
    name: str
    threads: int
    load_seconds: float = 0.0
    slots: int = SLOTS
    context: int = CONTEXT
    device: str = "cpu"
    prefix: str = ""  # adapters run on the torch backend; kept for the engine's interface
    prompt_style: str | None = None
    runtime_reason: str = ""  # why this runtime was chosen (registry.choose_runtime)
    # llama.cpp's own timings of the last request, per program (prefill and decode speed, cached
    # prompt tokens): what benchmarks compare the binding's speed against.
    last_timings: list[dict[str, float]] = field(default_factory=list, repr=False)
    _socket_dir: str = field(default="", repr=False)
    _api_key: str = field(default="", repr=False)  # what llama.cpp's socket asks of a request
    _pinned: dict[str, int] = field(default_factory=dict, repr=False)  # cache key -> its slot, least recent first
    # Where the caches of prompt starts shared by every question are kept between sessions (None: not kept)
    kept_dir: Path | None = field(default=None, repr=False)

    @property
    def dtype(self) -> str:
        """What the weights are in memory: the file's quantisation (e.g. ``Q4_K_M``)."""
        return self.gguf.file_type

    @property
    def runtime(self) -> str:
        return f"llama.cpp ({self.gguf.file_type} GGUF, {self.threads} threads)"

    def generate_many(
        self,
        messages: Sequence[ChatMessage],
        n: int,
        options: GenerationOptions | None = None,
        on_token: RowTokenCallback | None = None,
    ) -> list[Generation]:
        """``n`` completions of ``messages``: one request, one prefill, one batch; ``on_token(row, text)``
        streams them."""
        if n < 1:
            raise ValueError("n must be at least 1")
        self._check_slots(n)
        options = options or GenerationOptions()
        request = _Request(self._request(messages, n, options), options, n)
        return self._generate([request], on_token and (lambda _request, row, text: on_token(row, text)))

    def generate_each(
        self,
        requests: Sequence[tuple[Sequence[ChatMessage], GenerationOptions]],
        on_token: RowTokenCallback | None = None,
    ) -> list[Generation]:
        """One completion of each prompt, all written at once, each in its own slot (its options'
        ``cache_key``); ``on_token(request, text)`` streams them.

        Why: llama.cpp decodes the requests' rows as one batch, and on 2 CPU cores two rows decode in
        less time than one after the other (0.168 s a step against 2 x 0.098 on an AVX2 CPU): the
        careful method's two views took 17 % less wall time written at once (docs/decisions.md,
        "Two views at once")."""
        self._check_slots(len(requests))
        batch = [_Request(self._request(messages, 1, options), options) for messages, options in requests]
        return self._generate(batch, on_token and (lambda request, _row, text: on_token(request, text)))

    def _check_slots(self, programs: int) -> None:
        """Refuse more programs at once than llama.cpp has slots for, before any slot is taken."""
        if programs > self.slots:
            raise PalError(f"llama.cpp was started with {self.slots} slots: at most {self.slots} programs at once.")

    def _generate(self, requests: list[_Request],
                  on_token: Callable[[int, int, str], None] | None) -> list[Generation]:
        """Send the ``requests`` at once and stream their rows to ``on_token(request, row, text)``."""
        start = time.perf_counter()
        with closing(self._stream(requests)) as pieces:  # an error here cancels the requests
            for index, row_index, text in pieces:
                if on_token:
                    row, opening = requests[index].rows[row_index], requests[index].opening
                    starts = len(row.text) == len(opening) + len(text)  # its first piece: show the fence too
                    on_token(index, row_index, opening + text if starts else text)
        self.last_timings = [row.timings for request in requests for row in request.rows]
        seconds = time.perf_counter() - start
        return [Generation(closed_code(row.text) if request.options.code_only else row.text,
                           int(request.stats.get("prompt_tokens", 0)), row.tokens, seconds,
                           request.stats.get("first_token_s"))
                for request in requests for row in request.rows]

    def _request(self, messages: Sequence[ChatMessage], n: int, options: GenerationOptions) -> dict[str, Any]:
        temperature = options.temperature_for(n)
        body: dict[str, Any] = {
            "messages": code_prefilled(messages, options), "n": n, "stream": True,
            "max_tokens": options.max_new_tokens, "temperature": temperature,
            "cache_prompt": True, "timings_per_token": True, "return_progress": True,
        }
        if options.code_only:  # the turn is continued after its opening fence (llama.cpp's prefill_assistant)
            body["stop"] = [CODE_CLOSING]
        if temperature > 0:
            body.update(top_k=TOP_K, top_p=options.top_p, min_p=0.0, samplers=SAMPLERS)
        if options.seed is not None:
            body["seed"] = options.seed
        slot, new = self._slot_for(options.cache_key)
        if slot is not None:
            body["id_slot"] = slot
        if slot is not None and new and options.shared_messages:
            self._start_from_kept(slot, messages[:options.shared_messages])
        return body

    def _slot_for(self, key: str | None) -> tuple[int | None, bool]:
        """The slot that prompts asked with cache ``key`` are kept in: the highest slots, one per key,
        up to half of them; once they are all taken, a new key takes the slot of the key asked least
        recently (the others are left to llama.cpp's choice). A new key named ``family:member`` starts
        from a copy of its family's most recently asked slot (:meth:`_copy_slot`).

        Why: llama.cpp otherwise puts a prompt in the idle slot whose cache shares most of its start,
        so a prompt that shares only worked examples with another takes that one's slot and its cache
        (the careful method's idioms prompt took the fixed examples' slot, and the next question's
        first view prefilled ~470 tokens, not ~45). The samples of a request fill the lowest free
        slots (and are cleared when done), so the highest are the ones that keep their cache.

        Returns the slot (None: llama.cpp's choice) and whether it starts empty for this key (neither
        asked with it before nor copied from its family)."""
        if key is None:
            return None, False
        if key in self._pinned:
            self._pinned[key] = self._pinned.pop(key)  # now the most recently asked
            return self._pinned[key], False
        if len(self._pinned) < self.slots // 2:
            slot = self.slots - 1 - len(self._pinned)
        else:
            slot = self._pinned.pop(next(iter(self._pinned)))  # dicts keep the order keys came in
        family, separator, _ = key.partition(":")
        siblings = [s for k, s in self._pinned.items() if separator and k.startswith(family + separator)]
        self._pinned[key] = slot
        if siblings:
            self._copy_slot(siblings[-1], slot)  # the family's most recently asked
        return slot, not siblings

    def _start_from_kept(self, slot: int, shared: Sequence[ChatMessage]) -> None:
        """Start an empty ``slot`` with the cache of the ``shared`` messages (the start every question
        asked this way has: system message, fixed worked examples), kept on disk per model: restored
        when an earlier session kept it, else read now and kept for the sessions after.

        Why: the data questions' fixed examples are ~1,600 tokens, which made the first question of
        every session ~90 s longer on a 2-core AVX2 CPU (~27 s on a Xeon's) before its data was read; a
        kept copy is restored in ~0.03 s. Only the packaged prompts are kept, never the user's data or
        question (they come after the shared messages). Whatever fails costs only that: the prompt is
        read as it would have been."""
        if self.kept_dir is None:
            return
        digest = hashlib.sha256(json.dumps(list(shared), sort_keys=True).encode()).hexdigest()[:24]
        name = f"kept-{digest}.bin"  # llama.cpp reads and writes slot files only in its own folder
        here = os.path.join(self._socket_dir, name)
        try:
            kept = _intact_copy(self.kept_dir, digest)
            if kept is not None:
                self._restore_kept(slot, kept, name)
            else:
                self._keep(slot, shared, self.kept_dir, digest, name)
        except (OSError, PalError) as exc:
            log.debug("Prompt start not kept for slot %d (%s); it is read afresh.", slot, exc)
        finally:
            with suppress(OSError):
                os.remove(here)

    def _restore_kept(self, slot: int, kept: Path, name: str) -> None:
        shutil.copyfile(kept, os.path.join(self._socket_dir, name))
        try:
            self._slot_action(slot, "restore", name)
        except PalError as exc:  # not a copy this llama.cpp can restore: it would fail every session
            log.debug("Kept prompt start %s not restored (%s); removed.", kept, exc)
            kept.unlink(missing_ok=True)
            return
        os.utime(kept)  # used: pruned last

    def _keep(self, slot: int, shared: Sequence[ChatMessage], folder: Path, digest: str, name: str) -> None:
        options = GenerationOptions(max_new_tokens=1, temperature=0.0, stop_after_code=False)
        body = {**self._request(shared, 1, options), "id_slot": slot}  # the last worked example's reply is continued
        self._generate([_Request(body, options)], None)
        try:
            self._slot_action(slot, "save", name)
        except PalError as exc:
            log.debug("Prompt start not saved from slot %d (%s).", slot, exc)
            return
        folder.mkdir(parents=True, exist_ok=True)
        here = os.path.join(self._socket_dir, name)
        kept = folder / f"prompt-{digest}-{_content_digest(Path(here))}.bin"
        partial = kept.with_suffix(f".{os.getpid()}.partial")
        shutil.copyfile(here, partial)
        os.replace(partial, kept)  # whole or not at all, even with another session keeping it too
        _prune(folder, KEPT_PROMPTS)

    def _copy_slot(self, source: int, target: int) -> None:
        """Start slot ``target`` as a copy of slot ``source``'s cache (llama.cpp's slot save and
        restore, through a file in the private folder, removed at once).

        Why: prompts of one family share their start (the fixed worked examples, ~1,700 tokens) and
        differ after it (the data). Kept in one slot, going back to data asked about before read its
        description again; in a slot per member, a new member's empty slot read the worked examples
        again (2,000 tokens: ~110 s on a 2-core AVX2 CPU). A copy of the family's last slot reads
        only what differs. A copy that fails costs only that: the prompt is read as it would be."""
        name = f"slot-{source}.bin"
        try:
            for slot, action in ((source, "save"), (target, "restore")):
                self._slot_action(slot, action, name)
        except (OSError, PalError) as exc:
            log.debug("Slot %d not copied to slot %d (%s); its prompt is read afresh.", source, target, exc)
        finally:
            with suppress(OSError):
                os.remove(os.path.join(self._socket_dir, name))

    def _slot_action(self, slot: int, action: str, filename: str) -> None:
        """``POST /slots/{slot}?action=...`` on llama.cpp's own socket (the binding has no call for it)."""
        connection = _UnixHTTPConnection(os.path.join(self._socket_dir, SOCKET_NAME))
        try:
            connection.request("POST", f"/slots/{slot}?action={action}", body=json.dumps({"filename": filename}),
                               headers={"Content-Type": "application/json", "Authorization": f"Bearer {self._api_key}"})
            response = connection.getresponse()
            reply = response.read()
        finally:
            connection.close()
        if response.status != 200:
            raise PalError(f"llama.cpp could not {action} slot {slot}: {reply[:200]!r}")

    def _stream(self, requests: list[_Request]) -> Iterator[tuple[int, int, str]]:
        """Run the requests, each in a worker thread, and yield ``(request, row, new text)`` in the
        caller's thread.

        The caller's thread stays interruptible (Ctrl-C, a Jupyter interrupt, a stop button): on
        any exception every request is cancelled, which llama.cpp honours at its next step. A request
        whose programs are all complete is cancelled by itself (chatter after the code).
        """

        def run(put: Callable[[Any], None], cancelled: Callable[[], bool]) -> None:
            def send(index: int) -> None:
                def callback(chunk: Any) -> bool:
                    put((index, chunk))
                    return cancelled() or requests[index].finished.is_set()  # True: llama.cpp ends it

                try:
                    self.server.handle_chat_completions(requests[index].body, callback)
                except BaseException as exc:  # re-raised in the caller's thread
                    put((index, exc))

            workers = [threading.Thread(target=send, args=(index,), name=f"pal-llamacpp-{index}", daemon=True)
                       for index in range(1, len(requests))]
            for worker in workers:
                worker.start()
            send(0)
            for worker in workers:
                worker.join()

        start = time.perf_counter()
        # Not waited for once cancelled: the workers end at llama.cpp's next step; they hold no lock of ours.
        with closing(stream_from_worker(run, name="pal-llamacpp")) as chunks:
            for index, chunk in chunks:
                if isinstance(chunk, BaseException):
                    raise chunk
                request = requests[index]
                for row, text in self._read_chunk(chunk, request.rows, request.options, request.stats, start):
                    yield index, row, text
                if all(row.done for row in request.rows):
                    request.finished.set()  # every program is complete: stop the rest (chatter after the code)
        for request in requests:
            if not any(row.wrote for row in request.rows) and not all(row.ended for row in request.rows):
                raise PalError("llama.cpp ended the request without writing anything; ask again.")

    def _read_chunk(self, chunk: Any, rows: list[_Row], options: GenerationOptions,
                    stats: dict[str, float], start: float) -> Any:
        """Yield the new text of one streamed chunk. llama.cpp sends one program's piece per chunk,
        with that program's own timings (``timings_per_token``), also during the prefill."""
        if not isinstance(chunk, dict):
            return
        if chunk.get("error") or (chunk.get("code") and "choices" not in chunk):
            raise PalError(f"llama.cpp refused the request: {_error_message(chunk)}")
        for choice in chunk.get("choices") or []:
            index = int(choice.get("index", 0))
            if index >= len(rows):
                continue
            row = rows[index]
            timings = chunk.get("timings")
            if isinstance(timings, dict):
                row.timings = timings
                if not row.done:  # what it wrote after it was done is not part of the program
                    row.tokens = int(timings.get("predicted_n", row.tokens))
                stats["prompt_tokens"] = timings.get("prompt_n", 0) + timings.get("cache_n", 0)
            text = (choice.get("delta") or {}).get("content") or ""
            if text and not row.done:
                stats.setdefault("first_token_s", time.perf_counter() - start)
                row.text += text
                row.wrote = True
                yield index, text
                row.done = row_is_done(row.text, options)
            if choice.get("finish_reason"):
                row.done = row.ended = True

    def close(self) -> None:
        """Stop llama.cpp and free the model (also done when the backend is garbage-collected)."""
        server, self.server = self.server, None
        del server  # the binding's destructor stops the server loop and frees the model
        if self._socket_dir:
            shutil.rmtree(self._socket_dir, ignore_errors=True)
            self._socket_dir = ""

    def __del__(self) -> None:
        if getattr(self, "_socket_dir", ""):
            shutil.rmtree(self._socket_dir, ignore_errors=True)


class _UnixHTTPConnection(http.client.HTTPConnection):
    """HTTP to llama.cpp's server on its Unix socket."""

    def __init__(self, path: str, timeout: float = 60.0):
        super().__init__("localhost", timeout=timeout)
        self._path = path

    def connect(self) -> None:
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.settimeout(self.timeout)
        self.sock.connect(self._path)


def kept_prompts_dir(info: GgufInfo, context: int) -> Path:
    """Where the prompt starts of this model are kept (:meth:`LlamaCppBackend._start_from_kept`): one
    folder per model file (its path, size and time: a changed file is another model), binding version
    and context, under the models' cache (:func:`~.presets.cache_dir`)."""
    stat = os.stat(info.path)
    identity = f"{os.path.realpath(info.path)}|{stat.st_size}|{stat.st_mtime_ns}|{XLLAMACPP_VERSION}|{context}"
    return cache_dir() / "prompts" / f"{Path(info.path).stem}-{hashlib.sha256(identity.encode()).hexdigest()[:16]}"


def _content_digest(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        while chunk := f.read(1 << 20):
            digest.update(chunk)
    return digest.hexdigest()[:16]


def _intact_copy(folder: Path, digest: str) -> Path | None:
    """The kept copy of the prompt start ``digest`` whose contents still match the digest in its name
    (``prompt-{digest}-{contents}.bin``); any other copy of it is removed.

    Why: llama.cpp aborts the whole process (the user's kernel, when it runs there) on a slot file cut
    short, so a copy damaged on disk is never handed to it; checking ~50 MB takes ~0.1 s. A copy kept
    by a version before the check (no digest of its contents) is read afresh once and kept again."""
    found = None
    for path in folder.glob(f"prompt-{digest}*.bin"):
        contents = path.stem.removeprefix(f"prompt-{digest}").removeprefix("-")
        if found is None and contents and _content_digest(path) == contents:
            found = path
        else:
            log.debug("Kept prompt start %s is damaged or unchecked; removed.", path)
            with suppress(OSError):
                path.unlink()
    return found


def _prune(folder: Path, keep: int) -> None:
    """Remove all but the ``keep`` most recently used kept prompt starts in ``folder``."""
    kept = sorted(folder.glob("prompt-*.bin"), key=lambda path: path.stat().st_mtime, reverse=True)
    for old in kept[keep:]:
        with suppress(OSError):
            old.unlink()


def _error_message(chunk: dict[str, Any]) -> str:
    error = chunk.get("error", chunk)
    message = error.get("message", error) if isinstance(error, dict) else error
    return str(message).strip()[:300] or "no reason given"


def load_llamacpp(gguf_path: str | Path, name: str, threads: int | None = None, slots: int = SLOTS,
                  context: int = CONTEXT) -> LlamaCppBackend:
    """Start llama.cpp on the GGUF file at ``gguf_path`` (``name`` is how the user called the model)."""
    start = time.perf_counter()
    info = read_gguf_info(gguf_path)  # a damaged file gets a precise line, before llama.cpp sees it
    if not info.has_chat_template:
        raise ModelLoadError(f"{info.path} carries no chat template, so llama.cpp cannot ask it questions in "
                             "turns. Use a chat/instruct model's GGUF, or --backend torch with a model folder.")
    try:
        import xllamacpp
    except ImportError:
        raise ModelLoadError(f"The llama.cpp backend needs xllamacpp: pip install xllamacpp=={XLLAMACPP_VERSION} "
                             "(or use --backend torch).") from None
    threads = threads or default_threads()
    socket_dir = tempfile.mkdtemp(prefix="pal-llamacpp-")  # mode 0700: only this user can reach the socket
    params = xllamacpp.CommonParams()
    params.model.path = str(info.path)
    params.n_ctx = context
    params.n_parallel = slots
    params.kv_unified = True
    params.n_batch = params.n_ubatch = PREFILL_BATCH
    params.cache_ram_mib = PROMPT_CACHE_MIB
    # Idle slots keep their prompts (by default llama.cpp moves them to its RAM cache whenever a request
    # starts, and a request sent to its own slot, as the careful method's views are, then finds it empty).
    params.cache_idle_slots = False
    params.cpuparams.n_threads = params.cpuparams_batch.n_threads = threads
    params.n_gpu_layers = 0
    params.hostnames = [os.path.join(socket_dir, SOCKET_NAME)]
    api_key = secrets.token_urlsafe(24)
    params.api_keys = [api_key]
    params.slot_save_path = socket_dir + os.sep  # slot copies (LlamaCppBackend._copy_slot), never kept
    params.endpoint_metrics = params.endpoint_slots = False
    params.verbosity = -1 if not log.isEnabledFor(logging.DEBUG) else 3  # llama.cpp logs to the process's stderr
    params.warmup = True
    try:
        server = xllamacpp.Server(params)
    except Exception as exc:  # llama.cpp says only "failed to init": the header check above ran already
        shutil.rmtree(socket_dir, ignore_errors=True)
        raise ModelLoadError(f"llama.cpp could not load {info.path} ({info.description}): {exc} It may be an "
                             "architecture this llama.cpp does not know; try --backend torch.") from None
    seconds = time.perf_counter() - start
    log.info("Loaded %s with llama.cpp (%s, %d threads) in %.1f s", name, info.description, threads, seconds)
    return LlamaCppBackend(server, info, name=name, threads=threads, load_seconds=seconds, slots=slots,
                           context=context, _socket_dir=socket_dir, _api_key=api_key,
                           kept_dir=kept_prompts_dir(info, context))
