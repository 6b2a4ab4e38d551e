"""A model served elsewhere: any OpenAI-compatible chat endpoint (vLLM, llama.cpp, Ollama, ...).

A class shares one server instead of loading 30 copies of a model. The source string names it::

    openai:MODEL@http://host:8000/v1     # model and server
    openai:MODEL                         # the server from PAL_JUPYTER_API_BASE (or OPENAI_BASE_URL)

The API key comes from the ``api_key`` argument or the environment (``PAL_JUPYTER_API_KEY``, then
``OPENAI_API_KEY``); it is sent in the ``Authorization`` header and nowhere else: not in the
backend's name, its repr, an error message, a log line or a trace.

The k programs of one attempt are one request with ``n=k`` (vLLM batches them like the local
backend does); a server that ignores ``n`` gets one more request per missing program. Tokens
stream to ``on_token`` as they arrive. A server that is down, busy (429/503) or restarting is
retried a few times with back-off before anything has streamed; a slow first token, a stalled or
cut stream, an unknown model and a refused key are one clear :class:`ModelServerError` each, and
nothing is returned, so nothing half-written reaches the notebook or the trace.

A server that misbehaves cannot hang the notebook or fill its memory either: one call has a
deadline (retries and further requests included) that holds even against a server dripping a
byte at a time, and a reply has a cap on its bytes, on one line's length and on its pieces of
text (a server that ignores ``max_tokens``). Each is one clear :class:`ModelServerError`.
"""

from __future__ import annotations

import json
import logging
import os
import socket
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager, suppress
from dataclasses import dataclass, field
from typing import Any

from ..errors import ModelLoadError, ModelServerError
from .base import (BatchingBackend, ChatMessage, Generation, GenerationOptions, RowTokenCallback, continues_turn,
                   row_is_done)

log = logging.getLogger(__name__)

PREFIX = "openai:"
BASE_ENV = ("PAL_JUPYTER_API_BASE", "OPENAI_BASE_URL", "OPENAI_API_BASE")
KEY_ENV = ("PAL_JUPYTER_API_KEY", "OPENAI_API_KEY")
RETRY_STATUS = {429, 502, 503, 504}  # busy or restarting: worth another try
MAX_RETRY_WAIT_S = 10.0  # the most a Retry-After header can make us wait per try
CONNECT_TIMEOUT_S = 10.0  # a server that takes longer to accept a connection is not there
DEADLINE_FACTOR = 10  # by default one call may take 10 read timeouts: 600 s with --server-timeout 60
CLOCK_SLACK_S = 0.05  # a read cut short by the deadline may wake a hair before it: still the deadline
MIB = 1 << 20
MAX_LINE_BYTES = MIB  # a streamed event is a few hundred bytes: a longer line is not a model server's
MIN_RESPONSE_BYTES = 8 * MIB  # the cap on one response's bytes, however few tokens were asked for
BYTES_PER_TOKEN = 2048  # vLLM sends ~300 bytes of JSON per token: a generous multiple
TOKEN_MARGIN, TOKEN_SLACK = 2, 16  # servers send about one piece per token; twice max_tokens is ignoring it


def is_server_source(source: str) -> bool:
    return source.startswith(PREFIX)


def parse_source(source: str) -> tuple[str, str]:
    """``"openai:MODEL@URL"`` -> ``(MODEL, URL)``; the URL may come from the environment."""
    model, _, base_url = source[len(PREFIX):].partition("@")
    base_url = base_url or next((os.environ[name] for name in BASE_ENV if os.environ.get(name)), "")
    if not model or not base_url:
        raise ModelLoadError(
            f"A served model is named openai:MODEL@URL, e.g. openai:Qwen2.5-Coder-1.5B@http://127.0.0.1:8000/v1 "
            f"(or openai:MODEL with the URL in ${BASE_ENV[0]}), not {source!r}."
        )
    if not base_url.startswith(("http://", "https://")):
        raise ModelLoadError(f"The model server's URL must start with http:// or https://, not {base_url!r}.")
    return model, base_url.rstrip("/")


