"""A real OpenAI-compatible HTTP server on loopback that can misbehave on purpose.

It speaks the chat-completions protocol the way vLLM does (server-sent events over chunked
HTTP/1.1, one chunk per word, ``n`` choices interleaved, a usage chunk, ``data: [DONE]``), and
each fault a shared server has is one ``mode``:

``ok``           replies from ``replies`` (a list, cycled, or a function of the request body)
``ignore_n``     like ``ok`` but always one choice, whatever ``n`` was asked (llama.cpp does this)
``busy``         HTTP 503 to the next ``busy_count`` requests (429 with ``status=429``), then ``ok``
``slow``         headers at once, the first token after ``delay_s``
``cut``          a few words, then the connection is dropped in the middle of a chunked body
``ended``        a few words, then a clean end without ``finish_reason`` or ``[DONE]``
``error``        a few words, then an error event in the stream (as vLLM sends when it fails mid-reply)

and a server gone wrong streams without end, until the client hangs up or the server stops:

``drip``         an endless reply, one byte per ``delay_s``: every read gets a byte in time, the reply never ends
``long_line``    one line without end, 64 KiB chunks as fast as the socket takes them
``chatter``      endless SSE comment lines (``: keep-alive``), as fast as the socket takes them
``no_stop``      words without end, whatever ``max_tokens`` says

A request for a model other than ``model`` gets vLLM's 404, and a wrong ``Authorization``
header (when ``key`` is set) a 401. Every request body and header is kept in ``requests``.
"""

from __future__ import annotations

import itertools
import json
import re
import socket
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import suppress
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

ENDLESS = ("drip", "long_line", "chatter", "no_stop")


def free_port() -> int:
    """A loopback port nobody listens on (free when probed; a server may take it after)."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


class ModelServer:
    def __init__(self, replies: list[str] | Callable[[dict[str, Any]], str], model: str = "tiny", key: str = ""):
        self.replies, self.model, self.key = replies, model, key
        self.mode, self.busy_count, self.status, self.delay_s = "ok", 0, 503, 0.0
        self.requests: list[dict[str, Any]] = []
        self._served = 0
        self._lock = threading.Lock()
        self.stopped = threading.Event()  # ends the endless modes' replies
        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), _handler(self))
        self.httpd.daemon_threads = True
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"

    def __enter__(self) -> ModelServer:
        self.thread.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self.stopped.set()
        self.httpd.shutdown()
        self.httpd.server_close()

    def next_reply(self, body: dict[str, Any]) -> str:
        if callable(self.replies):
            return self.replies(body)
        with self._lock:
            reply = self.replies[self._served % len(self.replies)]
            self._served += 1
        return reply


def _handler(server: ModelServer) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *args: Any) -> None:  # quiet test output
            pass

        def do_GET(self) -> None:
            if not self._authorized():
                return
            if self.path.rstrip("/") == "/v1/models":
                self._json(200, {"object": "list", "data": [{"id": server.model, "object": "model"}]})
            else:
                self._json(404, {"detail": "Not Found"})

        def do_POST(self) -> None:
            body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", 0))) or b"{}")
            server.requests.append({"body": body, "headers": dict(self.headers)})
            if not self._authorized():
                return
            if body.get("model") != server.model:
                self._json(404, {"object": "error", "message": f"The model `{body.get('model')}` does not exist.",
                                 "type": "NotFoundError", "code": 404})
                return
            if server.mode == "busy" and server.busy_count > 0:
                server.busy_count -= 1
                self._json(server.status, {"error": {"message": "Server busy"}}, {"Retry-After": "0"})
                return
            self._stream(body)

        def _authorized(self) -> bool:
            if server.key and self.headers.get("Authorization") != f"Bearer {server.key}":
                self._json(401, {"error": {"message": "Invalid API key"}})
                return False
            return True

        def _json(self, status: int, payload: dict[str, Any], headers: dict[str, str] | None = None) -> None:
            data = json.dumps(payload).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            for name, value in (headers or {}).items():
                self.send_header(name, value)
            self.end_headers()
            self.wfile.write(data)

        def _chunk(self, data: bytes) -> None:
            self.wfile.write(f"{len(data):x}\r\n".encode() + data + b"\r\n")
            self.wfile.flush()

        def _event(self, payload: Any) -> None:
            self._chunk(b"data: " + (payload if isinstance(payload, bytes) else json.dumps(payload).encode()) + b"\n\n")

        def _stream(self, body: dict[str, Any]) -> None:
            n = 1 if server.mode == "ignore_n" else int(body.get("n", 1))
            rows = [re.findall(r"\S+\s*|\s+", server.next_reply(body)) for _ in range(n)]
            self.send_response(200)
            self.send_header("Content-Type", "text/event-stream")
            self.send_header("Transfer-Encoding", "chunked")
            self.end_headers()
            if server.mode in ENDLESS:
                self._endless(n)
                return
            if server.mode == "slow":
                time.sleep(server.delay_s)
            for step in range(max(map(len, rows))):
                if server.mode == "error" and step == 2:
                    self._event({"error": {"message": "CUDA out of memory", "code": 500}})
                    self._event(b"[DONE]")
                    self._chunk(b"")
                    return
                if server.mode in ("cut", "ended") and step == 2:
                    if server.mode == "ended":
                        self._chunk(b"")  # a proper end of the body, but the reply is not finished
                    self.close_connection = True
                    return
                for index, words in enumerate(rows):
                    if step < len(words):
                        delta = {"index": index, "delta": {"content": words[step]}, "finish_reason": None}
                        self._event({"object": "chat.completion.chunk", "choices": [delta]})
            for index in range(n):
                self._event({"choices": [{"index": index, "delta": {}, "finish_reason": "stop"}]})
            tokens = sum(map(len, rows))
            self._event({"choices": [], "usage": {"prompt_tokens": 17, "completion_tokens": tokens}})
            self._event(b"[DONE]")
            self._chunk(b"")

        def _endless(self, n: int) -> None:
            self.close_connection = True
            with suppress(OSError):  # the client hung up (or cut the connection): this reply is over
                for piece in self._endless_pieces(n):
                    if server.stopped.is_set():
                        return
                    self._chunk(piece)
                    time.sleep(server.delay_s)

        def _endless_pieces(self, n: int) -> Iterator[bytes]:
            words = [b"data: " + json.dumps({"object": "chat.completion.chunk", "choices": [
                {"index": index, "delta": {"content": "word "}, "finish_reason": None}]}).encode() + b"\n\n"
                     for index in range(n)]
            if server.mode == "drip":
                return (bytes([byte]) for byte in itertools.cycle(b"".join(words)))
            if server.mode == "long_line":
                return itertools.repeat(b"x" * 65536)
            if server.mode == "chatter":
                return itertools.repeat(b": keep-alive\n" * 4096)
            return itertools.cycle(words)

    return Handler
