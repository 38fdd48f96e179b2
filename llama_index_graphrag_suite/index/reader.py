"""The read side of the index (:class:`~.protocol.GraphIndexReader`), shared by the index and its read-only views.

:class:`IndexReading` implements every member of the protocol over ``self.state``: an
:class:`~.state.IndexState` for the index itself, an overlay of one for an :class:`IndexView`. The table fields
are read-only properties (``index.chunks``, ``index.snapshot``, ...): assigning one raises AttributeError; the
index's writers change ``index.state`` instead (``build.py``, ``update.py``, ``persistence.py``, ``journal.py``).

:meth:`GraphRAGIndex.view <.graph_index.GraphRAGIndex.view>` gives an :class:`IndexView`: the same tables, lock
and query cache, optionally another graph snapshot (and entity table), and an artefact memo of its own, so a
method can run on a changed graph (A2RAG's robustness to extraction loss, ``studies/perf/a2rag_bench.py``) without
touching the index. Nothing can be assigned on a view.
"""

from __future__ import annotations

from contextlib import AbstractContextManager
from operator import attrgetter
from pathlib import Path
from typing import Any, Callable, Mapping

import numpy as np
import pyarrow as pa

from ..extractors.entity_stats import EntityStatistics
from ..graph.snapshot import GraphSnapshot
from .artefacts import ArtefactMemo
from .row_columns import RowColumns
from .state import READ_FIELDS, IndexState
from .vectors import normalize_rows

__all__ = ["IndexReading", "IndexView"]

QUERY_CACHE_SIZE = 256  # query vectors embed_query remembers


class IndexReading:
    """:class:`~.protocol.GraphIndexReader` over ``self.state`` (see the module docstring)."""

    state: Any  # an IndexState, or a view's read-only overlay of one
    # entity_statistics(): the index's (build.py; computed on first use after a load), which a view delegates to.

    def _keep_artefact(self, name: str, value: Any) -> None:
        """Where a just-built, saveable artefact goes: nowhere here (the index adds it to its saved version)."""

    def reading(self) -> AbstractContextManager:
        """The reader side of the index's lock: ``with index.reading(): ...`` reads a state no insert or
        delete changes meanwhile. Retrievers take it around every query; it is re-entrant and shared."""
        return self.state.lock.reading()

    def embed_query(self, query: str) -> np.ndarray:
        """The query's unit vector with the index's embed model.

        The last 256 queries are remembered: an agent that asks again, or several methods run on one
        question, pay for the embedding once. :meth:`clear_query_cache` forgets them (the bench does,
        per method, so every method's latency includes its embedding).
        """
        state = self.state
        cache, lock = state.query_cache, state.query_cache_lock
        with lock:
            vec = cache.pop(query, None)
        if vec is None:
            vec = normalize_rows(np.asarray(state.embed_model.get_query_embedding(query), np.float32))[0]
        with lock:  # several threads may query one index at once
            cache.pop(query, None)
            if len(cache) >= QUERY_CACHE_SIZE:
                cache.pop(next(iter(cache)))
            cache[query] = vec  # most recent last
        return vec

    def clear_query_cache(self) -> None:
        """Forget the query vectors :meth:`embed_query` remembers."""
        with self.state.query_cache_lock:
            self.state.query_cache.clear()

    def search_facts(self, query_vec: np.ndarray, k: int) -> list[tuple[str, float]]:
        """The ``k`` facts whose text is most similar to the query: ``[(fact id, cosine)]``, best first.

        Facts that share a text share its score; they come in table order, so results repeat.
        """
        state = self.state
        if k <= 0 or not state.facts:
            return []
        by_text, vectors = state.facts_by_text, state.fact_vectors
        out: list[tuple[str, float]] = []
        rows, sims = vectors.search(query_vec, min(k, len(vectors)))
        for row, sim in zip(rows.tolist(), sims.tolist()):
            for fid in by_text.get(vectors.ids[row], []):
                out.append((fid, float(sim)))
                if len(out) == k:
                    return out
        return out

    @property
    def chunk_position(self) -> dict[str, int]:
        """Chunk id -> its row in :attr:`chunk_order` (memoised per snapshot)."""
        order = self.state.chunk_order
        return self.cached("chunk_position", lambda: {c: i for i, c in enumerate(order)})

    def chunk_dense_scores(self, query_vec: np.ndarray, exact: np.ndarray | None = None) -> np.ndarray:
        """Cosine of the query with every chunk, in :attr:`chunk_order`. A large chunk table answers through its
        lists (``VectorTable.scores``); ``exact``: chunk positions whose cosine must be exact anyway (the BM25
        leaders a hybrid score fuses it with)."""
        rows = self._chunk_vector_rows()
        by_row = self.state.chunk_vectors.scores(query_vec, None if exact is None else rows[exact])
        return by_row[rows]

    def chunk_dense_at(self, query_vec: np.ndarray, positions: np.ndarray) -> np.ndarray:
        """The exact cosines of the query with the chunks at ``positions`` of :attr:`chunk_order` (on a listed
        chunk table :meth:`chunk_dense_scores` estimates chunks far from the query)."""
        return self.state.chunk_vectors.scores_at(query_vec, self._chunk_vector_rows()[positions])

    def _chunk_vector_rows(self) -> np.ndarray:
        order, vectors, chunks = self.state.chunk_order, self.state.chunk_vectors, self.state.chunks

        def build() -> np.ndarray:  # one Arrow join (a loaded table's ids are an Arrow array already)
            loaded = isinstance(chunks, RowColumns) and chunks.key_list() == order
            ids = chunks.key_array() if loaded else pa.array(order, pa.string())
            rows = vectors.rows_in(ids)
            if (rows < 0).any():
                raise KeyError(order[int(np.flatnonzero(rows < 0)[0])])
            return rows

        return self.cached("chunk_vector_rows", build)

    def cached(self, name: str, build: Callable[[], Any]) -> Any:
        """Memo for structures retrievers derive from the snapshot (transition matrices, cost layouts): built once
        per snapshot, forgotten when the snapshot is replaced (every insert and delete), so never stale."""
        state = self.state
        return state.artefacts.cached(state.snapshot, name, build)

    def artefact(self, name: str, build: Callable[[], Any], load: Callable[[Path], Any] | None = None) -> Any:
        """A method's derived artefact (ArchRAG's community hierarchy, A2RAG's document summaries): like
        :meth:`cached`, and one with ``save(folder)`` is written by ``persist`` and read back after ``load``
        instead of being rebuilt (see :meth:`~.artefacts.ArtefactMemo.artefact`)."""
        state = self.state
        return state.artefacts.artefact(state.snapshot, name, build, load, self._keep_artefact)

    def as_networkx(self, around: str | None = None, hops: int = 2, limit: int = 500):
        """The entities, chunks and edges as a ``networkx.MultiDiGraph`` (or those within ``hops`` of ``around``)."""
        from ..export import as_networkx

        return as_networkx(self, around=around, hops=hops, limit=limit)


