"""Deprecated: moved to ``llama_index_graphrag_suite.methods.pg_subretriever``; this module re-exports its names for one release."""

from .._compat import warn_moved

warn_moved(__name__, "llama_index_graphrag_suite.methods.pg_subretriever")

from ..methods.pg_subretriever import GraphRAGSubRetriever  # noqa: E402,F401
