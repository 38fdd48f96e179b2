"""Deprecated: moved to ``llama_index_graphrag_suite.registry``; this module re-exports its names for one release."""

from .._compat import warn_moved

warn_moved(__name__, "llama_index_graphrag_suite.registry")

from ..registry import UnknownMethodError, available_methods, get_retriever  # noqa: E402,F401
from ..registry import _methods  # noqa: E402,F401


def __getattr__(name: str):
    if name == "METHODS":  # name -> (retriever class, description), as the old registry held it
        return {n: (info.load(), info.description) for n, info in _methods.items()}
    raise AttributeError(name)
