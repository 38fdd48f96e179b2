"""The shared graph index and its storage."""

from .graph_index import GraphRAGIndex
from .protocol import GraphIndexReader
from .storage import CorruptIndexError, IndexConflictError, IndexFormatError, IndexLockedError, IndexNotFoundError

__all__ = ["CorruptIndexError", "GraphIndexReader", "GraphRAGIndex", "IndexConflictError", "IndexFormatError", "IndexLockedError", "IndexNotFoundError"]
