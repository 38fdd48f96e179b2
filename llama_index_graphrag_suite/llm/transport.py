"""One HTTP exchange with an LLM server, cut off at a hard deadline and a size cap.

Socket timeouts alone bound each *read*, not the request: a server that trickles a valid response a
few bytes per second, or sends headers one line at a time, keeps every read under the timeout and the
request alive for minutes. Here a watchdog timer shuts the socket down at the deadline, which wakes a
blocked ``recv`` at once, so connect, send, headers and body together never take longer than asked.
The body is read in pieces and refused beyond ``max_bytes`` (a runaway generation or a wrong URL
serving a large file must not fill memory). The connection is always closed, so nothing leaks.

Errors: :class:`HTTPStatusError` (an answer with status >= 400, carrying ``status_code`` like the
``requests`` errors), :class:`ResponseFormatError` (an answer that is not the JSON asked for, or too
large), :class:`DeadlineExceeded` (a ``TimeoutError``), and ``ConnectionError`` for connection problems.
:func:`stream_sse` reads a server-sent-event stream (``stream: true``) under the same deadline and cap.
"""

from __future__ import annotations

import http.client
import json
import socket
import threading
import time
from contextlib import contextmanager
from typing import Any, Iterator, Mapping
from urllib.parse import urlsplit

__all__ = [
    "DeadlineExceeded", "HTTPStatusError", "ResponseFormatError", "request_json", "snippet_of", "stream_sse",
]

DEFAULT_MAX_BYTES = 4 * 1024 * 1024
_ERROR_BODY_BYTES = 64 * 1024  # enough for any error message; the rest of an error body is not read


class DeadlineExceeded(TimeoutError):
    """No complete answer arrived before the deadline."""


class HTTPStatusError(Exception):
    """The server answered with HTTP status >= 400."""

    def __init__(self, status_code: int, reason: str, detail: str) -> None:
        self.status_code = status_code
        self.reason = reason
        self.detail = detail
        text = f"{status_code} {reason}".strip()
        super().__init__(f"{text}: {detail}" if detail else text)


class ResponseFormatError(ValueError):
    """The server answered 2xx, but not with the JSON the protocol prescribes (HTML, garbage, too big)."""


def snippet_of(data: bytes | str, limit: int = 120) -> str:
    text = data.decode("utf-8", "replace") if isinstance(data, bytes) else data
    text = " ".join(text.split())
    return text if len(text) <= limit else text[:limit] + "..."


def _error_detail(body: bytes) -> str:
    """The message of an OpenAI-style ``{"error": {"message": ...}}`` body, else a snippet of it."""
    try:
        value = json.loads(body)
    except ValueError:
        return snippet_of(body)
    error = value.get("error") if isinstance(value, dict) else None
    if isinstance(error, dict) and error.get("message"):
        return snippet_of(str(error["message"]))
    if isinstance(error, str):
        return snippet_of(error)
    return snippet_of(body)


def _read_body(response: http.client.HTTPResponse, limit: int, deadline: float, strict: bool) -> bytes:
    """Read at most ``limit`` bytes; beyond that raise (``strict``) or stop reading."""
    length = response.getheader("Content-Length")
    if strict and length and length.isdigit() and int(length) > limit:
        raise ResponseFormatError(f"the response is {int(length)} bytes, more than the {limit}-byte limit")
    parts: list[bytes] = []
    size = 0
    while True:
        if time.monotonic() >= deadline:
            raise DeadlineExceeded("the response was still arriving at the deadline")
        piece = response.read1(65536)
        if not piece:
            return b"".join(parts)
        parts.append(piece)
        size += len(piece)
        if size > limit:
            if strict:
                raise ResponseFormatError(f"the response exceeded the {limit}-byte limit")
            return b"".join(parts)[:limit]