@dataclass
class _Stream:
    """What one streamed request produced, row by row."""

    texts: list[str]
    tokens: list[int]
    finished: list[bool]  # no more text wanted: the server finished the row, or its code block closed
    ended: list[bool]  # the server finished the row (its usage figures follow at the end of the stream)
    prompt_tokens: int = 0
    first_token_s: float | None = None
    pieces: int = 0  # pieces of text the server sent, to finished rows too: what the token cap counts
    start: float = field(default_factory=time.perf_counter)

    def take(self, chunk: dict[str, Any], options: GenerationOptions, on_token: RowTokenCallback | None,
             row_offset: int) -> None:
        """Add one streamed chunk: its text, row by row, and its usage figures."""
        self.prompt_tokens = (chunk.get("usage") or {}).get("prompt_tokens", self.prompt_tokens)
        for choice in chunk.get("choices") or []:
            row = int(choice.get("index", 0))
            while len(self.texts) <= row:
                self.texts.append("")
                self.tokens.append(0)
                self.finished.append(False)
                self.ended.append(False)
            text = (choice.get("delta") or {}).get("content") or ""
            self.pieces += bool(text)
            if text and not self.finished[row]:
                self.first_token_s = self.first_token_s or time.perf_counter() - self.start
                self.texts[row] += text
                self.tokens[row] += 1  # servers send about one token per chunk
                if on_token:
                    on_token(row_offset + row, text)
                if row_is_done(self.texts[row], options):
                    self.finished[row] = True
            if choice.get("finish_reason"):
                self.finished[row] = self.ended[row] = True

    def complete(self, n: int) -> bool:
        """Every program is complete before the server ended them all: closing the response stops its work."""
        return len(self.texts) >= n and all(self.finished) and not all(self.ended)


@dataclass
class _Limits:
    """What one request may still take: the deadline of the whole call (its retries and further requests
    share it) and the bytes of this response."""

    deadline: float  # on time.monotonic()'s clock
    max_bytes: int = MIN_RESPONSE_BYTES
    cut: bool = False  # the watchdog cut the connection at the deadline

    def left(self) -> float:
        return self.deadline - time.monotonic()

    def expired(self) -> bool:
        return self.cut or self.left() <= CLOCK_SLACK_S

    def timeout(self, timeout_s: float) -> Any:
        """httpx's timeouts for the next try: no wait may end after the deadline."""
        import httpx

        wait = max(CLOCK_SLACK_S, min(timeout_s, self.left()))
        return httpx.Timeout(wait, connect=min(CONNECT_TIMEOUT_S, wait))

    @contextmanager
    def watch(self, response: Any) -> Iterator[None]:
        """Cut ``response``'s connection at the deadline. httpx fixes a body's read timeout when the
        reading starts, so without this a server that drips a byte just within each read timeout
        would outlast the deadline by up to one read timeout."""
        timer = threading.Timer(max(0.0, self.left()), self._cut, (response,))
        timer.daemon = True
        timer.start()
        try:
            yield
        finally:
            timer.cancel()

    def _cut(self, response: Any) -> None:
        self.cut = True
        stream = response.extensions.get("network_stream")
        sock = stream.get_extra_info("socket") if stream is not None else None
        if sock is not None:
            with suppress(OSError):  # already closed: nothing left to wake
                # Shutting the socket down wakes the read blocked on it (closing it would not); the plain
                # socket's method, so that a TLS socket does not drop its state under the reading thread.
                socket.socket.shutdown(sock, socket.SHUT_RDWR)


