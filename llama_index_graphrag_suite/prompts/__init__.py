"""Prompt templates used by the extractors (LlamaIndex ``PromptTemplate`` objects)."""

from .relation_extraction import RELATION_EXTRACTION_PROMPT, RELATION_EXTRACTION_TEMPLATE

__all__ = ["RELATION_EXTRACTION_PROMPT", "RELATION_EXTRACTION_TEMPLATE"]
