"""llama-index-graphrag-suite: graph-based RAG methods (AGRAG, PathRAG, ArchRAG, A2RAG) for LlamaIndex and LangGraph."""

from ._version import __version__
from .config import IndexConfig
from .documents import CorpusError, load_documents
from .index import CorruptIndexError, GraphRAGIndex, IndexConflictError, IndexFormatError, IndexNotFoundError
from .registry import as_query_engine, as_retriever, available_methods, get_retriever, register_method

__all__ = [
    "CorpusError",
    "CorruptIndexError",
    "GraphRAGIndex",
    "IndexConfig",
    "IndexConflictError",
    "IndexFormatError",
    "IndexNotFoundError",
    "__version__",
    "as_query_engine",
    "as_retriever",
    "available_methods",
    "get_retriever",
    "load_documents",
    "register_method",
]
