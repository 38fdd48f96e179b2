"""Prompt templates (LlamaIndex ``PromptTemplate`` objects), one place for all of them."""

from .agrag import AGRAG_QA_PROMPT, TRIPLE_FILTER_PROMPT
from .relation_extraction import RELATION_EXTRACTION_PROMPT, RELATION_EXTRACTION_TEMPLATE

__all__ = ["AGRAG_QA_PROMPT", "RELATION_EXTRACTION_PROMPT", "RELATION_EXTRACTION_TEMPLATE", "TRIPLE_FILTER_PROMPT"]
