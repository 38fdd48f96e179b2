"""Deprecated: moved to ``llama_index_graphrag_suite.methods.pathrag.prompts / llama_index_graphrag_suite.extractors.prompts``; this module re-exports its names for one release."""

from .._compat import warn_moved

warn_moved(__name__, "llama_index_graphrag_suite.methods.pathrag.prompts / llama_index_graphrag_suite.extractors.prompts")

from ..extractors.prompts import EXTRACTION_PROMPT, GLEANING_PROMPT  # noqa: E402,F401
from ..methods.pathrag.prompts import KEYWORDS_PROMPT, PATH_QA_PROMPT  # noqa: E402,F401
