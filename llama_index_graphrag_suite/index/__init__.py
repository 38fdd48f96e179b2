"""The shared graph index and its storage."""

from .graph_index import GraphRAGIndex
from .protocol import GraphIndexReader
from .storage import CorruptIndexError, IndexFormatError, IndexLockedError, IndexNotFoundError

__all__ = ["CorruptIndexError", "GraphIndexReader", "GraphRAGIndex", "IndexFormatError", "IndexLockedError", "IndexNotFoundError"]
