"""Extractors: LlamaIndex TransformComponents for ``PropertyGraphIndex(kg_extractors=[...])``."""

from .entity_stats import EntityStatistics, find_mentions
from .statistical import (
    CONTAINS,
    CO_OCCURS,
    ENTITY_LABEL,
    SYNONYM,
    CooccurrenceRelationExtractor,
    StatisticalEntityExtractor,
    SynonymEdgeExtractor,
)

__all__ = [
    "CONTAINS",
    "CO_OCCURS",
    "ENTITY_LABEL",
    "SYNONYM",
    "CooccurrenceRelationExtractor",
    "EntityStatistics",
    "LLMRelationExtractor",
    "NEREntityExtractor",
    "PathRAGExtractor",
    "StatisticalEntityExtractor",
    "SynonymEdgeExtractor",
    "find_mentions",
]


def __getattr__(name):  # the LLM extractor pulls in the LLM layer only when asked for
    if name == "LLMRelationExtractor":
        from .llm_relations import LLMRelationExtractor

        return LLMRelationExtractor
    if name == "NEREntityExtractor":  # spaCy is imported on first use
        from .ner import NEREntityExtractor

        return NEREntityExtractor
    if name == "PathRAGExtractor":
        from .pathrag_extractor import PathRAGExtractor

        return PathRAGExtractor
    raise AttributeError(name)
