"""The ``simple`` store as a lazy mirror of the index's tables: filled on first use, saved only when it holds more.

LlamaIndex's ``SimplePropertyGraphStore`` keeps every node and relation as a pydantic object. At 20,000
synthetic passages its JSON was 145.5 of a version folder's 305 MB, and parsing it was most of a load
(13.5-21.1 s against 3.5-5.4 s without it, ``studies/perf/results/lazy_store.md``), while the index's own
methods never read it. So the ``simple``
kind is a :class:`LazySimplePropertyGraphStore`:

* **Filled on first use.** Bound to its index (by a weak reference: no cycle keeps a large index alive),
  it stays unfilled until someone other than the index uses it: any read or write through its methods
  (``get``, ``get_triplets``, ``get_rel_map``, ``get_llama_nodes``, ``upsert_*``, ``delete``, ``persist``,
  ``to_dict``, ...) or the ``graph`` attribute. That first use fills it from the index's current tables with
  the nodes and relations the index would have upserted one insert at a time, under the index's reader
  lock (so never from half an insert). Until then the index's own mirror updates (insert, delete, refresh,
  load) are skipped: the first use reads the tables as they are by then. Afterwards the index keeps it in
  step, as it does every other store.
* **Saved only when it holds more than the tables.** A write through the store's methods by anyone but
  the index's own mirroring (the PathRAG extractor's merged entity descriptions, a user's upserts) sets
  :attr:`~LazySimplePropertyGraphStore.outside_writes`, and ``persist`` writes ``property_graph_store.json``
  as it always did. Otherwise the store is derivable: no file is written, the manifest's ``store_backend``
  says ``"derived": true``, and ``load`` gives an unfilled store again (nothing is parsed). A version
  folder with the JSON (an index saved before this, or one with outside writes) loads it, and the store
  counts as holding outside data, so the next save writes it again.

A change made to ``store.graph`` directly (not through the store's methods) is not noticed: set
``store.outside_writes = True`` after one, or the next save of the index drops it.
"""

from __future__ import annotations

import contextlib
import threading
import weakref
from typing import Any, Iterator, Optional, Sequence

from llama_index.core.graph_stores import SimplePropertyGraphStore
from llama_index.core.graph_stores.types import LabelledNode, LabelledPropertyGraph, PropertyGraphStore, Relation

__all__ = ["LazySimplePropertyGraphStore", "holds_outside_data", "is_derived", "mirroring"]


class LazySimplePropertyGraphStore(SimplePropertyGraphStore):
    """A ``SimplePropertyGraphStore`` filled from its index's tables on first use (see the module docstring).

    Without an index bound (:meth:`bind`) it is an ordinary in-memory store; ``graph`` given (a saved JSON,
    a copy) makes it a filled store holding outside data.
    """

    def __init__(self, graph: Optional[LabelledPropertyGraph] = None) -> None:
        # Not SimplePropertyGraphStore.__init__: all it does is set ``graph``, which here is a property.
        self._graph = graph
        self._source: Optional[weakref.ref] = None  # the index whose tables this mirrors
        self._fill_lock = threading.RLock()
        self._own = threading.local()  # depth of the bound index's own mirror writes in this thread
        self.outside_writes = graph is not None
        """True once anything but the bound index's mirroring wrote to the store (then saving writes it)."""

    def bind(self, index: Any) -> None:
        """Mirror ``index`` (a GraphRAGIndex); a store already bound to an index keeps that one."""
        if self._source is None:
            self._source = weakref.ref(index)

    def rebind(self, index: Any) -> None:
        """Mirror ``index`` from now on: it took over the state (tables and this store) of the index this store was
        bound to (``GraphRAGIndex.reload`` and a save that re-applied its changes on a newer version)."""
        self._source = weakref.ref(index)

    @property
    def materialised(self) -> bool:
        """Whether the graph is in memory (filled from the tables, loaded, or written to)."""
        return self._graph is not None

    def derived_from(self, index: Any) -> bool:
        """Whether the store holds nothing but ``index``'s tables (so saving it is not needed)."""
        return self._source is not None and self._source() is index and not self.outside_writes

    @property
    def graph(self) -> LabelledPropertyGraph:  # type: ignore[override]
        graph = self._graph
        return graph if graph is not None else self._fill()

    @graph.setter
    def graph(self, value: LabelledPropertyGraph) -> None:
        with self._fill_lock:
            self._note_write()
            self._graph = value

    def _fill(self) -> LabelledPropertyGraph:
        index = self._source() if self._source is not None else None
        if self._source is not None and index is None:
            raise ReferenceError("this SimplePropertyGraphStore mirrors a GraphRAGIndex that no longer exists, and "
                                 "was never read while it did: keep a reference to the index while the store is used")
        # The index's reader lock first, then ours: the index's writers take our lock only while holding
        # their writer lock (in mirroring), so the two are always taken in that order.
        with index.reading() if index is not None else contextlib.nullcontext(), self._fill_lock:
            if self._graph is None:
                plain = SimplePropertyGraphStore()
                if index is not None:
                    index._mirror.fill(plain)  # the upserts an eager mirror would have had, from the tables as they are
                self._graph = plain.graph
            return self._graph

    def _note_write(self) -> None:
        if not getattr(self._own, "depth", 0):
            self.outside_writes = True

    @contextlib.contextmanager
    def _mirroring(self, index: Any) -> Iterator[bool]:
        if self._source is None or self._source() is not index:
            yield True  # not our index: its writes are outside writes like any other
            return
        with self._fill_lock:
            live = self._graph is not None
        if not live:
            yield False
            return
        self._own.depth = getattr(self._own, "depth", 0) + 1
        try:
            yield True
        finally:
            self._own.depth -= 1

    def upsert_nodes(self, nodes: Sequence[LabelledNode]) -> None:
        self._note_write()
        super().upsert_nodes(nodes)

    def upsert_relations(self, relations: list[Relation]) -> None:
        self._note_write()
        super().upsert_relations(relations)

    def delete(self, entity_names: Optional[list[str]] = None, relation_names: Optional[list[str]] = None,
               properties: Optional[dict] = None, ids: Optional[list[str]] = None) -> None:
        self._note_write()
        super().delete(entity_names=entity_names, relation_names=relation_names, properties=properties, ids=ids)

    def __reduce__(self):
        # A copy (pickle, copy.deepcopy) is a filled store of its own: locks and the weak reference stay here.
        return type(self), (self.graph,)


@contextlib.contextmanager
def mirroring(store: PropertyGraphStore, index: Any) -> Iterator[bool]:
    """Around ``index``'s own mirror update of ``store``: yields whether the update must be written.

    False for a lazy store of ``index`` not yet used (its first use reads the tables anyway); True otherwise,
    and then the writes inside do not count as outside writes of a lazy store (they are derivable).
    """
    if isinstance(store, LazySimplePropertyGraphStore):
        with store._mirroring(index) as live:
            yield live
    else:
        yield True


def is_derived(store: PropertyGraphStore, index: Any) -> bool:
    """Whether ``store`` holds nothing but ``index``'s tables (a lazy simple store with no outside writes)."""
    return isinstance(store, LazySimplePropertyGraphStore) and store.derived_from(index)


def holds_outside_data(store: PropertyGraphStore) -> bool:
    """Whether ``store`` may hold more than an index's tables (anything but a lazy store with no outside writes)."""
    return not isinstance(store, LazySimplePropertyGraphStore) or store.outside_writes
