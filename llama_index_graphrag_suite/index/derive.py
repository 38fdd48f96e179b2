"""Our index for whatever index a user hands a method: ours as is, a ``PropertyGraphIndex`` derived once.

A ``PropertyGraphIndex`` built with this project's extractors (also one reloaded with
``load_index_from_storage``) is turned into a :class:`GraphRAGIndex` once (that embeds chunks,
entities and facts); the result is remembered for as long as the ``PropertyGraphIndex`` lives and its
store has not changed size, so asking for a second method costs nothing.
"""

from __future__ import annotations

import threading
import weakref
from typing import Any

from .graph_index import GraphRAGIndex

__all__ = ["graph_index_of"]

_derived: "weakref.WeakKeyDictionary[Any, tuple[tuple[int, int] | None, GraphRAGIndex]]" = weakref.WeakKeyDictionary()
_derived_lock = threading.Lock()


def _store_fingerprint(store) -> tuple[int, int] | None:
    """Sizes of an in-memory store, to notice inserts; ``None`` when the store cannot tell cheaply."""
    graph = getattr(store, "graph", None)
    if graph is None or not hasattr(graph, "nodes") or not hasattr(graph, "triplets"):
        return None
    return len(graph.nodes), len(graph.triplets)


def graph_index_of(index, embed_model: Any = None) -> GraphRAGIndex:
    """Our :class:`GraphRAGIndex` for ``index`` (returned as is when it already is one)."""
    from llama_index.core import PropertyGraphIndex

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
