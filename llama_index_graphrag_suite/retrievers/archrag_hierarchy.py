"""Deprecated: moved to ``llama_index_graphrag_suite.methods.archrag.hierarchy``; this module re-exports its names for one release."""

from .._compat import warn_moved

warn_moved(__name__, "llama_index_graphrag_suite.methods.archrag.hierarchy")

from ..methods.archrag.config import ArchRAGConfig  # noqa: E402,F401
from ..methods.archrag.hierarchy import *  # noqa: E402,F403
