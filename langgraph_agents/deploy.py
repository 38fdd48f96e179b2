"""Graph factories for ``langgraph dev`` / LangGraph Platform (``langgraph.json`` at the repository root).

Importing this module loads nothing: the server calls a factory with the run's config, and the index
and LLM are loaded at the first call (then kept for the process) from the environment:

* ``GRAPHRAG_INDEX_DIR`` - a folder written by ``GraphRAGIndex.persist()`` / ``graphrag-suite index SRC --out DIR``;
* ``GRAPHRAG_LLM_URL`` (and ``GRAPHRAG_LLM_API_KEY``, ``GRAPHRAG_LLM_MODEL``) - the vLLM or OpenAI-compatible
  server, as for the CLI. The server is first contacted by the first LLM call of a run, not when a graph is
  built, so ``langgraph dev`` starts (and draws the graphs) while the LLM server is still down.

Per-run settings come from ``config["configurable"]``: ``top_k`` (5), ``max_iterations`` (2),
``time_budget`` (seconds, default "auto": see ``build_a2rag_graph``) for the A2RAG loop; ``top_k``,
``token_budget`` (4000) and ``llm_summaries`` (False: extractive community summaries; True: LLM-written
ones, made once and saved with the index when it is persisted) for the ArchRAG filter. The platform supplies the checkpointer.
"""

from __future__ import annotations

import functools
import os
from typing import Any

from langchain_core.runnables import RunnableConfig
from langgraph.pregel import Pregel

# absolute imports: the server loads this file by its path, not as part of the package
from langgraph_agents.a2rag_loop import build_a2rag_graph
from langgraph_agents.archrag_filter import build_archrag_filter_graph

__all__ = ["load_index", "llm_from_env", "make_a2rag_graph", "make_archrag_filter_graph"]


@functools.lru_cache(maxsize=4)
def load_index(path: str | None = None) -> Any:
    """The index in ``path`` (default: ``$GRAPHRAG_INDEX_DIR``), loaded once per process."""
    path = path or os.environ.get("GRAPHRAG_INDEX_DIR")
    if not path:
        raise RuntimeError("set GRAPHRAG_INDEX_DIR to the folder of a persisted index (graphrag-suite index SRC "
                           "--out DIR) before serving the graphs")
    from llama_index_graphrag_suite import GraphRAGIndex

    return GraphRAGIndex.load(path)


def llm_from_env() -> Any:
    """The LLM named by ``$GRAPHRAG_LLM_URL``: a stand-in that builds it (``build_llm``) on its first call.

    ``build_llm`` asks an OpenAI-compatible server for its model name unless ``$GRAPHRAG_LLM_MODEL`` gives it,
    so building it here would need a live server just to build a graph. A missing URL is still an error now.
    """
    url = os.environ.get("GRAPHRAG_LLM_URL")
    if not url:
        raise RuntimeError("set GRAPHRAG_LLM_URL to a vLLM or OpenAI-compatible server (e.g. http://localhost:8000/v1); "
                           "the graphs need an LLM to answer")
    return _first_use_llm()


_BUILT: dict[str, Any] = {}  # "llm": the server's LLM once a call has needed it


def _server_llm() -> Any:
    """The real LLM, built once per process at the first call that needs it."""
    if "llm" not in _BUILT:
        from llama_index_graphrag_suite.llm import build_llm

        _BUILT["llm"] = build_llm(os.environ["GRAPHRAG_LLM_URL"], model=os.environ.get("GRAPHRAG_LLM_MODEL") or None,
                                  api_key=os.environ.get("GRAPHRAG_LLM_API_KEY"))
    return _BUILT["llm"]


@functools.lru_cache(maxsize=1)
def _first_use_llm() -> Any:
    from llama_index.core.base.llms.types import CompletionResponse, LLMMetadata
    from llama_index.core.llms.callbacks import llm_completion_callback
    from llama_index.core.llms.custom import CustomLLM

    class FirstUseLLM(CustomLLM):
        """A LlamaIndex LLM that builds the server's LLM on its first call and hands every call to it."""

        @classmethod
        def class_name(cls) -> str:
            return "FirstUseLLM"

        @property
        def metadata(self) -> LLMMetadata:
            # LlamaIndex's defaults until the first call: reading the real ones would contact the server
            return _BUILT["llm"].metadata if "llm" in _BUILT else LLMMetadata()

        @llm_completion_callback()
        def complete(self, prompt: str, formatted: bool = False, **kwargs: Any) -> CompletionResponse:
            return _server_llm().complete(prompt, formatted=formatted, **kwargs)

        @llm_completion_callback()
        def stream_complete(self, prompt: str, formatted: bool = False, **kwargs: Any):
            yield from _server_llm().stream_complete(prompt, formatted=formatted, **kwargs)

    return FirstUseLLM()


def _settings(config: RunnableConfig | None) -> dict:
    return dict((config or {}).get("configurable") or {})


def make_a2rag_graph(config: RunnableConfig | None = None) -> Pregel:
    """The A2RAG control loop over ``$GRAPHRAG_INDEX_DIR`` with ``$GRAPHRAG_LLM_URL``."""
    from llama_index_graphrag_suite.registry import as_retriever

    settings, llm = _settings(config), llm_from_env()
    # the registry's a2rag: A2RAG inside the hybrid guard, as graphrag-suite and the server run it
    retriever = as_retriever(load_index(), "a2rag", top_k=int(settings.get("top_k", 5)), llm=llm)
    return build_a2rag_graph(retriever, llm, max_iterations=int(settings.get("max_iterations", 2)),
                             time_budget=settings.get("time_budget", "auto"))


def make_archrag_filter_graph(config: RunnableConfig | None = None) -> Pregel:
    """ArchRAG's adaptive filtering over ``$GRAPHRAG_INDEX_DIR`` with ``$GRAPHRAG_LLM_URL``."""
    from llama_index_graphrag_suite.methods.archrag import ArchRAGRetriever

    settings, llm = _settings(config), llm_from_env()
    retriever = ArchRAGRetriever(load_index(), top_k=int(settings.get("top_k", 5)),
                                 llm=llm if settings.get("llm_summaries") else None)
    return build_archrag_filter_graph(retriever, llm, token_budget=int(settings.get("token_budget", 4000)))
