"""Everything one :class:`~.graph_index.GraphRAGIndex` holds, declared in one place: :class:`IndexState`.

The index's parts (``build.py`` and ``rows.py``, ``update.py``, ``mirror.py``, ``persistence.py``, ``journal.py``,
``artefacts.py``) read and write ``index.state.<field>``; nothing is set on the index object itself. Methods read the same fields through
the index's read-only properties (:class:`~.reader.IndexReading`, the :class:`~.protocol.GraphIndexReader` side),
or through a read-only :meth:`~.graph_index.GraphRAGIndex.view`.

Fields come in three groups:

* the **tables** (chunks, entities, facts, synonyms), the vector tables and the bookkeeping saved with them:
  what a version folder holds;
* what is **derived** from the tables (:meth:`IndexState.derive`): chunk order, lookups, the CSR snapshot,
  BM25, and the artefacts methods build on that snapshot;
* this in-memory object's **session** (``metadata={"session": True}``): the lock, the journal of the change in
  progress, the document operations not yet saved, the query cache. A reload takes in another version's
  tables and derived fields (:meth:`IndexState.take_version`) and keeps the session.
"""

from __future__ import annotations

import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import pyarrow as pa

from ..config import IndexConfig
from ..extractors.entity_stats import EntityStatistics
from ..extractors.name_words import NameWordCounts
from ..graph.snapshot import GraphSnapshot
from .artefacts import ArtefactMemo
from .bm25 import BM25Table
from .chunk_columns import ChunkColumns
from .entity_columns import EntityColumns
from .fact_columns import FactColumns, FactsByText
from .locking import ReadWriteLock
from .pending import DocumentOps
from .records import ChunkRecord, EntityRecord, FactRecord, text_key
from .row_columns import RowColumns
from .overlay_reads import (distinct_count, overlaid, overlay_contains, overlay_edges, overlay_text_rows, rows_in,
                            value_counts)
from .row_overlay import RowOverlay, table_column
from .synonym_pairs import SynonymPairs
from .vectors import VectorTable

if TYPE_CHECKING:
    from .journal import Journal

__all__ = ["IndexState", "READ_FIELDS"]

_SESSION = {"session": True}


