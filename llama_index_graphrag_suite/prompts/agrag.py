"""Deprecated: moved to ``llama_index_graphrag_suite.methods.agrag.prompts``; this module re-exports its names for one release."""

from .._compat import warn_moved

warn_moved(__name__, "llama_index_graphrag_suite.methods.agrag.prompts")

from ..methods.agrag.prompts import AGRAG_QA_PROMPT, TRIPLE_FILTER_PROMPT  # noqa: E402,F401
