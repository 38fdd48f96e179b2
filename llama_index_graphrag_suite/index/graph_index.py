"""GraphRAGIndex: one graph index that every method reads.

Build: documents -> token chunks -> kg_extractors (TransformComponents) -> tables (chunks, entities,
facts) -> mirrored into a PropertyGraphStore -> derived artefacts (CSR snapshot, faiss over chunks,
entities and facts, BM25 over chunks). Retrievers read the artefacts, never the store triple by triple.
"""

from __future__ import annotations

import logging
import threading
from collections import Counter
from contextlib import AbstractContextManager
from pathlib import Path
from typing import Any, Sequence

import numpy as np
from llama_index.core import Document
from llama_index.core.base.embeddings.base import BaseEmbedding
from llama_index.core.graph_stores.types import (
    PropertyGraphStore,
)
from llama_index.core.schema import TransformComponent

from ..config import IndexConfig
from ..documents import document_key, warn_if_tiny
from ..embeddings import resolve_embed_model
from ..extractors.entity_stats import EntityStatistics
from ..extractors.statistical import (
    StatisticalEntityExtractor,
)
from ..graph.snapshot import GraphSnapshot
from ..registry import DEFAULT_METHOD, as_query_engine, as_retriever
from . import pending, stores
from .artefacts import ArtefactCache
from .bm25 import BM25Table
from .build import IndexBuild
from .journal import Journal
from .lazy_store import LazySimplePropertyGraphStore
from .locking import ReadWriteLock
from .mutation import IndexMutation
from .persistence import IndexPersistence
from .pipeline import LOCAL, Executor
from .records import ChunkRecord, EntityRecord, FactRecord, text_key
from .storage import CorruptIndexError, IndexConflictError, current_token
from .stores import create_store
from .vectors import normalize_rows

log = logging.getLogger(__name__)


