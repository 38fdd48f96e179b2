"""Deprecated: moved to ``llama_index_graphrag_suite.methods.a2rag``; this module re-exports its names for one release."""

from .._compat import warn_moved

warn_moved(__name__, "llama_index_graphrag_suite.methods.a2rag")

from ..llm.verdicts import yes_no as parse_yes_no  # noqa: E402,F401
from ..methods.a2rag import *  # noqa: E402,F403
from ..methods.a2rag import __all__ as _names  # noqa: E402,F401

__all__ = [*_names, "parse_yes_no"]
