"""Deprecated: moved to ``llama_index_graphrag_suite.methods.pathrag``; this module re-exports its names for one release."""

from .._compat import warn_moved

warn_moved(__name__, "llama_index_graphrag_suite.methods.pathrag")

from ..methods.pathrag import *  # noqa: E402,F403
from ..methods.pathrag import __all__  # noqa: E402,F401
