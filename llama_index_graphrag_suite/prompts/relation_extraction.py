"""Deprecated: moved to ``llama_index_graphrag_suite.extractors.prompts``; this module re-exports its names for one release."""

from .._compat import warn_moved

warn_moved(__name__, "llama_index_graphrag_suite.extractors.prompts")

from ..extractors.prompts import RELATION_EXTRACTION_PROMPT, RELATION_EXTRACTION_TEMPLATE  # noqa: E402,F401