@dataclass
class ServerBackend(BatchingBackend):
    """A chat model behind an OpenAI-compatible HTTP endpoint, streamed with ``httpx``."""

    model: str
    base_url: str
    api_key: str = field(default="", repr=False)
    timeout_s: float = 60.0  # the longest wait for the next piece of a reply (the first token included)
    retries: int = 3  # further tries when the server is down or busy, before anything streamed
    backoff_s: float = 0.5  # first wait between tries; it doubles
    load_seconds: float = 0.0
    client: Any = field(default=None, repr=False)
    deadline_s: float | None = None  # the most one call may take, retries included; None: DEADLINE_FACTOR * timeout_s

    def __post_init__(self) -> None:
        import httpx

        self.api_key = self.api_key or next((os.environ[n] for n in KEY_ENV if os.environ.get(n)), "")
        if self.client is None:
            self.client = httpx.Client(timeout=httpx.Timeout(self.timeout_s,
                                                             connect=min(CONNECT_TIMEOUT_S, self.timeout_s)))

    @property
    def name(self) -> str:
        return f"{PREFIX}{self.model}@{self.base_url}"

    @property
    def device(self) -> str:
        return self.base_url

    @property
    def dtype(self) -> str:
        return "served"

    @property
    def call_deadline_s(self) -> float:
        """The most one call (a generation, or the model check) may take, retries included."""
        return self.deadline_s if self.deadline_s is not None else DEADLINE_FACTOR * self.timeout_s

    @classmethod
    def connect(cls, source: str, timeout_s: float = 60.0, **kwargs: Any) -> ServerBackend:
        """The backend for ``source``, after checking that the server is up and serves the model."""
        model, base_url = parse_source(source)
        start = time.perf_counter()
        backend = cls(model, base_url, timeout_s=timeout_s, **kwargs)
        backend.check_model()
        backend.load_seconds = time.perf_counter() - start
        return backend

    def check_model(self) -> None:
        """Fail now, with the models it does serve, if the server does not serve ours."""
        limits = _Limits(time.monotonic() + self.call_deadline_s)
        with self._open("GET", "/models", limits) as response:
            if response.status_code == 404:  # some servers have no model list: the first question will tell
                return
            self._raise_for_status(response, limits)
            try:
                listing = json.loads(self._read_body(response, limits)).get("data", [])
            except (ValueError, AttributeError):  # not the usual list: the first question will tell
                return
        served = [m.get("id") for m in listing if isinstance(m, dict)]
        if served and self.model not in served:
            raise ModelServerError(
                f"The model server at {self.base_url} does not serve a model named {self.model!r}; it serves "
                f"{', '.join(map(repr, served))}. Use --model {PREFIX}{served[0]}@{self.base_url}."
            )

    # -- generation ------------------------------------------------------------------------------

    def generate_many(
        self,
        messages: Sequence[ChatMessage],
        n: int,
        options: GenerationOptions | None = None,
        on_token: RowTokenCallback | None = None,
    ) -> list[Generation]:
        if n < 1:
            raise ValueError("n must be at least 1")
        options = options or GenerationOptions()
        start = time.perf_counter()
        deadline = time.monotonic() + self.call_deadline_s
        stream = self._stream(messages, n, options, on_token, row_offset=0, deadline=deadline)
        while len(stream.texts) < n:  # the server ignored n: one more request per missing program
            more = self._stream(messages, 1, options, on_token, row_offset=len(stream.texts), deadline=deadline)
            stream.texts += more.texts
            stream.tokens += more.tokens
        seconds = time.perf_counter() - start
        return [Generation(text, stream.prompt_tokens, tokens, seconds, stream.first_token_s)
                for text, tokens in zip(stream.texts[:n], stream.tokens[:n])]

    def _request_body(self, messages: Sequence[ChatMessage], n: int, options: GenerationOptions) -> dict[str, Any]:
        body: dict[str, Any] = {
            "model": self.model, "messages": [dict(m) for m in messages], "n": n, "stream": True,
            "max_tokens": options.max_new_tokens, "temperature": options.temperature_for(n),
            "stream_options": {"include_usage": True},
        }
        if body["temperature"] > 0:
            body["top_p"] = options.top_p
        if options.seed is not None:
            body["seed"] = options.seed
        if continues_turn(messages):  # vLLM's names; llama.cpp's server continues such a turn by itself
            body.update(continue_final_message=True, add_generation_prompt=False)
        return body

    def _stream(self, messages: Sequence[ChatMessage], n: int, options: GenerationOptions,
                on_token: RowTokenCallback | None, row_offset: int, deadline: float) -> _Stream:
        stream = _Stream(texts=[], tokens=[], finished=[], ended=[])
        limits = _Limits(deadline, max(MIN_RESPONSE_BYTES, BYTES_PER_TOKEN * options.max_new_tokens * n))
        max_pieces = TOKEN_MARGIN * options.max_new_tokens * n + TOKEN_SLACK
        with self._open("POST", "/chat/completions", limits, json=self._request_body(messages, n, options)) as response:
            self._raise_for_status(response, limits)
            try:
                for chunk in _events(self._lines(response, limits)):
                    stream.take(chunk, options, on_token, row_offset)
                    if stream.pieces > max_pieces:
                        raise self._error(
                            f"sent more than {max_pieces} pieces of text where {n} x {options.max_new_tokens} tokens "
                            "were asked for: it ignores max_tokens. Nothing was kept; the server's settings or log "
                            "will say why.")
                    if stream.complete(n):
                        return stream
            except json.JSONDecodeError as exc:
                raise self._cut_off_error(exc) from None
        if not stream.texts or not all(stream.finished):
            raise ModelServerError(
                f"The model server at {self.base_url} ended its reply before it was complete; nothing was kept. "
                "Ask again; if it keeps happening, the server's log will say why."
            )
        return stream

    # -- reading a response: never past the deadline, never without bound --------------------------

    def _chunks(self, response: Any, limits: _Limits) -> Iterator[bytes]:
        """The response's body as it arrives, stopped at the deadline or at ``limits.max_bytes``."""
        import httpx

        received = 0
        try:
            for chunk in response.iter_bytes():
                received += len(chunk)
                if limits.expired():  # a server dripping bytes within each read timeout
                    raise self._deadline_error()
                if received > limits.max_bytes:
                    raise self._error(
                        f"sent more than {limits.max_bytes / MIB:g} MiB for one reply, more than any reply needs; "
                        f"nothing was kept. Is {self.base_url} an OpenAI-compatible model server?")
                yield chunk
        except httpx.TimeoutException:
            raise (self._deadline_error() if limits.expired() else ModelServerError(
                f"The model server at {self.base_url} sent nothing for {self.timeout_s:g} s in the middle of "
                "a reply. It may be overloaded: try again, or allow longer with --server-timeout.")) from None
        except httpx.TransportError as exc:  # the watchdog's cut reads as the server hanging up
            raise (self._deadline_error() if limits.expired() else self._cut_off_error(exc)) from None

    def _read_body(self, response: Any, limits: _Limits) -> bytes:
        return b"".join(self._chunks(response, limits))

    def _lines(self, response: Any, limits: _Limits) -> Iterator[str]:
        """The body's lines, split here so that a line without end is an error, not a buffer without end."""
        pending = b""
        for chunk in self._chunks(response, limits):
            *lines, pending = (pending + chunk).split(b"\n")
            if any(len(part) > MAX_LINE_BYTES for part in (*lines, pending)):
                raise self._error(
                    f"sent a line longer than {MAX_LINE_BYTES // MIB} MiB, which no reply has; nothing was kept. "
                    f"Is {self.base_url} an OpenAI-compatible model server?")
            yield from (line.rstrip(b"\r").decode("utf-8", "replace") for line in lines)
        if pending:
            yield pending.rstrip(b"\r").decode("utf-8", "replace")

    # -- errors ----------------------------------------------------------------------------------

    def _error(self, what: str) -> ModelServerError:
        return ModelServerError(f"The model server at {self.base_url} {what}")

    def _deadline_error(self) -> ModelServerError:
        how = f", {DEADLINE_FACTOR} times --server-timeout" if self.deadline_s is None else ""
        return self._error(f"did not finish within {self.call_deadline_s:g} s (the most one reply may take{how})."
                           " It may be overloaded or stuck: try again, or allow longer with --server-timeout.")

    def _cut_off_error(self, exc: Exception) -> ModelServerError:
        return self._error(f"cut its reply off mid-way ({type(exc).__name__}); nothing was kept. Ask again; if it "
                           "keeps happening, the server's log will say why.")

    # -- HTTP ------------------------------------------------------------------------------------

    def _headers(self) -> dict[str, str]:
        return {"Authorization": f"Bearer {self.api_key}"} if self.api_key else {}

    @contextmanager
    def _open(self, method: str, path: str, limits: _Limits, **kwargs: Any) -> Iterator[Any]:
        """A streamed response, retried while the server is down or busy, whose body is read by the
        caller; its connection is cut at the deadline."""
        def attempt() -> Any:
            if limits.expired():
                raise self._deadline_error()
            request = self.client.build_request(method, self.base_url + path, headers=self._headers(),
                                                timeout=limits.timeout(self.timeout_s), **kwargs)
            return self.client.send(request, stream=True)

        response = self._with_retries(attempt, limits)
        try:
            with limits.watch(response):
                yield response
        finally:
            response.close()

    def _with_retries(self, send: Callable[[], Any], limits: _Limits) -> Any:
        import httpx

        wait = self.backoff_s
        for tries_left in range(self.retries, -1, -1):
            try:
                response = send()
            except httpx.ConnectError as exc:
                if not tries_left:
                    raise ModelServerError(
                        f"Cannot reach the model server at {self.base_url} ({_reason(exc)}). Is it running, and is "
                        f"the URL right? Point --model openai:MODEL@URL or ${BASE_ENV[0]} at a running one."
                    ) from None
            except httpx.TimeoutException:
                raise (self._deadline_error() if limits.expired() else ModelServerError(
                    f"The model server at {self.base_url} did not answer within {self.timeout_s:g} s. It may be "
                    "overloaded or still starting: try again, or allow longer with --server-timeout.")) from None
            except httpx.TransportError as exc:
                raise ModelServerError(f"The model server at {self.base_url} closed the connection ({_reason(exc)}). "
                                       "Ask again; the server's log will say why.") from None
            else:
                if response.status_code not in RETRY_STATUS or not tries_left:
                    return response
                response.close()  # its body is not needed: only the last try's is shown
                wait = _retry_after(response, wait)
            log.info("model server busy or unreachable; trying again in %.1f s (%d tries left)", wait, tries_left)
            time.sleep(max(0.0, min(wait, limits.left())))  # past the deadline, the next try says so
            wait *= 2
        raise AssertionError("unreachable")

    def _raise_for_status(self, response: Any, limits: _Limits) -> None:
        status = response.status_code
        if status < 400:
            return
        detail = _error_detail(response, self._read_body(response, limits))
        if status in (401, 403):
            where = ", ".join(f"${n}" for n in KEY_ENV)
            raise ModelServerError(f"The model server at {self.base_url} refused the API key (HTTP {status}). Set "
                                   f"{where} to a key it accepts{' (none is set)' if not self.api_key else ''}.")
        if status == 404 and "model" in detail.lower():
            raise ModelServerError(f"The model server at {self.base_url} does not serve {self.model!r} (HTTP 404: "
                                   f"{detail}). {self.base_url}/models lists the names it serves.")
        if status in RETRY_STATUS:
            raise ModelServerError(f"The model server at {self.base_url} is busy (HTTP {status}) after "
                                   f"{self.retries + 1} tries. Try again in a minute, or ask whoever runs the "
                                   "model server.")
        raise ModelServerError(f"The model server at {self.base_url} refused the request (HTTP {status}: {detail}).")


