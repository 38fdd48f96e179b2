"""Deprecated: moved to ``llama_index_graphrag_suite.methods.agrag``; this module re-exports its names for one release."""

from .._compat import warn_moved

warn_moved(__name__, "llama_index_graphrag_suite.methods.agrag")

from ..methods.agrag import *  # noqa: E402,F403
from ..methods.agrag import __all__  # noqa: E402,F401