for _name in READ_FIELDS:  # index.chunks, index.snapshot, ...: the state's fields, read-only
    setattr(IndexReading, _name, property(attrgetter(f"state.{_name}"),
                                          doc=f"``state.{_name}`` (read-only; see :class:`~.state.IndexState`)."))


class _Overlay:
    """A read-only stand-in for an :class:`IndexState`: its own values for some fields, the state's for the rest."""

    def __init__(self, base: IndexState, own: dict[str, Any]) -> None:
        object.__setattr__(self, "_base", base)
        self.__dict__.update(own)

    def __getattr__(self, name: str) -> Any:  # only for fields without a value of our own
        if name == "_base":  # not set yet (a copy being made): no recursion
            raise AttributeError(name)
        return getattr(self._base, name)

    def __setattr__(self, name: str, *value: Any) -> None:
        raise AttributeError(f"an index view is read-only: cannot set {name!r}")

    __delattr__ = __setattr__


class IndexView(IndexReading):
    """A read-only :class:`~.protocol.GraphIndexReader` over an index's tables (see the module docstring).

    Made by :meth:`GraphRAGIndex.view <.graph_index.GraphRAGIndex.view>`. It reads the index's current
    tables, lock and query cache; with ``snapshot`` (and ``entities``) it reads those instead of the index's. Its
    artefact memo is its own: what methods build on it never reaches the index, and nothing is saved to disk.
    """

    def __init__(self, index: Any, snapshot: GraphSnapshot | None = None,
                 entities: Mapping[str, Any] | None = None) -> None:
        base: IndexState = index.state
        own: dict[str, Any] = {}
        if snapshot is not None:
            own["snapshot"] = snapshot
        if entities is not None:
            unknown = next((k for k in entities if k not in base.entities), None)
            if unknown is not None:
                raise KeyError(f"a view's entities must be entities of the index; {unknown!r} is not")
            own["entities"] = dict(entities)
            own["entity_vector_rows"] = np.fromiter((base.entity_vectors.row(k) for k in own["entities"]),
                                                    np.int64, len(own["entities"]))
        # Saved artefacts belong to the index's graph and entities: a view of another graph builds its own.
        own["artefacts"] = ArtefactMemo(base.artefacts.saved if snapshot is None and entities is None else None)
        object.__setattr__(self, "state", _Overlay(base, own))
        object.__setattr__(self, "_index", index)

    __setattr__ = __delattr__ = _Overlay.__setattr__  # nothing can be set or deleted on a view

    def entity_statistics(self) -> EntityStatistics:
        return self._index.entity_statistics()
