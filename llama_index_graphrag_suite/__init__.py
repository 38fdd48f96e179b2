"""llama-index-graphrag-suite: graph-based RAG methods (AGRAG, PathRAG, ArchRAG, A2RAG) for LlamaIndex and LangGraph."""

__version__ = "0.1.0"

from .config import IndexConfig  # noqa: E402
from .documents import CorpusError, load_documents  # noqa: E402
from .index import CorruptIndexError, GraphRAGIndex, IndexFormatError, IndexNotFoundError  # noqa: E402

__all__ = [
    "CorpusError",
    "CorruptIndexError",
    "GraphRAGIndex",
    "IndexConfig",
    "IndexFormatError",
    "IndexNotFoundError",
    "__version__",
    "load_documents",
]
