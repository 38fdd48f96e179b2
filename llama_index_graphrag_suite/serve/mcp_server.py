"""`graphrag-suite mcp INDEX`: a Model Context Protocol server with one ``retrieve`` tool, over stdio.

An MCP client (an IDE assistant, an agent) calls ``retrieve(question, method, top_k)`` and gets the
ranked chunks and the method's evidence text. Works with the ``mcp`` package 1.x (``FastMCP``) and 2.x
(``MCPServer``).
"""

from __future__ import annotations

from typing import Any

from ..registry import method_names
from .guards import clean_text
from .runner import MAX_TOP_K, Request, RequestError, run_request

__all__ = ["build_mcp", "retrieve_tool"]


def retrieve_tool(index: Any, question: str, method: str = "hybrid", top_k: int = 5) -> dict[str, Any]:
    """The tool's answer: chunks (doc id, title, score, text) in rank order and the evidence text."""
    try:  # control and format characters (NUL, zero-width space) go before the emptiness check
        question = clean_text(question, keep_newlines=False)
    except ValueError as exc:  # a lone surrogate: not text
        raise RequestError(str(exc)) from None
    result = run_request(index, Request.make(question, method, top_k, max_top_k=MAX_TOP_K)).result
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
