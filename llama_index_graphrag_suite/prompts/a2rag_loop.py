"""Deprecated: moved to ``llama_index_graphrag_suite.methods.a2rag.loop_prompts``; this module re-exports its names for one release."""

from .._compat import warn_moved

warn_moved(__name__, "llama_index_graphrag_suite.methods.a2rag.loop_prompts")

from ..methods.a2rag.loop_prompts import *  # noqa: E402,F403
