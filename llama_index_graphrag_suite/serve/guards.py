"""What protects the server: a request body size limit, the bearer API key, the loopback rule, the Host
allow-list, and the cleaning of text that comes in.

``graphrag-suite serve`` binds to 127.0.0.1. Binding anywhere else needs ``--allow-remote`` and an API
key (``--api-key`` or ``GRAPHRAG_SUITE_API_KEY``); every API route then wants
``Authorization: Bearer KEY``. The page (``/``, ``/static``) and ``/health`` stay open, the page asks
for the key.

Every request must name an allowed host in its ``Host`` header (loopback names, the bound address, and
``--allowed-host`` names): a web page on another site that rebinds its DNS name to 127.0.0.1 sends its
own name there, so it cannot read or change the index through the user's browser.

Questions and documents lose their control and format characters (Unicode Cc/Cf: NUL, zero-width
space, ...) before they are checked for emptiness, and text that is not valid Unicode (a lone
surrogate sent as a JSON escape) is refused.
"""

from __future__ import annotations

import ipaddress
import json
import re
import secrets
import unicodedata
from collections.abc import Iterable
from typing import Any

from ..text import clean_text as normalise_text

__all__ = ["BodyLimit", "HostAllowList", "ValidUnicodeBody", "allowed_hosts", "clean_text", "first_invalid_unicode",
           "has_hidden_characters", "host_allowed", "invalid_unicode", "is_loopback", "key_matches"]

LOOPBACK_NAMES = ("localhost", "127.0.0.1", "::1")
_SURROGATE_ESCAPE = re.compile(rb"\\u[dD][89a-fA-F][0-9a-fA-F]{2}")  # how a JSON body spells a surrogate


def is_loopback(host: str) -> bool:
    """True for ``localhost`` and loopback addresses (127.0.0.0/8, ::1)."""
    if host.strip().lower() in ("localhost", "localhost."):
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def key_matches(header: str | None, api_key: str) -> bool:
    """Whether an ``Authorization`` header carries ``Bearer <api_key>`` (compared in constant time)."""
    scheme, _, token = (header or "").partition(" ")
    return scheme.lower() == "bearer" and secrets.compare_digest(token.strip().encode(), api_key.encode())


class BodyLimit:
    """ASGI middleware: a request body over ``max_bytes`` gets 413, whether it says its length or streams it.
    ``larger`` gives some paths their own limit (file uploads)."""

    def __init__(self, app, max_bytes: int, larger: dict[str, int] | None = None):
        self.app, self.max_bytes, self.larger = app, max_bytes, dict(larger or {})

    async def _reject(self, send, size: str, limit: int) -> None:
        await _send_json(send, 413, {"detail": f"request body too large ({size}); the limit is {limit} bytes"})

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http":
            return await self.app(scope, receive, send)
        limit = self.larger.get(scope.get("path", ""), self.max_bytes)
        length = dict(scope.get("headers") or ()).get(b"content-length")
        if length is not None and length.isdigit() and int(length) > limit:
            return await self._reject(send, f"{int(length)} bytes", limit)
        # Read the body first (bounded), then hand it on: a chunked upload cannot slip past the limit.
        messages, total = [], 0
        while True:
            message = await receive()
            if message["type"] != "http.request":
                messages.append(message)
                break
            total += len(message.get("body", b""))
            if total > limit:
                return await self._reject(send, f"more than {limit} bytes", limit)
            messages.append(message)
            if not message.get("more_body"):
                break

        async def replay():
            return messages.pop(0) if messages else await receive()

        return await self.app(scope, replay, send)


def allowed_hosts(bound: str | None = None, extra: Iterable[str] = ()) -> frozenset[str]:
    """The host names a request may name: loopback names, ``bound`` (unless it is a wildcard address), ``extra``.

    ``"*"`` in ``extra`` allows any host (for a server behind a proxy that checks hosts itself).
    """
    names = set(LOOPBACK_NAMES)
    if bound and bound.strip("[]") not in ("0.0.0.0", "::", ""):
        names.add(bound)
    names.update(extra)
    return frozenset(_host_name(n) for n in names if n.strip())


def _host_name(host: str) -> str:
    """``host`` without its port, brackets and trailing dot, lower case (``[::1]:8000`` -> ``::1``)."""
    host = host.strip().lower()
    if host.startswith("["):  # [v6]:port
        host = host[1:].partition("]")[0]
    elif host.count(":") == 1:  # name:port (a bare v6 address has several colons)
        host = host.partition(":")[0]
    return host.rstrip(".")


