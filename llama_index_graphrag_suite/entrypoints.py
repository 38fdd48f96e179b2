"""Entry points for an app that already has an index: one call per method, whatever the index is.

``as_retriever(index, method="agrag", **params)`` and ``as_query_engine(index, method=..., llm=...)``
accept either our :class:`GraphRAGIndex` or a plain LlamaIndex ``PropertyGraphIndex`` built with this
project's extractors (also one reloaded with ``load_index_from_storage``). ``GraphRAGIndex`` has the
same two methods, so ``index.as_retriever(method="pathrag")`` reads like LlamaIndex's own API.

A ``PropertyGraphIndex`` is turned into a ``GraphRAGIndex`` once (that embeds chunks, entities and
facts); the result is remembered for as long as the ``PropertyGraphIndex`` lives and its store has not
changed size, so asking for a second method costs nothing.
"""

from __future__ import annotations

import threading
import weakref
from typing import Any

__all__ = ["as_retriever", "as_query_engine", "build_query_engine", "graph_index_of", "resolve_llm"]

DEFAULT_METHOD = "agrag"

_derived: "weakref.WeakKeyDictionary[Any, tuple[tuple[int, int] | None, Any]]" = weakref.WeakKeyDictionary()
_derived_lock = threading.Lock()


def _store_fingerprint(store) -> tuple[int, int] | None:
    """Sizes of an in-memory store, to notice inserts; ``None`` when the store cannot tell cheaply."""
    graph = getattr(store, "graph", None)
    if graph is None or not hasattr(graph, "nodes") or not hasattr(graph, "triplets"):
        return None
    return len(graph.nodes), len(graph.triplets)


def graph_index_of(index, embed_model: Any = None):
    """Our :class:`GraphRAGIndex` for ``index`` (returned as is when it already is one)."""
    from llama_index.core import PropertyGraphIndex

    from .index import GraphRAGIndex

    if isinstance(index, GraphRAGIndex):
        return index
    if not isinstance(index, PropertyGraphIndex):
        raise TypeError(f"expected a GraphRAGIndex or a PropertyGraphIndex, got {type(index).__name__}")
    fingerprint = _store_fingerprint(index.property_graph_store)
    with _derived_lock:
        hit = _derived.get(index)
        if hit is not None and fingerprint is not None and hit[0] == fingerprint and embed_model is None:
            return hit[1]
        derived = GraphRAGIndex.from_property_graph_index(index, embed_model=embed_model)
        _derived[index] = (fingerprint, derived)
        return derived


def as_retriever(index, method: str = DEFAULT_METHOD, **params: Any):
    """The named method's LlamaIndex ``BaseRetriever`` over ``index`` (see ``graphrag-suite methods``)."""
    from .retrievers.registry import get_retriever

    return get_retriever(graph_index_of(index), method, **params)


def resolve_llm(llm: Any = None):
    """``llm`` or LlamaIndex's ``Settings.llm``, with one clear error when there is neither."""
    if llm is not None:
        return llm
    from llama_index.core import Settings

    try:
        return Settings.llm
    except Exception as exc:  # Settings.llm defaults to OpenAI, which is not installed here
        raise ValueError(
            "a query engine needs an LLM: pass llm=... (e.g. llama_index_graphrag_suite.llm.build_llm("
            "'http://localhost:8000/v1') for a vLLM or OpenAI-compatible server) or set Settings.llm"
        ) from exc


def build_query_engine(retriever, llm: Any, streaming: bool = False, text_qa_template: Any = None,
                       evidence: str = "first", **engine_kwargs: Any):
    """``RetrieverQueryEngine.from_args`` with the evidence node placed and callbacks that really count.

    ``evidence="first"`` puts the method's evidence node before the passages (the reasoning before the
    text), ``"last"`` after them (PathRAG's prompt ends with its most reliable path).

    ``from_args`` builds its response synthesizer with ``Settings.callback_manager`` and then overwrites
    the LLM's callback manager, so a ``callback_manager=`` passed here would never see the LLM's tokens.
    When one is given, the synthesizer is built here with it (a ``TokenCountingHandler`` then counts).
    """
    from llama_index.core import get_response_synthesizer
    from llama_index.core.query_engine import RetrieverQueryEngine

    from .retrievers.base import EvidenceFirst, EvidenceLast

    if evidence not in ("first", "last"):
        raise ValueError("evidence must be 'first' or 'last'")
    placement = EvidenceFirst() if evidence == "first" else EvidenceLast()
    engine_kwargs["node_postprocessors"] = [*engine_kwargs.get("node_postprocessors", []), placement]
    callback_manager = engine_kwargs.get("callback_manager")
    if callback_manager is not None and "response_synthesizer" not in engine_kwargs:
        synth_kwargs = {k: engine_kwargs.pop(k) for k in ("response_mode", "refine_template", "use_async", "verbose")
                        if k in engine_kwargs}
        engine_kwargs["response_synthesizer"] = get_response_synthesizer(
            llm=llm, callback_manager=callback_manager, streaming=streaming, text_qa_template=text_qa_template,
            **synth_kwargs)
        retriever.callback_manager = callback_manager  # retrieval events reach the same handlers
    elif text_qa_template is not None:
        engine_kwargs["text_qa_template"] = text_qa_template
    return RetrieverQueryEngine.from_args(retriever, llm=llm, streaming=streaming, **engine_kwargs)


def as_query_engine(index, method: str = DEFAULT_METHOD, llm: Any = None, streaming: bool = False,
                    retriever_params: dict[str, Any] | None = None, **engine_kwargs: Any):
    """A ``RetrieverQueryEngine`` over the named method, with the method's own answer prompt when it has one.

    ``engine_kwargs`` go to ``RetrieverQueryEngine.from_args`` (``response_mode``, ``callback_manager``,
    ``node_postprocessors``, ...). The method's evidence node (subgraph, paths, communities) is put first
    so the LLM reads the structure before the passages.
    """
    llm = resolve_llm(llm)
    retriever = as_retriever(index, method, **(retriever_params or {}))
    if hasattr(retriever, "as_query_engine"):  # the method ships its paper's prompt
        return retriever.as_query_engine(llm=llm, streaming=streaming, **engine_kwargs)
    return build_query_engine(retriever, llm, streaming=streaming, **engine_kwargs)
