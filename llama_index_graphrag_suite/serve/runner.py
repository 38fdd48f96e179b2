"""The server's and MCP tool's view of the one query path (:mod:`llama_index_graphrag_suite.runner`).

``retrieve(index, question, method, top_k, settings)``, ``answer`` and ``stream_answer`` are the same
functions the CLI and the bench use; a request the caller can fix raises :class:`RequestError`.
``MAX_TOP_K`` bounds ``top_k`` and ``MAX_QUESTION_CHARS`` a question's length (before and after normalising) for
requests from outside the process (HTTP, MCP).
"""

from __future__ import annotations

from ..request import MethodSpec, Request, RequestError, clean_question, require_documents, resolve_method
from ..runner import Retrieval, answer, node_json, retrieve, run_request, stream_answer

__all__ = ["MAX_QUESTION_CHARS", "MAX_TOP_K", "MethodSpec", "Request", "RequestError", "Retrieval", "answer",
           "clean_question", "node_json", "require_documents", "resolve_method", "retrieve", "run_request",
           "stream_answer"]

MAX_TOP_K = 100
MAX_QUESTION_CHARS = 4000