class GraphRAGIndex(IndexBuild, IndexMutation, IndexPersistence, ArtefactCache):
    """The shared graph index (see the module docstring). Build with :meth:`from_documents`.

    What methods read from it is declared by :class:`~.protocol.GraphIndexReader` (tables, snapshot,
    vector tables, BM25, chunk order, query embedding, artefact cache). The class is assembled from
    mixins, one per job: ``build.py`` (insert), ``mutation.py`` (delete, store mirror),
    ``persistence.py`` (persist, load), ``artefacts.py`` (per-snapshot memo, saved artefacts).

    Thread safety: ``insert`` and ``delete`` hold the index's writer lock, retrievers and ``persist``
    its reader lock (:meth:`reading`), so a query running beside an insert sees the index before or
    after it, and ``persist`` writes a consistent state.

    Several processes on one folder (``pending.py``): an index loaded from (or saved to) a folder knows that
    version (:attr:`loaded_version`) and the documents it changed since (:meth:`pending_documents`).
    :meth:`persist` re-applies those on a newer version another process saved meanwhile, or raises
    ``IndexConflictError`` and saves nothing. :meth:`is_stale` (one small file read) says whether the folder
    moved on; :meth:`reload` takes in its newest version in place (``discard_pending=True``: and drops unsaved
    changes); :meth:`disk_version` names the version on disk.
    """

    def __init__(
        self,
        embed_model: BaseEmbedding | str | None = None,
        config: IndexConfig | None = None,
        llm: Any = None,
        property_graph_store: PropertyGraphStore | None = None,
        extra_extractors: Sequence[TransformComponent] = (),
        show_progress: bool = False,
        store: str | None = None,
    ):
        """``store`` names where the graph is mirrored when no ``property_graph_store`` is given: ``"simple"``
        (default), ``"ladybug"`` (an embedded database, saved in each version folder) or a Neo4j URL
        ``neo4j://user:password@host:7687``; see ``index/stores.py``."""
        if store is not None and property_graph_store is not None:
            raise ValueError("pass store= or property_graph_store=, not both")
        self.config = config or IndexConfig()
        if embed_model is None:  # LlamaIndex's Settings.embed_model when the user set one (never its OpenAI default)
            from llama_index.core import Settings

            embed_model = Settings._embed_model
        self.embed_model = resolve_embed_model(embed_model, self.config.embed_batch_size)
        self.llm = llm
        self.property_graph_store = property_graph_store if property_graph_store is not None else create_store(store)
        if isinstance(self.property_graph_store, LazySimplePropertyGraphStore):
            self.property_graph_store.bind(self)  # filled from our tables on first use (lazy_store.py)
        self.extra_extractors = list(extra_extractors)
        self.show_progress = show_progress
        self.chunks: dict[str, ChunkRecord] = {}
        self.entities: dict[str, EntityRecord] = {}
        self.facts: dict[str, FactRecord] = {}
        self.synonyms: dict[tuple[str, str], float] = {}
        self.build_info: dict[str, Any] = {"llm_calls": 0, "seconds": 0.0}
        self._stats: EntityStatistics | None = EntityStatistics(self.config.max_ngram)
        self._dim: int | None = None
        self.chunk_vectors = self.entity_vectors = self.fact_vectors = None
        self.snapshot: GraphSnapshot | None = None
        self.bm25: BM25Table | None = None
        self._chunk_order: list[str] = []
        self._memo: dict[str, Any] = {}  # see cached()
        self._saved_artefacts: dict[str, Path] = {}  # see artefact(): name -> folder in the loaded version
        self._query_cache: dict[str, np.ndarray] = {}  # see embed_query()
        self._query_cache_lock = threading.Lock()
        self._rw = ReadWriteLock()  # see reading(); insert and delete write
        self._provenance: list[dict] = []  # what inserts changed in older chunks (see journal.py)
        self._journal = Journal(self)  # row-level changes of the change in progress: undo, provenance
        self._origin: tuple[Path, str] | None = None  # (folder, version token) loaded from or saved to
        self._pending = pending.DocumentOps()  # document operations since then (pending.py)
        self.executor: Executor = LOCAL
        """Where an insert's parallel operations run (``pipeline.py``): this process, or a Ray cluster inside
        ``with distributed.ray_build(index, ...)``."""

    @classmethod
    def from_documents(cls, documents: Sequence[Document], ray_address: str | None = None,
                       **kwargs: Any) -> "GraphRAGIndex":
        """Build an index over ``documents`` (keyword arguments as for the constructor).

        ``ray_address`` (``"local"``, ``"auto"``, ``"ray://host:10001"``) shards chunking, extraction and embedding
        over a Ray cluster (extra ``ray``); the index is the one this process would build (``index/distributed.py``).
        """
        index = cls(**kwargs)
        if ray_address:
            from .distributed import ray_build

            with ray_build(index, ray_address):
                index.insert(documents)
        else:
            index.insert(documents)
        if not warn_if_tiny([index.chunks[c] for c in index.chunk_order], "the indexed corpus") and not index.entities:
            log.warning("no entities were found in %d chunk(s): graph methods will rank like dense/BM25 retrieval "
                        "(a lower entity_threshold, or entities='ner', may find some)", len(index.chunks))
        return index

    def insert(self, documents: Sequence[Document]) -> list[str]:
        """Add documents; returns the new chunk ids (see :meth:`IndexBuild.insert` for what is recomputed).

        Holds the writer lock: queries in other threads wait and see the index before or after the
        insert, never half of it. What the insert changes in older chunks is recorded, so that
        deleting the same documents afterwards restores the index (``journal.py``).
        """
        with self._rw.writing():
            new_chunks = self._insert_documents(documents)
            for doc in documents:
                self._record(document_key(doc)[0], None, doc)
            return new_chunks

    def _insert_documents(self, documents: Sequence[Document]) -> list[str]:
        """:meth:`insert` without recording pending operations (refresh and rebase record their own)."""
        with self._rw.writing():
            return IndexBuild.insert(self, documents)

    # --- the version on disk this index is based on (see pending.py) -------------------------------------

    def _record(self, doc_id: str, before: str | None, after: Document | None) -> None:
        if self._origin is not None:  # a fresh build saved nowhere yet replaces what a folder holds: nothing to replay
            self._pending.record(doc_id, before, after)

    @property
    def loaded_version(self) -> str | None:
        """The version name (``v-000007``) this in-memory index was loaded from or last saved as; None if neither."""
        return self._origin[1].split("#", 1)[0] if self._origin is not None else None

    def disk_version(self) -> str | None:
        """The version name ``CURRENT`` points to now in the folder this index was loaded from or saved to
        (one small file read); None when the index has no folder or the folder no index."""
        if self._origin is None:
            return None
        token = current_token(self._origin[0])
        return token.split("#", 1)[0] if token else None

    def is_stale(self) -> bool:
        """Whether another writer saved a newer version into this index's folder since it was loaded or saved
        (cheap: one small file read; :meth:`reload` catches up)."""
        if self._origin is None:
            return False
        token = current_token(self._origin[0])
        return token is not None and token != self._origin[1]

    def pending_documents(self) -> list[str]:
        """Ids of the documents inserted, deleted or refreshed since the last load or save (what a save re-applies
        on a newer version, see :meth:`persist`)."""
        return self._pending.doc_ids()

    def reload(self, discard_pending: bool = False) -> bool:
        """Catch up with the folder: when :meth:`is_stale` (or ``discard_pending``), load its newest version and
        take over its state in place, under the writer lock (queries see the old or the new index, never half).

        Pending document operations are re-applied on it (IndexConflictError when another writer changed the
        same document), unless ``discard_pending``: then they are dropped and the index is what is on disk
        (how a failed save is rolled back). Returns whether the state was replaced.
        """
        if self._origin is None:
            raise ValueError("this index was neither loaded from nor saved to a folder: there is nothing to reload")
        with self._rw.writing():
            if not discard_pending and not self.is_stale():
                return False
            fresh = self._load_newest(self._origin[0])
            if discard_pending:
                self._pending.clear()
            else:
                pending.apply(fresh, self._pending, str(self._origin[0]))
            self._adopt(fresh)
            return True

    def _load_newest(self, folder: Path) -> "GraphRAGIndex":
        """The folder's current version, loaded with this index's models and extractors (for reload and rebase)."""
        store = self.property_graph_store
        # a server or a user's store: the same one (refilled from the tables); a simple or ladybug store: the version's
        given = store if stores.store_kind(store) in ("neo4j", "external") else None
        try:
            fresh = type(self).load(folder, embed_model=self.embed_model, llm=self.llm, property_graph_store=given,
                                    show_progress=self.show_progress)
        except ValueError as exc:
            if isinstance(exc, CorruptIndexError):
                raise
            raise IndexConflictError(f"cannot take in the newer version in {folder}: {exc}") from exc
        fresh.extra_extractors = self.extra_extractors
        return fresh

    # Everything a load sets: what makes one version's state (reload and rebase take it over from a fresh load).
    _STATE = ("config", "chunks", "entities", "facts", "synonyms", "build_info", "_stats", "_dim",
              "chunk_vectors", "entity_vectors", "fact_vectors", "snapshot", "bm25", "_chunk_order", "facts_by_text",
              "entity_vector_rows", "fact_ids", "fact_text_rows", "_memo", "_saved_artefacts", "_provenance",
              "property_graph_store", "_origin")

    def _adopt(self, fresh: "GraphRAGIndex") -> None:
        for name in self._STATE:
            setattr(self, name, getattr(fresh, name))
        if isinstance(self.property_graph_store, LazySimplePropertyGraphStore):
            self.property_graph_store.rebind(self)

    def reading(self) -> AbstractContextManager:
        """The reader side of the index's lock: ``with index.reading(): ...`` reads a state no insert or
        delete changes meanwhile. Retrievers take it around every query; it is re-entrant and shared."""
        return self._rw.reading()

    def embed_query(self, query: str) -> np.ndarray:
        """The query's unit vector with the index's embed model.

        The last 256 queries are remembered: an agent that asks again, or several methods run on one
        question, pay for the embedding once. :meth:`clear_query_cache` forgets them (the bench does,
        per method, so every method's latency includes its embedding).
        """
        cache = self._query_cache
        with self._query_cache_lock:
            vec = cache.pop(query, None)
        if vec is None:
            vec = normalize_rows(np.asarray(self.embed_model.get_query_embedding(query), np.float32))[0]
        with self._query_cache_lock:  # several threads may query one index at once
            cache.pop(query, None)
            if len(cache) >= 256:
                cache.pop(next(iter(cache)))
            cache[query] = vec  # most recent last
        return vec

    def clear_query_cache(self) -> None:
        """Forget the query vectors :meth:`embed_query` remembers."""
        with self._query_cache_lock:
            self._query_cache.clear()

    def search_facts(self, query_vec: np.ndarray, k: int) -> list[tuple[str, float]]:
        """The ``k`` facts whose text is most similar to the query: ``[(fact id, cosine)]``, best first.

        Facts that share a text share its score; they come in table order, so results repeat.
        """
        if k <= 0 or not self.facts:
            return []
        by_text = self.facts_by_text
        out: list[tuple[str, float]] = []
        rows, sims = self.fact_vectors.search(query_vec, min(k, len(self.fact_vectors)))
        for row, sim in zip(rows.tolist(), sims.tolist()):
            for fid in by_text.get(self.fact_vectors.ids[row], []):
                out.append((fid, float(sim)))
                if len(out) == k:
                    return out
        return out

    def _refresh_derived(self, snapshot: GraphSnapshot | None = None) -> None:
        """Rebuild the snapshot (unless given, as on load), BM25 and lookups from the tables.

        Vector tables are updated incrementally by insert and delete, not here.
        """
        self._saved_artefacts = {}  # built for the old snapshot (load() sets them after this call)
        self._chunk_order = list(self.chunks)
        self.facts_by_text: dict[str, list[str]] = {}
        for f in self.facts.values():
            self.facts_by_text.setdefault(text_key(f.text), []).append(f.id)
        # Row of each fact's text vector, in list(facts) order (the order snapshot.edge_fact uses).
        self.entity_vector_rows = np.fromiter(
            (self.entity_vectors.row(k) for k in self.entities), np.int64, len(self.entities)) if self.entity_vectors else np.zeros(0, np.int64)
        self.fact_ids = list(self.facts)
        self.fact_text_rows = np.fromiter(
            (self.fact_vectors.row(text_key(self.facts[f].text)) for f in self.fact_ids), np.int64, len(self.fact_ids))
        self.snapshot = snapshot if snapshot is not None else self._build_snapshot()
        self.bm25 = BM25Table([self.chunks[c].text for c in self._chunk_order])

    def _build_snapshot(self) -> GraphSnapshot:
        # Endpoint rows go straight into typed arrays (np.fromiter), and kinds, fact rows and weights are
        # whole-array fills: no Python list entry per edge and attribute (five of them per edge before,
        # ~36 bytes each against 4-8 in an array); the same arrays as the per-edge loop (tests/test_scale_memory.py).
        entity_ids = list(self.entities)
        node_ids = entity_ids + self._chunk_order
        row = {n: i for i, n in enumerate(node_ids)}
        facts, chunks, n_ent = list(self.facts.values()), [self.chunks[c] for c in self._chunk_order], len(entity_ids)
        sizes = np.fromiter((len(c.entities) for c in chunks), np.int64, len(chunks))
        contains = (np.repeat(np.arange(n_ent, n_ent + len(chunks)), sizes),
                    np.fromiter((row[k] for c in chunks for k in c.entities), np.int64, int(sizes.sum())))
        pairs = self.synonyms
        return GraphSnapshot.from_edges(
            node_ids, n_ent,
            relations=(np.fromiter((row[f.subject] for f in facts), np.int64, len(facts)),
                       np.fromiter((row[f.object] for f in facts), np.int64, len(facts))),
            contains=contains,
            synonyms=(np.fromiter((row[a] for a, _ in pairs), np.int64, len(pairs)),
                      np.fromiter((row[b] for _, b in pairs), np.int64, len(pairs)),
                      np.fromiter(pairs.values(), np.float32, len(pairs))),
        )

    @property
    def chunk_order(self) -> list[str]:
        """Chunk ids in the row order of ``chunk_vectors``-independent arrays (BM25 scores, snapshot chunk rows)."""
        return self._chunk_order

    @property
    def chunk_position(self) -> dict[str, int]:
        """Chunk id -> its row in :attr:`chunk_order` (memoised per snapshot)."""
        return self.cached("chunk_position", lambda: {c: i for i, c in enumerate(self._chunk_order)})

    def chunk_dense_scores(self, query_vec: np.ndarray) -> np.ndarray:
        """Cosine of the query with every chunk, in :attr:`chunk_order`."""
        by_row = self.chunk_vectors.scores(query_vec)
        rows = self.cached("chunk_vector_rows", lambda: np.fromiter(
            (self.chunk_vectors.row(c) for c in self._chunk_order), np.int64, len(self._chunk_order)))
        return by_row[rows]

    def stats(self) -> dict[str, int]:
        kinds = Counter(f.kind for f in self.facts.values())
        return {
            "documents": len({c.doc_id for c in self.chunks.values()}),
            "chunks": len(self.chunks),
            "entities": len(self.entities),
            "relations": len(self.facts),
            **{f"relations_{k}": v for k, v in sorted(kinds.items())},
            "contains_edges": sum(len(c.entities) for c in self.chunks.values()),
            "synonym_edges": len(self.synonyms),
        }

    def as_retriever(self, method: str = DEFAULT_METHOD, **params: Any):
        """The named method's retriever over this index (``graphrag-suite methods`` lists the names)."""
        return as_retriever(self, method, **params)

    def as_query_engine(self, method: str = DEFAULT_METHOD, llm: Any = None, streaming: bool = False, **kwargs: Any):
        """A query engine over the named method; see :func:`llama_index_graphrag_suite.registry.as_query_engine`."""
        return as_query_engine(self, method, llm=llm if llm is not None else self.llm, streaming=streaming, **kwargs)

    def as_networkx(self, around: str | None = None, hops: int = 2, limit: int = 500):
        """The entities, chunks and edges as a ``networkx.MultiDiGraph`` (or those within ``hops`` of ``around``)."""
        from ..export import as_networkx

        return as_networkx(self, around=around, hops=hops, limit=limit)

    def as_property_graph_index(self, llm: Any = None, **kwargs: Any):
        """A LlamaIndex ``PropertyGraphIndex`` over the same store (for LlamaIndex's own retrievers)."""
        from llama_index.core import PropertyGraphIndex

        pg = PropertyGraphIndex.from_existing(
            self.property_graph_store, llm=llm or self.llm, embed_model=self.embed_model, embed_kg_nodes=False,
            kg_extractors=[StatisticalEntityExtractor()], **kwargs,
        )
        # The simple store is filled from this index's tables on first use and holds it only weakly: the
        # PropertyGraphIndex keeps it alive (``index.as_property_graph_index()`` may be all a caller keeps).
        pg._graphrag_index = self
        return pg