@dataclass(eq=False)
class IndexState:
    """See the module docstring. One per index; changed only under the index's writer lock (``lock``)."""

    # --- how the index was built ------------------------------------------------------------------------------
    config: IndexConfig = field(default_factory=IndexConfig)
    """Chunking, entity and synonym settings (saved in the manifest; ``terms="auto"`` is decided on first insert)."""
    embed_model: Any = field(default=None, metadata=_SESSION)
    """The LlamaIndex embedding model of every vector table (the user's; kept across a reload)."""
    property_graph_store: Any = None
    """The LlamaIndex ``PropertyGraphStore`` the tables are mirrored into (``mirror.py``, ``lazy_store.py``)."""

    # --- the tables ---------------------------------------------------------------------------------------------
    chunks: dict[str, ChunkRecord] | ChunkColumns | RowOverlay = field(default_factory=dict)
    """Chunk id -> record (text, document id and hash, title, entity keys), in insertion order. Read-only columns
    after a load; the changed rows over them after a change (:meth:`writable`)."""
    entities: dict[str, EntityRecord] | EntityColumns | RowOverlay = field(default_factory=dict)
    """Entity key -> record (surface, type, extractor attributes, supporting chunks); snapshot rows follow it.
    Like ``chunks``."""
    facts: dict[str, FactRecord] | FactColumns | RowOverlay = field(default_factory=dict)
    """Fact id -> record (subject, predicate, object, sentence text, kind, supporting chunks). Like ``chunks``."""
    synonyms: SynonymPairs = field(default_factory=SynonymPairs)
    """(entity key, entity key) -> cosine of their names: the synonym edges (a mapping held as columns)."""
    chunk_vectors: VectorTable | None = None
    """One unit vector per chunk (None until the first embedding gives the dimension)."""
    entity_vectors: VectorTable | None = None
    """One unit vector per entity name."""
    fact_vectors: VectorTable | None = None
    """One unit vector per distinct fact text (``records.text_key``)."""
    dim: int | None = None
    """Dimension of the vectors (from the first embedding, or the manifest)."""
    build_info: dict[str, Any] = field(default_factory=lambda: {"llm_calls": 0, "seconds": 0.0})
    """What building cost: LLM calls and usage, seconds per stage (saved in the manifest)."""
    entity_stats: EntityStatistics | None = None
    """Corpus n-gram statistics (AGRAG Eq. 2); None after a load until an insert, delete or query needs them."""
    name_words: NameWordCounts | None = None
    """How the corpus writes each word (the NER graph's one-word name rules); None after a load until an insert
    or a delete needs them."""
    provenance: list[dict] = field(default_factory=list)
    """What inserts changed in older chunks, so a delete of their documents undoes it (``journal.py``)."""

    unsaved: dict[str, dict] = field(default_factory=lambda: {t: {} for t in ("chunks", "entities", "facts", "synonyms")})
    """Keys of each table touched since ``origin`` was saved or loaded (``journal.touch``), each with whether it was
    absent at some touch (added, or removed and added again): the rows a save writes beside the version it
    extends, instead of the whole table (``tables.py``)."""

    # --- derived from the tables (derive()) ---------------------------------------------------------------------
    chunk_order: list[str] = field(default_factory=list)
    """Chunk ids in the row order of BM25 scores and the snapshot's chunk rows."""
    facts_by_text: Mapping[str, list[str]] = field(default_factory=dict)
    """Fact text key -> the ids of the facts with that text (they share one vector)."""
    fact_ids: Sequence[str] = field(default_factory=list)
    """``list(facts)``: what ``snapshot.edge_fact`` indexes."""
    entity_vector_rows: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))
    """Row of each entity (in ``entities`` order) in ``entity_vectors``."""
    fact_text_rows: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))
    """Row of each fact's text (in ``fact_ids`` order) in ``fact_vectors``."""
    snapshot: GraphSnapshot | None = None
    """The CSR graph over entities then chunks (relation, contains and synonym edges); None while empty."""
    bm25: BM25Table | None = None
    """BM25 over chunk texts in ``chunk_order``."""
    artefacts: ArtefactMemo = field(default_factory=ArtefactMemo)
    """Structures methods derive from ``snapshot`` (memo), and the saved artefact folders of the loaded version."""

    # --- the version on disk ------------------------------------------------------------------------------------
    origin: tuple[Path, str] | None = None
    """(folder, version token) this state was loaded from or saved to; None for a fresh build (``pending.py``)."""

    # --- this object's session: kept by a reload ----------------------------------------------------------------
    pending: DocumentOps = field(default_factory=DocumentOps, metadata=_SESSION)
    """Document operations since ``origin`` (what a save re-applies on a newer version)."""
    journal: Journal | None = field(default=None, metadata=_SESSION)
    """The change in progress: row copies (undo), insert records (provenance), document operations (pending), committed
    together (``journal.py``); set by the index that owns the state."""
    lock: ReadWriteLock = field(default_factory=ReadWriteLock, metadata=_SESSION)
    """Readers (queries, persist) share it, writers (insert, delete, refresh, reload) hold it alone."""
    query_cache: dict[str, np.ndarray] = field(default_factory=dict, metadata=_SESSION)
    """The last 256 query vectors (``embed_query``), most recent last."""
    query_cache_lock: threading.Lock = field(default_factory=threading.Lock, metadata=_SESSION)
    """Guards ``query_cache`` (several threads query one index at once)."""

    def take_version(self, other: "IndexState") -> None:
        """Take over ``other``'s tables, derived fields and origin (a reload, a save that re-applied its changes on a
        newer version); this state's session fields stay."""
        for f in fields(self):
            if not f.metadata.get("session"):
                setattr(self, f.name, getattr(other, f.name))

    def record(self, doc_id: str, before: str | None, after: Any) -> None:
        """One document operation (``pending.DocumentOps.record``); none for a fresh build saved nowhere yet, which
        replaces what a folder holds (nothing to re-apply)."""
        if self.origin is not None:
            self.pending.record(doc_id, before, after)

    def counts(self) -> dict[str, int]:
        """Documents, chunks, entities, relations (and per kind), contains and synonym edges (``index.stats()``)."""
        return {
            "documents": distinct_count(self.chunks, "doc_id"),
            "chunks": len(self.chunks),
            "entities": len(self.entities),
            "relations": len(self.facts),
            **{f"relations_{k}": v for k, v in sorted(value_counts(self.facts, "kind").items())},
            "contains_edges": int(contains_sizes(self.chunks).sum()),
            "synonym_edges": len(self.synonyms),
        }

    def derive(self, snapshot: GraphSnapshot | None = None) -> None:
        """Rebuild what is derived from the tables: the snapshot (unless given, as on load), BM25 and lookups.

        Vector tables are updated incrementally by insert and delete, not here. Artefacts built for the old
        snapshot are dropped (a load sets the saved ones after this call).
        """
        self.artefacts = ArtefactMemo()
        self.chunk_order = list(self.chunks)
        vectors = self.fact_vectors
        if isinstance(self.facts, FactColumns):  # a loaded version's facts: lookups without a list per text
            self.fact_ids = self.facts.ids()
            self.fact_text_rows = self.facts.text_rows(vectors)
            if (self.fact_text_rows < 0).any():
                raise ValueError("a fact's text has no vector")
            self.facts_by_text = FactsByText(self.fact_ids, self.fact_text_rows, vectors.ids, vectors.row)
        elif isinstance(self.facts, RowOverlay):  # changed rows over a loaded version's: read as columns too
            self.fact_ids = list(self.facts)
            self.fact_text_rows = overlay_text_rows(self.facts, vectors)
            self.facts_by_text = FactsByText(self.fact_ids, self.fact_text_rows, vectors.ids, vectors.row)
        else:
            self.facts_by_text = {}
            for f in self.facts.values():
                self.facts_by_text.setdefault(text_key(f.text), []).append(f.id)
            self.fact_ids = list(self.facts)
            self.fact_text_rows = np.fromiter(
                (vectors.row(text_key(self.facts[f].text)) for f in self.fact_ids), np.int64, len(self.fact_ids))
        if not self.entity_vectors:
            self.entity_vector_rows = np.zeros(0, np.int64)
        elif isinstance(self.entities, RowColumns):  # a loaded version's: one lookup of the key column
            self.entity_vector_rows = _found(self.entities.vector_rows(self.entity_vectors), self.entities.key_array())
        elif isinstance(self.entities, RowOverlay) and isinstance(self.entities.base, RowColumns):
            # changed rows over a loaded version's: the base's rows (one kept hash join; a held row keeps its key),
            # then a lookup per added row, instead of a lookup per entity at every insert
            alive, _, tail = self.entities.layout()
            base = self.entities.base
            base = _found(base.vector_rows(self.entity_vectors)[alive], base.key_array().filter(pa.array(alive)))
            row = self.entity_vectors.row
            self.entity_vector_rows = np.concatenate(
                [base, np.fromiter((row(rec.key) for rec in tail), np.int64, len(tail))])
        else:
            self.entity_vector_rows = np.fromiter(
                (self.entity_vectors.row(k) for k in self.entities), np.int64, len(self.entities))
        self.snapshot = snapshot if snapshot is not None else self.build_snapshot()
        # BM25 keeps the rows of chunks it has and tokenises only new ones (bm25.py)
        self.bm25 = (self.bm25.updated(self.chunk_order, lambda c: self.chunks[c].text) if self.bm25 is not None
                     else BM25Table([self.chunks[c].text for c in self.chunk_order], ids=self.chunk_order))

    def writable(self) -> None:
        """Let a change (insert, delete) edit the tables: a loaded version's chunks, entities and facts are read-only
        columns (``*_columns.py``), which get a layer of changed rows over them (``row_overlay.py``); the journal
        calls this when a change begins, and :meth:`read_only` when it ends."""
        for name in ("chunks", "entities", "facts"):
            table = getattr(self, name)
            if isinstance(table, (ChunkColumns, EntityColumns, FactColumns)):
                setattr(self, name, RowOverlay(table))
            elif isinstance(table, RowOverlay):
                table.editing = True

    def read_only(self) -> None:
        """The change is over: rows read by key are copies again (no record kept per row a query reads)."""
        for name in ("chunks", "entities", "facts"):
            table = getattr(self, name)
            if isinstance(table, RowOverlay):
                table.editing = False

    def build_snapshot(self) -> GraphSnapshot:
        """The CSR snapshot of the tables: entity rows (``entities`` order), then chunk rows (``chunk_order``)."""
        # Endpoint rows go straight into typed arrays (np.fromiter), and kinds, fact rows and weights are
        # whole-array fills: no Python list entry per edge and attribute (five of them per edge before,
        # ~36 bytes each against 4-8 in an array); the same arrays as the per-edge loop (tests/test_scale_memory.py).
        entity_ids = list(self.entities)
        node_ids = entity_ids + self.chunk_order
        n_ent, n_facts, n_chunks = len(entity_ids), len(self.facts), len(self.chunk_order)
        names, a, b, score = self.synonyms.columns()
        if _columnar(self.chunks, self.entities, self.facts):  # a loaded version: lookups of whole columns
            entities = self.entities.key_array()
            offsets, codes, _ = self.chunks.links()
            sizes, targets = np.diff(offsets), codes.astype(np.int64)
            name_rows = rows_in(pa.array(names, pa.string()), entities)
            ends = [_found(self.facts.end_rows(end, entities, forget=True), self.facts.arrow_column(end))
                    for end in ("subject", "object")]
        elif overlaid(self.chunks, self.entities, self.facts):  # changed rows over a loaded version's columns
            sizes, targets, name_rows, ends = overlay_edges(self.chunks, self.entities, self.facts, entity_ids, names)
        else:
            row = {n: i for i, n in enumerate(node_ids)}
            sizes, targets = contains_rows(self.chunks, row)
            name_rows = np.fromiter((row.get(k, -1) for k in names), np.int64, len(names))
            ends = [np.fromiter(map(row.__getitem__, table_column(self.facts, end)), np.int64, n_facts)
                    for end in ("subject", "object")]
        contains = (np.repeat(np.arange(n_ent, n_ent + n_chunks), sizes), targets)
        a, b = name_rows[a], name_rows[b]
        if (a < 0).any() or (b < 0).any():
            raise ValueError("a synonym pair names an entity the index does not have")
        find = _node_finder(self.entities, self.chunks) if _columnar(self.chunks, self.entities, self.facts) else None
        return GraphSnapshot.from_edges(node_ids, n_ent, relations=tuple(ends), contains=contains, synonyms=(a, b, score),
                                        find=find)


