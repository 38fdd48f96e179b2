"""Deprecated: each method's prompts live in ``llama_index_graphrag_suite.methods.<name>.prompts`` (and the
extractors' in ``llama_index_graphrag_suite.extractors.prompts``); the old names are re-exported for one release."""

from .._compat import warn_moved

warn_moved(__name__, "llama_index_graphrag_suite.methods.<name>.prompts")

from ..extractors.prompts import RELATION_EXTRACTION_PROMPT, RELATION_EXTRACTION_TEMPLATE  # noqa: E402
from ..methods.agrag.prompts import AGRAG_QA_PROMPT, TRIPLE_FILTER_PROMPT  # noqa: E402

__all__ = ["AGRAG_QA_PROMPT", "RELATION_EXTRACTION_PROMPT", "RELATION_EXTRACTION_TEMPLATE", "TRIPLE_FILTER_PROMPT"]
