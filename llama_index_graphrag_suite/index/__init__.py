"""The shared graph index and its storage."""

from .graph_index import GraphRAGIndex
from .storage import CorruptIndexError, IndexFormatError, IndexNotFoundError

__all__ = ["CorruptIndexError", "GraphRAGIndex", "IndexFormatError", "IndexNotFoundError"]
