"""A query request, resolved and checked once at the edge (CLI options, HTTP body, MCP call, bench list).

    spec = resolve_method("agrag:no_mcmi", {"fact_top_k": 3})   # MethodSpec: method, variant, settings, config
    request = Request.make("Who founded X?", spec, top_k=5)    # or Request.make(question, "agrag", 5, settings)

:func:`~llama_index_graphrag_suite.registry.resolve_method` parses ``name[:variant]`` once, finds the
method (built-in, registered in Python, or an installed plugin), checks the variant and validates the
settings with the method's config. Everything below the edge (``runner.run_request``,
``registry.get_retriever``, the bench) takes the :class:`MethodSpec` as it is and parses nothing again.
Problems a caller can fix raise :class:`RequestError` with a message saying what to change.

This module imports nothing heavy (no method, no LlamaIndex) so the CLI can check a request before
it pays for loading an index.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from .registry import MethodSpec, RequestError, resolve_method

__all__ = ["MethodSpec", "Request", "RequestError", "resolve_method"]


@dataclass(frozen=True)
class Request:
    """One question for one method: what the runner runs (``runner.run_request(index, request)``)."""

    question: str
    spec: MethodSpec
    top_k: int = 5

    @classmethod
    def make(cls, question: str, method: str | MethodSpec, top_k: int = 5,
             settings: Mapping[str, Any] | None = None, max_top_k: int | None = None) -> "Request":
        """Check the question and top_k and resolve the method; :class:`RequestError` says what is wrong."""
        if not isinstance(question, str) or not question.strip():
            raise RequestError("the question is empty: send a non-empty 'question'")
        if isinstance(top_k, bool) or not isinstance(top_k, int) or top_k < 1:
            raise RequestError(f"top_k must be at least 1, got {top_k}")
        if max_top_k is not None and top_k > max_top_k:
            raise RequestError(f"top_k must be between 1 and {max_top_k}, got {top_k}")
        return cls(question, resolve_method(method, settings), top_k)
