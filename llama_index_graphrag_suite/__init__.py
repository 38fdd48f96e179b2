"""llama-index-graphrag-suite: graph-based RAG methods (AGRAG, PathRAG, ArchRAG, A2RAG) for LlamaIndex and LangGraph.

The names below are imported on first use (PEP 562), so ``import llama_index_graphrag_suite.cli`` and
``graphrag-suite --help`` do not pay for LlamaIndex, numpy and the index (about 2 s) before they need them.
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

from ._version import __version__

# public name -> the module that defines it
_LAZY = {
    "IndexConfig": ".config",
    "CorpusError": ".documents",
    "load_documents": ".documents",
    "CorruptIndexError": ".index",
    "GraphRAGIndex": ".index",
    "IndexConflictError": ".index",
    "IndexFormatError": ".index",
    "IndexNotFoundError": ".index",
    "as_query_engine": ".registry",
    "as_retriever": ".registry",
    "available_methods": ".registry",
    "get_retriever": ".registry",
    "register_method": ".registry",
}

__all__ = sorted([*_LAZY, "__version__"])

if TYPE_CHECKING:  # for type checkers and IDEs: the same names, imported eagerly
    from .config import IndexConfig
    from .documents import CorpusError, load_documents
    from .index import CorruptIndexError, GraphRAGIndex, IndexConflictError, IndexFormatError, IndexNotFoundError
    from .registry import as_query_engine, as_retriever, available_methods, get_retriever, register_method


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(import_module(module, __name__), name)
    globals()[name] = value  # the next lookup is a plain attribute
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_LAZY))
