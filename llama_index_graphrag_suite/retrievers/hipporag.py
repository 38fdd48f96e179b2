"""Deprecated: moved to ``llama_index_graphrag_suite.methods.baselines``; this module re-exports its names for one release."""

from .._compat import warn_moved

warn_moved(__name__, "llama_index_graphrag_suite.methods.baselines")

from ..methods.baselines import HippoRAGRetriever  # noqa: E402,F401
