"""PathRAG (Chen et al., 2025): key relational paths between query-related nodes, in ascending reliability.

``retriever.py`` (the LlamaIndex retriever: keywords, nodes, paths, chunks), ``config.py`` (settings and
variants), ``render.py`` (path texts, Eq. 5, and the path prompt, Eq. 6), ``prompts.py`` (keywords and
the answer prompt). The flow-based pruning (Eq. 2-4) is pure numpy in ``graph/flow_paths.py``; the
indexing graph PathRAG assumes comes from ``extractors/pathrag_extractor.py``.
"""

from .config import ChunkRanking, EdgeKind, PathOrder, PathRAGConfig
from .prompts import DEFAULT_PROMPTS, KEYWORDS_PROMPT, PATH_QA_PROMPT
from .render import ORDERS, PATHS_HEADER, RenderedPath, render_paths
from .retriever import VARIANTS, PathRAGRetriever

__all__ = [
    "ChunkRanking",
    "DEFAULT_PROMPTS",
    "EdgeKind",
    "KEYWORDS_PROMPT",
    "ORDERS",
    "PATHS_HEADER",
    "PATH_QA_PROMPT",
    "PathOrder",
    "PathRAGConfig",
    "PathRAGRetriever",
    "RenderedPath",
    "VARIANTS",
    "render_paths",
]
