"""What protects the server: a request body size limit, the bearer API key, and the loopback rule.

``graphrag-suite serve`` binds to 127.0.0.1. Binding anywhere else needs ``--allow-remote`` and an API
key (``--api-key`` or ``GRAPHRAG_SUITE_API_KEY``); every API route then wants
``Authorization: Bearer KEY``. The page (``/``, ``/static``) and ``/health`` stay open, the page asks
for the key.
"""

from __future__ import annotations

import ipaddress
import json
import secrets

__all__ = ["BodyLimit", "is_loopback", "key_matches"]


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
    """ASGI middleware: a request body over ``max_bytes`` gets 413, whether it says its length or streams it."""

    def __init__(self, app, max_bytes: int):
        self.app, self.max_bytes = app, max_bytes

    async def _reject(self, send, size: str) -> None:
        body = json.dumps({"detail": f"request body too large ({size}); the limit is {self.max_bytes} bytes"}).encode()
        await send({"type": "http.response.start", "status": 413,
                    "headers": [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]})
        await send({"type": "http.response.body", "body": body})

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http":
            return await self.app(scope, receive, send)
        length = dict(scope.get("headers") or ()).get(b"content-length")
        if length is not None and length.isdigit() and int(length) > self.max_bytes:
            return await self._reject(send, f"{int(length)} bytes")
        # Read the body first (bounded), then hand it on: a chunked upload cannot slip past the limit.
        messages, total = [], 0
        while True:
            message = await receive()
            if message["type"] != "http.request":
                messages.append(message)
                break
            total += len(message.get("body", b""))
            if total > self.max_bytes:
                return await self._reject(send, f"more than {self.max_bytes} bytes")
            messages.append(message)
            if not message.get("more_body"):
                break

        async def replay():
            return messages.pop(0) if messages else await receive()

        return await self.app(scope, replay, send)
