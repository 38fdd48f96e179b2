"""The LLM a user set on LlamaIndex's ``Settings``, without ever creating LlamaIndex's default.

Reading ``Settings.llm`` when nobody set it resolves ``"default"``: OpenAI, with an API key from the
environment. That would send a user's documents to a hosted service they never chose (or fail with
an ImportError here, where the OpenAI packages are not installed). ``Settings._llm`` holds only what
was set explicitly (``Settings.llm = ...`` already resolved it, e.g. wrapped a LangChain model), so
reading it is the one safe way to honour the user's choice; ``index/graph_index.py`` does the same for
``Settings._embed_model``.
"""

from __future__ import annotations

from typing import Any

__all__ = ["settings_llm"]


def settings_llm() -> Any | None:
    """``Settings.llm`` if the user set one, else None (never LlamaIndex's OpenAI default)."""
    from llama_index.core import Settings

    if getattr(Settings, "_llm", None) is None:
        return None
    return Settings.llm  # set, so no default is created; the getter attaches Settings.callback_manager
