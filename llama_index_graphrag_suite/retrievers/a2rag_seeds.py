"""Deprecated: moved to ``llama_index_graphrag_suite.methods.a2rag.seeds``; this module re-exports its names for one release."""

from .._compat import warn_moved

warn_moved(__name__, "llama_index_graphrag_suite.methods.a2rag.seeds")

from ..methods.a2rag.seeds import *  # noqa: E402,F403
