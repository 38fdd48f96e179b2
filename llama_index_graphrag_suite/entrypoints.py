"""Deprecated: use :mod:`llama_index_graphrag_suite.registry` (``as_retriever``, ``as_query_engine``)."""

from ._compat import warn_moved

warn_moved(__name__, "llama_index_graphrag_suite.registry")

from .index.derive import graph_index_of  # noqa: E402
from .methods.base import build_query_engine, resolve_llm  # noqa: E402
from .registry import DEFAULT_METHOD, as_query_engine, as_retriever  # noqa: E402

__all__ = ["DEFAULT_METHOD", "as_query_engine", "as_retriever", "build_query_engine", "graph_index_of", "resolve_llm"]