def _columnar(chunks, entities, facts) -> bool:
    """Whether the tables are a loaded version's columns, the chunks' links naming the entities table's own keys
    (so a chunk's entity codes are entity rows)."""
    return (isinstance(chunks, ChunkColumns) and isinstance(entities, EntityColumns) and isinstance(facts, FactColumns)
            and chunks.links()[2] is entities.key_list())


def _node_finder(entities: RowColumns, chunks: RowColumns):
    """A snapshot's node id -> row (-1: none) from the loaded tables' own key lookups: entity rows, then chunk rows
    (a chunk first, as the last of two equal ids in a dict of the node ids would be)."""
    n_ent, chunk_row, entity_row = len(entities), chunks._find, entities._find

    def find(node_id: str) -> int:
        row = chunk_row(node_id)
        return n_ent + row if row >= 0 else entity_row(node_id)

    return find


def _found(rows: np.ndarray, keys: pa.Array) -> np.ndarray:
    """``rows`` when every key was found; else KeyError naming the first missing one (as a dict lookup would)."""
    missing = np.flatnonzero(rows < 0)
    if missing.size:
        raise KeyError(keys[int(missing[0])].as_py())
    return rows


def contains_sizes(chunks) -> np.ndarray:
    """How many entities each chunk contains, in table order."""
    if isinstance(chunks, ChunkColumns):
        return np.diff(chunks.links()[0])
    if isinstance(chunks, RowOverlay):
        return overlay_contains(chunks, None, None)[0]
    return np.fromiter((len(c.entities) for c in chunks.values()), np.int64, len(chunks))