def _events(lines: Iterable[str]) -> Iterator[dict[str, Any]]:
    """The JSON objects of a server-sent event stream, up to ``data: [DONE]``."""
    for line in lines:
        if not line.startswith("data:"):
            continue
        data = line[len("data:"):].strip()
        if data == "[DONE]":
            return
        chunk = json.loads(data)
        if isinstance(chunk, dict) and chunk.get("error"):
            raise ModelServerError(f"The model server stopped with an error: {_message(chunk['error'])}")
        yield chunk


def _retry_after(response: Any, default: float) -> float:
    try:
        return min(MAX_RETRY_WAIT_S, max(0.0, float(response.headers.get("retry-after", default))))
    except ValueError:
        return default


def _error_detail(response: Any, body: bytes) -> str:
    try:
        error = json.loads(body)
        return _message(error.get("error", error) if isinstance(error, dict) else error)
    except ValueError:
        return body.decode("utf-8", "replace").strip()[:300] or response.reason_phrase


def _reason(exc: Exception) -> str:
    text = str(exc).lower()
    return "connection refused" if "refused" in text else (str(exc)[:120] or type(exc).__name__)


def _message(error: Any) -> str:
    """The text of an OpenAI-style error (``{"message": ...}`` or a bare value), kept short."""
    return str(error.get("message", error) if isinstance(error, dict) else error)[:300]