def host_allowed(header: str | None, allowed: frozenset[str]) -> bool:
    """Whether a ``Host`` header names an allowed host: a loopback address, or a name in ``allowed``."""
    if "*" in allowed:
        return True
    if not header:
        return False
    name = _host_name(header)
    return name in allowed or is_loopback(name)


class HostAllowList:
    """ASGI middleware: a request whose ``Host`` header is not allowed gets 400 with the names that are."""

    def __init__(self, app, allowed: frozenset[str]):
        self.app, self.allowed = app, allowed

    async def __call__(self, scope, receive, send):
        if scope["type"] not in ("http", "websocket"):
            return await self.app(scope, receive, send)
        header = dict(scope.get("headers") or ()).get(b"host", b"").decode("latin-1")
        if host_allowed(header, self.allowed):
            return await self.app(scope, receive, send)
        shown = header[:100] or "(none)"
        await _send_json(send, 400, {"detail": f"host {shown!r} is not allowed: this server answers to "
                                               f"{', '.join(sorted(self.allowed))} (add names with --allowed-host)"})


def invalid_unicode(text: str) -> str | None:
    """A message when ``text`` cannot be UTF-8 (a lone surrogate such as a JSON ``\\ud800`` escape), else None."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as exc:
        return f"invalid Unicode at character {exc.start}: a lone surrogate U+{ord(text[exc.start]):04X}"
    return None


def clean_text(text: str, *, keep_newlines: bool = True) -> str:
    """``text`` as the index stores text (``text.clean_text``: NFKC, no control or format characters such as
    NUL, zero-width space or BOM), so a question is cleaned exactly as the documents it is matched with.

    Tabs and line breaks are kept (``keep_newlines``, for documents, whose paragraphs matter) or made
    spaces (a question is one line). Text that is not valid Unicode (a lone surrogate) raises
    ``ValueError``: it is refused, not silently repaired.
    """
    if (problem := invalid_unicode(text)) is not None:
        raise ValueError(problem)
    text = normalise_text(text)
    return text if keep_newlines else " ".join(text.split())


def has_hidden_characters(text: str) -> bool:
    """Whether ``text`` holds a control or format character (Unicode Cc/Cf) or a lone surrogate."""
    return any(unicodedata.category(ch) in ("Cc", "Cf", "Cs") for ch in text)


def first_invalid_unicode(value: Any, where: str = "") -> str | None:
    """Where in parsed JSON a string (or key) is not valid Unicode, and why; None when all of it is."""
    if isinstance(value, str):
        problem = invalid_unicode(value)
        return f"{where or 'body'}: {problem}" if problem else None
    if isinstance(value, dict):
        items = value.items()
    elif isinstance(value, list):
        items = enumerate(value)
    else:
        return None
    for key, item in items:
        inner = f"{where}.{key}" if where else str(key)
        if isinstance(key, str) and (problem := invalid_unicode(key)):
            return f"{where or 'body'}: a key: {problem}"
        if (problem := first_invalid_unicode(item, inner)) is not None:
            return problem
    return None


class ValidUnicodeBody:
    """ASGI middleware: a JSON body that spells a lone surrogate (``"\\ud800"``) gets 422 naming the field.

    JSON can escape a surrogate on its own, and Python's parser accepts it, but such a string is not
    text: it fails wherever it is encoded (validation, the tokeniser, the save). Only bodies with a
    surrogate escape are parsed here (a pair, such as an emoji sent by ``json.dumps``, is valid).
    """

    def __init__(self, app):
        self.app = app

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http" or scope.get("method") not in ("POST", "PUT", "PATCH"):
            return await self.app(scope, receive, send)
        messages, body = [], b""
        while True:
            message = await receive()
            messages.append(message)
            if message["type"] != "http.request":
                break
            body += message.get("body", b"")
            if not message.get("more_body"):
                break
        problem = None
        if _SURROGATE_ESCAPE.search(body):
            try:
                problem = first_invalid_unicode(json.loads(body))
            except ValueError:
                pass  # not JSON: the route's own validation says so
        if problem is not None:
            return await _send_json(send, 422, {"detail": problem,
                                                "errors": [{"field": problem.partition(":")[0], "message": problem}]})

        async def replay():
            return messages.pop(0) if messages else await receive()

        return await self.app(scope, replay, send)


async def _send_json(send, status: int, payload: dict[str, Any]) -> None:
    body = json.dumps(payload).encode()
    await send({"type": "http.response.start", "status": status,
                "headers": [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]})
    await send({"type": "http.response.body", "body": body})
