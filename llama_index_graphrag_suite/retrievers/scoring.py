"""Deprecated: moved to ``llama_index_graphrag_suite.methods.scoring``; this module re-exports its names for one release."""

from .._compat import warn_moved

warn_moved(__name__, "llama_index_graphrag_suite.methods.scoring")

from ..methods.scoring import hybrid, minmax, top_k  # noqa: E402,F401
