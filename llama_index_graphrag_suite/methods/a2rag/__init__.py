"""A2RAG (agentic, adaptive graph RAG): summarised-KB gate, seeds, Local -> Bridge -> Global escalation.

``retriever.py`` (the LlamaIndex retriever), ``config.py`` (settings, variants, the measurements behind
the defaults), ``seeds.py`` (S_V and S_R; the node names it aligns to, as arrays, in ``names.py``), ``stages.py`` (Eq. 7-12), ``evidence.py`` (provenance
chunks, ranking, LLM-free sufficiency, rendering), ``summaries.py`` (the gate's summaries and the
map-back π), ``prompts.py`` (the retriever's prompts) and ``loop_prompts.py`` (the LangGraph control
loop's prompts; the loop itself is ``langgraph_agents.a2rag_loop``).
"""

from .config import A2RAGConfig, ChunkRanking, GlobalOrder, Stage
from .prompts import DEFAULT_PROMPTS
from .retriever import A2RAGRetriever
from .summaries import DocumentSummaries, build_mapback, build_summaries, extractive_summary

__all__ = [
    "A2RAGConfig",
    "A2RAGRetriever",
    "ChunkRanking",
    "DEFAULT_PROMPTS",
    "DocumentSummaries",
    "GlobalOrder",
    "Stage",
    "build_mapback",
    "build_summaries",
    "extractive_summary",
]