def contains_rows(chunks, row: dict[str, int]) -> tuple[np.ndarray, np.ndarray]:
    """``(sizes, targets)``: how many entities each chunk contains (table order), and their ``row`` numbers, chunk
    after chunk, in each chunk's link order."""
    if isinstance(chunks, ChunkColumns):  # a loaded version: what each chunk contains, as arrays
        offsets, codes, keys = chunks.links()
        return np.diff(offsets), np.fromiter(map(row.__getitem__, keys), np.int64, len(keys))[codes]
    if isinstance(chunks, RowOverlay):
        if row is None:
            return overlay_contains(chunks, None, None)
        _, _, keys = chunks.base.links()
        key_rows = np.fromiter((row.get(k, -1) for k in keys), np.int64, len(keys))
        return overlay_contains(chunks, key_rows, lambda names: np.fromiter(map(row.__getitem__, names), np.int64,
                                                                                len(names)))
    recs = list(chunks.values())
    sizes = np.fromiter((len(c.entities) for c in recs), np.int64, len(recs))
    return sizes, np.fromiter((row[k] for c in recs for k in c.entities), np.int64, int(sizes.sum()))


# The fields the read side (GraphIndexReader) exposes as they are, as read-only properties of the index and its views.
READ_FIELDS = ("config", "embed_model", "property_graph_store", "chunks", "entities", "facts", "synonyms", "fact_ids",
               "snapshot", "bm25", "chunk_vectors", "entity_vectors", "fact_vectors", "entity_vector_rows",
               "fact_text_rows", "facts_by_text", "chunk_order", "build_info")