class _Exchange:
    """One HTTP request and its response, guarded by a watchdog that shuts the socket at ``deadline``.

    Shared by :func:`request_json` (one JSON body) and :func:`stream_sse` (a stream of events), so
    both have the same deadline, the same error mapping and always close the connection.
    """

    def __init__(self, method: str, url: str, payload: Any, headers: Mapping[str, str] | None, deadline: float,
                 accept: str) -> None:
        parts = urlsplit(url)
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            raise DeadlineExceeded("no time was left for the request")
        self.deadline = deadline
        cls = http.client.HTTPSConnection if parts.scheme == "https" else http.client.HTTPConnection
        self.conn = cls(parts.hostname or "localhost", parts.port, timeout=remaining)
        self.fired = threading.Event()
        self.response: http.client.HTTPResponse | None = None
        self._sock: socket.socket | None = None
        self.watchdog = threading.Timer(remaining, self._cut_off)
        self.watchdog.daemon = True
        self.watchdog.start()
        body = None if payload is None else json.dumps(payload).encode("utf-8")
        sent = {"Accept": accept, "User-Agent": "graphrag-suite", **(headers or {})}
        if body is not None:
            sent["Content-Type"] = "application/json"
        path = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
        with self.errors_mapped():
            self.conn.request(method, path, body=body, headers=sent)
            # On a "Connection: close" answer http.client hands the socket to the response and forgets
            # it; the watchdog keeps its own reference so that it can still cut the body off.
            self._sock = self.conn.sock
            self.response = self.conn.getresponse()
            if self.response.status >= 400:
                detail = _error_detail(_read_body(self.response, _ERROR_BODY_BYTES, deadline, strict=False))
                raise HTTPStatusError(self.response.status, self.response.reason, detail)

    def _cut_off(self) -> None:
        self.fired.set()
        sock = self.conn.sock or self._sock
        if sock is not None:
            try:
                sock.shutdown(socket.SHUT_RDWR)  # wakes a recv() blocked in another thread
            except OSError:
                pass

    @contextmanager
    def errors_mapped(self) -> Iterator[None]:
        """Socket and protocol errors as DeadlineExceeded (the watchdog fired) or ConnectionError;
        the connection is closed on any error."""
        try:
            yield
            if self.fired.is_set():
                raise DeadlineExceeded("the response was cut off at the deadline")
        except (OSError, http.client.HTTPException) as exc:
            self.close()
            if self.fired.is_set() or isinstance(exc, socket.timeout):
                raise DeadlineExceeded(f"no complete answer in time ({type(exc).__name__})") from exc
            if isinstance(exc, ConnectionError):
                raise
            raise ConnectionError(f"{type(exc).__name__}: {exc}") from exc  # DNS failure, bad status line, ...
        except BaseException:
            self.close()
            raise

    def close(self) -> None:
        self.watchdog.cancel()
        if self.response is not None:
            self.response.close()  # a stream left before its end still holds the socket
        self.conn.close()


def request_json(
    method: str,
    url: str,
    payload: Any = None,
    *,
    headers: Mapping[str, str] | None = None,
    deadline: float,
    max_bytes: int = DEFAULT_MAX_BYTES,
) -> Any:
    """Send ``payload`` as JSON to ``url`` and return the decoded JSON answer.

    ``deadline`` is a :func:`time.monotonic` instant by which the whole exchange must be over.
    """
    exchange = _Exchange(method, url, payload, headers, deadline, "application/json")
    try:
        with exchange.errors_mapped():
            data = _read_body(exchange.response, max_bytes, deadline, strict=True)
    finally:
        exchange.close()
    return _decode(data, exchange.response)


def _decode(data: bytes, response: http.client.HTTPResponse) -> Any:
    try:
        return json.loads(data)
    except ValueError:
        kind = response.getheader("Content-Type") or "no content type"
        raise ResponseFormatError(f"the answer is not JSON ({kind}): {snippet_of(data)!r}") from None


def stream_sse(
    url: str,
    payload: Any,
    *,
    headers: Mapping[str, str] | None = None,
    deadline: float,
    max_bytes: int = DEFAULT_MAX_BYTES,
) -> Iterator[Any]:
    """POST ``payload`` and yield the JSON of each server-sent event (``data: {...}`` lines) as it arrives.

    The whole stream, however slowly the caller consumes it, ends at ``deadline`` and may total at
    most ``max_bytes``, exactly like :func:`request_json`. The stream ends at ``data: [DONE]`` or
    when the server closes it. A server that ignores ``stream: true`` and answers with one JSON body
    yields that body once. Errors surface at the first ``next()``; closing the generator early
    closes the connection.
    """
    exchange = _Exchange("POST", url, payload, headers, deadline, "text/event-stream")
    try:
        if "text/event-stream" not in (exchange.response.getheader("Content-Type") or ""):
            with exchange.errors_mapped():
                data = _read_body(exchange.response, max_bytes, deadline, strict=True)
            yield _decode(data, exchange.response)
            return
        for event in _sse_events(exchange, max_bytes):
            if event.strip() == "[DONE]":
                return
            try:
                yield json.loads(event)
            except ValueError:
                raise ResponseFormatError(f"a streamed event is not JSON: {snippet_of(event)!r}") from None
    finally:
        exchange.close()


def _sse_events(exchange: _Exchange, max_bytes: int) -> Iterator[str]:
    """The ``data`` of each event: its ``data:`` lines joined, dispatched at a blank line or the end."""
    buffer, data_lines, size = b"", [], 0
    while True:
        with exchange.errors_mapped():
            if time.monotonic() >= exchange.deadline:
                raise DeadlineExceeded("the stream was still arriving at the deadline")
            piece = exchange.response.read1(65536)
        size += len(piece)
        if size > max_bytes:
            raise ResponseFormatError(f"the streamed response exceeded the {max_bytes}-byte limit")
        buffer += piece
        *lines, buffer = buffer.split(b"\n")
        if not piece:  # the server closed the stream: the last line needs no newline
            lines, buffer = lines + [buffer], b""
        for raw in lines:
            line = raw.rstrip(b"\r").decode("utf-8", "replace")
            if not line:
                if data_lines:
                    yield "\n".join(data_lines)
                data_lines = []
            elif line.startswith("data:"):
                data_lines.append(line[5:].removeprefix(" "))
            # other fields (event:, id:, retry:) and comments (":") carry nothing we use
        if not piece:
            if data_lines:
                yield "\n".join(data_lines)
            return
