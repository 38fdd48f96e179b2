"""ArchRAG (Wang et al., 2025): attributed communities in layers, C-HNSW, hierarchical search.

``retriever.py`` (the LlamaIndex retriever), ``config.py`` (settings and variants), ``hierarchy.py`` (the
offline artefact), ``summaries.py`` (community summaries), ``prompts.py``. The pure algorithms live in
``graph/communities.py``, ``graph/knn_augment.py`` and ``graph/chnsw.py``; adaptive filtering is the
LangGraph graph in ``langgraph_agents/archrag_filter.py``.
"""

from .config import ArchRAGConfig, ChunkRanking, CommunityVector, LeidenObjective, RelationScope
from .hierarchy import ArchRAGHierarchy
from .prompts import COMMUNITY_SUMMARY_PROMPT, DEFAULT_PROMPTS, FILTER_ANALYSIS_PROMPT, FINAL_ANSWER_PROMPT
from .retriever import VARIANTS, ArchRAGRetriever

__all__ = [
    "ArchRAGConfig",
    "ArchRAGHierarchy",
    "ArchRAGRetriever",
    "COMMUNITY_SUMMARY_PROMPT",
    "ChunkRanking",
    "CommunityVector",
    "DEFAULT_PROMPTS",
    "FILTER_ANALYSIS_PROMPT",
    "FINAL_ANSWER_PROMPT",
    "LeidenObjective",
    "RelationScope",
    "VARIANTS",
]
