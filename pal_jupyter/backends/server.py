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
"""

from __future__ import annotations

import json
import logging
import os
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from ..errors import ModelLoadError, ModelServerError
from .base import BatchingBackend, ChatMessage, Generation, GenerationOptions, RowTokenCallback, row_is_done

log = logging.getLogger(__name__)

PREFIX = "openai:"
BASE_ENV = ("PAL_JUPYTER_API_BASE", "OPENAI_BASE_URL", "OPENAI_API_BASE")
KEY_ENV = ("PAL_JUPYTER_API_KEY", "OPENAI_API_KEY")
RETRY_STATUS = {429, 502, 503, 504}  # busy or restarting: worth another try
MAX_RETRY_WAIT_S = 10.0  # the most a Retry-After header can make us wait per try


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

    def __post_init__(self) -> None:
        import httpx

        self.api_key = self.api_key or next((os.environ[n] for n in KEY_ENV if os.environ.get(n)), "")
        if self.client is None:
            self.client = httpx.Client(timeout=httpx.Timeout(self.timeout_s, connect=min(10.0, self.timeout_s)))

    @property
    def name(self) -> str:
        return f"{PREFIX}{self.model}@{self.base_url}"

    @property
    def device(self) -> str:
        return self.base_url

    @property
    def dtype(self) -> str:
        return "served"

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
        response = self._request("GET", "/models")
        if response.status_code == 404:  # some servers have no model list: the first question will tell
            return
        self._raise_for_status(response)
        try:
            listing = response.json().get("data", [])
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
        stream = self._stream(messages, n, options, on_token, row_offset=0)
        while len(stream.texts) < n:  # the server ignored n: one more request per missing program
            more = self._stream(messages, 1, options, on_token, row_offset=len(stream.texts))
            stream.texts += more.texts
            stream.tokens += more.tokens
        seconds = time.perf_counter() - start
        return [Generation(text, stream.prompt_tokens, tokens, seconds, stream.first_token_s)
                for text, tokens in zip(stream.texts[:n], stream.tokens[:n])]

    def _body(self, messages: Sequence[ChatMessage], n: int, options: GenerationOptions) -> dict[str, Any]:
        body: dict[str, Any] = {
            "model": self.model, "messages": [dict(m) for m in messages], "n": n, "stream": True,
            "max_tokens": options.max_new_tokens, "temperature": options.temperature_for(n),
            "stream_options": {"include_usage": True},
        }
        if body["temperature"] > 0:
            body["top_p"] = options.top_p
        if options.seed is not None:
            body["seed"] = options.seed
        return body

    def _stream(self, messages: Sequence[ChatMessage], n: int, options: GenerationOptions,
                on_token: RowTokenCallback | None, row_offset: int) -> _Stream:
        import httpx

        start = time.perf_counter()
        stream = _Stream(texts=[], tokens=[], finished=[], ended=[])
        with self._open_stream(self._body(messages, n, options)) as response:
            try:
                for chunk in _events(response):
                    stream.prompt_tokens = (chunk.get("usage") or {}).get("prompt_tokens", stream.prompt_tokens)
                    for choice in chunk.get("choices") or []:
                        row = int(choice.get("index", 0))
                        while len(stream.texts) <= row:
                            stream.texts.append("")
                            stream.tokens.append(0)
                            stream.finished.append(False)
                            stream.ended.append(False)
                        text = (choice.get("delta") or {}).get("content") or ""
                        if text and not stream.finished[row]:
                            stream.first_token_s = stream.first_token_s or time.perf_counter() - start
                            stream.texts[row] += text
                            stream.tokens[row] += 1  # servers send about one token per chunk
                            if on_token:
                                on_token(row_offset + row, text)
                            if row_is_done(stream.texts[row], options):
                                stream.finished[row] = True
                        if choice.get("finish_reason"):
                            stream.finished[row] = stream.ended[row] = True
                    if len(stream.texts) >= n and all(stream.finished) and not all(stream.ended):
                        return stream  # every program is complete: closing the response stops the server's work
            except httpx.TimeoutException:
                raise ModelServerError(
                    f"The model server at {self.base_url} sent nothing for {self.timeout_s:g} s in the middle of "
                    "a reply. It may be overloaded: try again, or allow longer with --server-timeout."
                ) from None
            except (httpx.TransportError, json.JSONDecodeError) as exc:
                raise ModelServerError(
                    f"The model server at {self.base_url} cut its reply off mid-way ({type(exc).__name__}); nothing "
                    "was kept. Ask again; if it keeps happening, the server's log will say why."
                ) from None
        if not stream.texts or not all(stream.finished):
            raise ModelServerError(
                f"The model server at {self.base_url} ended its reply before it was complete; nothing was kept. "
                "Ask again; if it keeps happening, the server's log will say why."
            )
        return stream

    # -- HTTP ------------------------------------------------------------------------------------

    def _headers(self) -> dict[str, str]:
        return {"Authorization": f"Bearer {self.api_key}"} if self.api_key else {}

    def _request(self, method: str, path: str, **kwargs: Any) -> Any:
        """One request, retried while the server is down or busy."""
        return self._with_retries(lambda: self.client.request(method, self.base_url + path,
                                                              headers=self._headers(), **kwargs))

    @contextmanager
    def _open_stream(self, body: dict[str, Any]) -> Iterator[Any]:
        """A streaming POST whose status is checked (and retried) before any token is read."""
        def attempt() -> Any:
            request = self.client.build_request("POST", self.base_url + "/chat/completions",
                                                headers=self._headers(), json=body)
            response = self.client.send(request, stream=True)
            if response.status_code != 200:  # read the error body now: the response is closed next
                response.read()
                response.close()
            return response

        response = self._with_retries(attempt)
        try:
            self._raise_for_status(response)
            yield response
        finally:
            response.close()

    def _with_retries(self, send: Any) -> Any:
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
                raise ModelServerError(
                    f"The model server at {self.base_url} did not answer within {self.timeout_s:g} s. It may be "
                    "overloaded or still starting: try again, or allow longer with --server-timeout."
                ) from None
            except httpx.TransportError as exc:
                raise ModelServerError(f"The model server at {self.base_url} closed the connection ({_reason(exc)}). "
                                       "Ask again; the server's log will say why.") from None
            else:
                if response.status_code not in RETRY_STATUS or not tries_left:
                    return response
                wait = _retry_after(response, wait)
            log.info("model server busy or unreachable; trying again in %.1f s (%d tries left)", wait, tries_left)
            time.sleep(wait)
            wait *= 2
        raise AssertionError("unreachable")

    def _raise_for_status(self, response: Any) -> None:
        status = response.status_code
        if status < 400:
            return
        detail = _error_detail(response)
        if status in (401, 403):
            where = ", ".join(f"${n}" for n in KEY_ENV)
            raise ModelServerError(f"The model server at {self.base_url} refused the API key (HTTP {status}). Set "
                                   f"{where} to a key it accepts{' (none is set)' if not self.api_key else ''}.")
        if status == 404 and "model" in detail.lower():
            raise ModelServerError(f"The model server at {self.base_url} does not serve {self.model!r} (HTTP 404: "
                                   f"{detail}). {self.base_url}/models lists the names it serves.")
        if status in RETRY_STATUS:
            raise ModelServerError(f"The model server at {self.base_url} is busy (HTTP {status}) after "
                                   f"{self.retries + 1} tries. Try again in a minute, or ask your teacher.")
        raise ModelServerError(f"The model server at {self.base_url} refused the request (HTTP {status}: {detail}).")


def _events(response: Any) -> Iterator[dict[str, Any]]:
    """The JSON objects of a server-sent event stream, up to ``data: [DONE]``."""
    for line in response.iter_lines():
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


def _error_detail(response: Any) -> str:
    try:
        body = response.json()
        return _message(body.get("error", body) if isinstance(body, dict) else body)
    except (ValueError, AttributeError):
        return (response.text or "").strip()[:300] or response.reason_phrase


def _reason(exc: Exception) -> str:
    text = str(exc).lower()
    return "connection refused" if "refused" in text else (str(exc)[:120] or type(exc).__name__)


def _message(error: Any) -> str:
    """The text of an OpenAI-style error (``{"message": ...}`` or a bare value), kept short."""
    return str(error.get("message", error) if isinstance(error, dict) else error)[:300]
