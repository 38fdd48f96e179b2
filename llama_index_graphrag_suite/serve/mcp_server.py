"""`graphrag-suite mcp INDEX`: a Model Context Protocol server with one ``retrieve`` tool, over stdio.

An MCP client (an IDE assistant, an agent) calls ``retrieve(question, method, top_k)`` and gets the
ranked chunks and the method's evidence text. Works with the ``mcp`` package 1.x (``FastMCP``) and 2.x
(``MCPServer``).

:func:`run_stdio` serves it over stdin/stdout. A request line that spells a lone surrogate (``"\\ud800"``) is
answered here with a JSON-RPC "invalid params" error: the MCP transport's parser refuses such a line before any
handler sees it, and left alone the client would wait for a reply that never comes.
"""

from __future__ import annotations

import json
import re
import sys
from typing import Any, AsyncIterator

from ..registry import method_names
from .guards import first_invalid_unicode
from .runner import MAX_QUESTION_CHARS, MAX_TOP_K, Request, RequestError, run_request

__all__ = ["build_mcp", "retrieve_tool", "run_stdio"]

_SURROGATE_ESCAPE = re.compile(r"\\u[dD][89a-fA-F][0-9a-fA-F]{2}")
INVALID_PARAMS = -32602


def retrieve_tool(index: Any, question: str, method: str = "hybrid", top_k: int = 5) -> dict[str, Any]:
    """The tool's answer: chunks (doc id, title, score, text) in rank order and the evidence text."""
    request = Request.make(question, method, top_k, max_top_k=MAX_TOP_K, max_chars=MAX_QUESTION_CHARS, index=index)
    question = request.question  # as cleaned: control and format characters dropped, NFKC
    result = run_request(index, request).result
    chunks = [{"rank": i, "id": n["id"], "doc_id": n["doc_id"], "title": n["metadata"].get("title", ""), "score": n["score"], "text": n["text"]}
              for i, n in enumerate((n for n in result["nodes"] if n["kind"] == "chunk"), 1)]
    evidence = next((n["text"] for n in result["nodes"] if n["kind"] == "evidence"), "")
    return {"method": method, "question": question, "chunks": chunks, "evidence": evidence,
            "retrieve_ms": result["timing_ms"]["retrieve"]}


def _server_classes():
    """(server class, the error a tool raises to send its message to the client)."""
    try:
        from mcp.server.mcpserver import MCPServer  # mcp >= 2
        from mcp.server.mcpserver.exceptions import ToolError

        return MCPServer, ToolError
    except ImportError:
        from mcp.server.fastmcp import FastMCP  # mcp 1.x
        from mcp.server.fastmcp.exceptions import ToolError

        return FastMCP, ToolError


def build_mcp(index: Any, default_method: str = "hybrid", default_top_k: int = 5):
    """The MCP server over ``index`` (call ``.run("stdio")``)."""
    server_class, tool_error = _server_classes()
    server = server_class("graphrag-suite", instructions="Retrieve passages and graph evidence from an indexed corpus.")
    methods = ", ".join(method_names())  # built-in, registered and installed plugin methods

    @server.tool(name="retrieve", description=(
        "Find the passages of the indexed corpus that answer a question, with the graph evidence the method "
        f"used. method: one of {methods} (default {default_method}); top_k: passages to return (1-100)."))
    def retrieve_passages(question: str, method: str = default_method, top_k: int = default_top_k) -> dict[str, Any]:
        try:
            return retrieve_tool(index, question, method, top_k)
        except RequestError as exc:
            raise tool_error(str(exc)) from None  # the client sees the message (other errors are hidden)

    return server


class _RefuseInvalidUnicode:
    """The transport's stdin lines, less those holding a lone surrogate: each of those (a request) gets an
    "invalid params" error naming the field, sent on ``reply`` (set once the transport's write stream exists)."""

    def __init__(self, lines: Any):
        self.lines, self.reply = lines, None

    def __aiter__(self) -> AsyncIterator[str]:
        return self._lines()

    async def _lines(self) -> AsyncIterator[str]:
        async for line in self.lines:
            problem = None
            if _SURROGATE_ESCAPE.search(line):
                try:
                    problem = first_invalid_unicode(payload := json.loads(line))
                except ValueError:
                    problem = None  # not JSON: the transport says so as usual
            if problem is None:
                yield line
            elif isinstance(payload, dict) and "id" in payload and self.reply is not None:
                await self.reply(payload["id"], problem)


def _error_message(request_id: Any, message: str):
    payload = json.dumps({"jsonrpc": "2.0", "id": request_id, "error": {"code": INVALID_PARAMS, "message": message}})
    try:
        import mcp_types  # mcp >= 2

        return mcp_types.jsonrpc_message_adapter.validate_json(payload)
    except ImportError:
        from mcp import types  # mcp 1.x

        return types.JSONRPCMessage.model_validate_json(payload)


async def _serve_stdio(server: Any) -> None:
    import io

    import anyio
    from mcp.server.stdio import stdio_server
    from mcp.shared.message import SessionMessage

    lowlevel = getattr(server, "_lowlevel_server", None) or server._mcp_server  # mcp 2.x / 1.x
    stdin = _RefuseInvalidUnicode(anyio.wrap_file(io.TextIOWrapper(sys.stdin.buffer, encoding="utf-8",
                                                                    errors="replace")))
    async with stdio_server(stdin=stdin) as (read_stream, write_stream):
        async def reply(request_id: Any, problem: str) -> None:
            await write_stream.send(SessionMessage(_error_message(request_id, f"invalid params: {problem}")))

        stdin.reply = reply
        await lowlevel.run(read_stream, write_stream, lowlevel.create_initialization_options())


def run_stdio(server: Any) -> None:
    """Serve ``server`` (from :func:`build_mcp`) over stdio until stdin closes."""
    import anyio

    anyio.run(_serve_stdio, server)
