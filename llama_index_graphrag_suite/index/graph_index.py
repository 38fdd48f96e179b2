"""GraphRAGIndex: one graph index that every method reads.

Build: documents -> token chunks -> kg_extractors (TransformComponents) -> tables (chunks, entities,
facts) -> mirrored into a PropertyGraphStore -> derived artefacts (CSR snapshot, faiss over chunks,
entities and facts, BM25 over chunks). Retrievers read the artefacts, never the store triple by triple.
"""

from __future__ import annotations

import contextlib
import logging
import shutil
import time
from collections import Counter
from pathlib import Path
from typing import Any, Callable, Iterable, Sequence

import numpy as np
from llama_index.core import Document
from llama_index.core.base.embeddings.base import BaseEmbedding
from llama_index.core.graph_stores import SimplePropertyGraphStore
from llama_index.core.graph_stores.types import (
    KG_NODES_KEY,
    KG_RELATIONS_KEY,
    EntityNode,
    PropertyGraphStore,
    Relation,
)
from llama_index.core.ingestion import run_transformations
from llama_index.core.node_parser import TokenTextSplitter
from llama_index.core.schema import NodeRelationship, RelatedNodeInfo, TextNode, TransformComponent

from ..config import IndexConfig
from ..embeddings import embed_model_name, resolve_embed_model
from ..extractors.entity_stats import EntityStatistics, find_mentions
from ..extractors.statistical import (
    CONTAINS,
    ENTITY_LABEL,
    SYNONYM,
    CooccurrenceRelationExtractor,
    StatisticalEntityExtractor,
)
from ..graph.snapshot import CHUNK, CONTAINS as E_CONTAINS, ENTITY, RELATION, SYNONYM as E_SYNONYM, GraphSnapshot
from ..graph.synonyms import synonym_pairs
from .bm25 import BM25Table
from .records import ChunkRecord, EntityRecord, FactRecord, fact_id, text_key
from .storage import CorruptIndexError, open_version, read_json, save_version, write_json
from .vectors import VectorTable, normalize_rows

log = logging.getLogger(__name__)
STORE_FILE = "property_graph_store.json"
ARTEFACTS = "artefacts"  # sub-folder of a version holding methods' derived artefacts (see artefact())


class GraphRAGIndex:
    """The shared graph index (see the module docstring). Build with :meth:`from_documents`.

    Attributes retrievers use: ``snapshot`` (:class:`GraphSnapshot`), ``chunk_vectors``,
    ``entity_vectors``, ``fact_vectors`` (:class:`VectorTable`; one row per distinct fact text, see
    :meth:`search_facts`), ``bm25`` (:class:`BM25Table`), ``chunks`` / ``entities`` / ``facts`` (dicts
    of records; ``snapshot.edge_fact`` indexes ``list(facts)``), ``property_graph_store``.
    """

    def __init__(
        self,
        embed_model: BaseEmbedding | str | None = None,
        config: IndexConfig | None = None,
        llm: Any = None,
        property_graph_store: PropertyGraphStore | None = None,
        extra_extractors: Sequence[TransformComponent] = (),
        show_progress: bool = False,
    ):
        self.config = config or IndexConfig()
        self.embed_model = resolve_embed_model(embed_model, self.config.embed_batch_size)
        self.llm = llm
        self.property_graph_store = property_graph_store if property_graph_store is not None else SimplePropertyGraphStore()
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

    # ------------------------------------------------------------------ building

    @classmethod
    def from_documents(cls, documents: Sequence[Document], **kwargs: Any) -> "GraphRAGIndex":
        """Build an index over ``documents`` (keyword arguments as for the constructor)."""
        index = cls(**kwargs)
        index.insert(documents)
        return index

    @classmethod
    def from_property_graph_index(cls, pg_index, embed_model: BaseEmbedding | str | None = None,
                                  config: IndexConfig | None = None, show_progress: bool = False) -> "GraphRAGIndex":
        """Derive the index from a LlamaIndex ``PropertyGraphIndex`` built with this project's extractors.

        Reads the store once: chunk nodes, ``contains`` relations (chunk -> entity), and every other
        relation as a fact (its ``text`` property, or "subject predicate object"); a fact's support is the
        chunk it was extracted from (``triplet_source_id``). Synonym edges are recomputed from the entity
        embeddings. The store must list all its nodes from ``get()`` and its triplets (as
        ``SimplePropertyGraphStore`` does). ``embed_model`` defaults to the PropertyGraphIndex's.
        """
        store = pg_index.property_graph_store
        index = cls(embed_model=embed_model or getattr(pg_index, "_embed_model", None), config=config,
                    property_graph_store=store, show_progress=show_progress)
        nodes = store.get()
        chunk_nodes = [n for n in nodes if n.label == "text_chunk"]
        if not chunk_nodes:
            raise ValueError("the PropertyGraphIndex holds no text chunks")
        graph = getattr(store, "graph", None)
        triplets = graph.get_triplets() if graph is not None else store.get_triplets(ids=[n.id for n in nodes])
        surfaces = {n.id: n.properties.get("surface", n.id) for n in nodes if n.label != "text_chunk"}
        for n in chunk_nodes:
            doc_id = str(n.properties.get("ref_doc_id") or n.properties.get("doc_id") or n.id)
            index.chunks[n.id] = ChunkRecord(n.id, doc_id, n.text, str(n.properties.get("title", "")))
        new_entities: set[str] = set()
        new_facts: set[str] = set()
        for subj, rel, obj in triplets:
            if rel.label == CONTAINS and subj.id in index.chunks:
                index._support_entity(obj.id, surfaces.get(obj.id, obj.id), subj.id, new_entities)
                index.chunks[subj.id].entities.append(obj.id)
        for subj, rel, obj in triplets:
            if rel.label in (CONTAINS, SYNONYM) or subj.id in index.chunks or obj.id in index.chunks:
                continue
            source = rel.properties.get("triplet_source_id") or rel.properties.get("chunk_id")
            if source not in index.chunks:
                continue  # a relation with no chunk behind it cannot be retrieved
            for key in (subj.id, obj.id):
                if key not in index.chunks[source].entities:
                    index._support_entity(key, surfaces.get(key, key), source, new_entities)
                    index.chunks[source].entities.append(key)
            index._support_fact(rel, source, new_facts)
        chunk_text_nodes = [index._chunk_text_node(c) for c in index.chunks]
        index._embed_new(chunk_text_nodes, new_entities, new_facts)
        index._add_synonyms(new_entities)
        index._refresh_derived()
        return index

    def insert(self, documents: Sequence[Document]) -> list[str]:
        """Add documents; returns the new chunk ids. Every artefact is updated before it returns.

        What is recomputed on insert:

        * corpus statistics (n-gram document frequencies) include the new chunks before they are
          scored, so new chunks are scored against the whole corpus; entities extracted earlier from
          old chunks are not re-scored (call :meth:`rebuild` for that);
        * entities new to the vocabulary are linked to every old chunk that mentions them, and those
          chunks' co-occurrence relations are recomputed;
        * synonym edges are searched for the new entities against all entities;
        * BM25 is rebuilt (its IDF depends on every chunk); the snapshot is rebuilt from the tables.

        If extraction or embedding fails (say the LLM server is down), the index is left exactly as
        it was and the error is raised.
        """
        start = time.perf_counter()
        chunk_nodes = self._chunk(documents)
        if not chunk_nodes:
            return []
        known_vocab = {k: e.surface for k, e in self.entities.items()}
        stats = self._statistics()
        entity_extractor = StatisticalEntityExtractor(
            stats=stats,
            max_ngram=self.config.max_ngram,
            threshold=self.config.entity_threshold,
            length_norm=self.config.entity_length_norm,
            fit_statistics=False,  # fitted below, so a failed insert can take them back
            show_progress=self.show_progress,
        )
        entity_extractor.add_vocabulary(known_vocab)
        cooc = CooccurrenceRelationExtractor(
            max_ngram=self.config.max_ngram, max_pairs_per_sentence=self.config.max_pairs_per_sentence,
            show_progress=self.show_progress,
        )
        extractors: list[TransformComponent] = [entity_extractor, cooc]
        if self.llm is not None:
            from ..extractors.llm_relations import LLMRelationExtractor

            extractors.append(LLMRelationExtractor(llm=self.llm, show_progress=self.show_progress))
        extractors += self.extra_extractors
        usage = getattr(self.llm, "usage", None)  # a RobustLLM counts requests, cache hits and tokens
        stats.fit(n.text for n in chunk_nodes)
        try:
            with usage.track() if usage is not None else contextlib.nullcontext() as used:
                run_transformations(chunk_nodes, extractors, show_progress=self.show_progress)
        except BaseException:
            stats.forget(n.text for n in chunk_nodes)
            raise
        if self.llm is not None:
            self.build_info["llm_calls"] += extractors[2].stats.get("llm_calls", 0)
            if used is not None:  # requests (retries included), cache hits, tokens, failures, seconds
                total = self.build_info.setdefault("llm_usage", {})
                for key, value in used.snapshot().items():
                    total[key] = total.get(key, 0) + value

        new_entities: set[str] = set()
        new_facts: set[str] = set()
        new_chunks = [n.node_id for n in chunk_nodes]
        old_lists = {cid: list(rec.entities) for cid, rec in self.chunks.items()}
        try:
            for node in chunk_nodes:
                self._add_chunk(node, new_entities, new_facts)
            touched_old = self._link_new_entities_to_old_chunks(new_entities, set(new_chunks), cooc, new_facts)
            self._embed_new(chunk_nodes, new_entities, new_facts)
            self._add_synonyms(new_entities)
        except BaseException:
            self._undo_insert(new_chunks, new_entities, new_facts, old_lists)
            stats.forget(n.text for n in chunk_nodes)
            raise
        self._mirror_upsert(new_chunks + touched_old, new_entities, new_facts)
        self._refresh_derived()
        self.build_info["seconds"] += time.perf_counter() - start
        return [n.node_id for n in chunk_nodes]

    def _undo_insert(self, new_chunks: list[str], new_entities: set[str], new_facts: set[str], old_lists: dict) -> None:
        """Put the tables and vectors back as they were before a failed insert."""
        added = set(new_chunks)
        for cid in new_chunks:
            self.chunks.pop(cid, None)
        for cid, entities in old_lists.items():
            rec = self.chunks[cid]
            for key in set(rec.entities) - set(entities):
                self.entities[key].chunks.discard(cid)
            rec.entities = entities
        for key in new_entities:
            self.entities.pop(key, None)
        for ent in self.entities.values():
            ent.chunks -= added
        for fid in new_facts:
            self.facts.pop(fid, None)
        for fact in self.facts.values():
            fact.chunks -= added
        self.synonyms = {p: s for p, s in self.synonyms.items() if p[0] not in new_entities and p[1] not in new_entities}
        for table, ids in ((self.chunk_vectors, added), (self.entity_vectors, new_entities),
                           (self.fact_vectors, self._unused_texts())):
            if table is not None:
                table.remove(ids)

    def _chunk(self, documents: Sequence[Document]) -> list[TextNode]:
        splitter = TokenTextSplitter(chunk_size=self.config.chunk_size, chunk_overlap=self.config.chunk_overlap)
        existing_docs = {c.doc_id for c in self.chunks.values()}
        out: list[TextNode] = []
        for doc in documents:
            doc_id = str(doc.metadata.get("doc_id") or doc.id_)
            if doc_id in existing_docs:
                raise ValueError(f"document {doc_id!r} is already in the index; delete it first to replace it")
            existing_docs.add(doc_id)
            title = str(doc.metadata.get("title") or "")
            text = doc.text.strip()
            if not text:
                log.warning("skipping empty document %s", doc_id)
                continue
            body = f"{title}\n\n{text}" if title and not text.startswith(title) else text
            for pos, piece in enumerate(splitter.split_text(body)):
                node = TextNode(
                    text=piece,
                    id_=f"{doc_id}#{pos}",
                    metadata={"doc_id": doc_id, "title": title},
                    relationships={NodeRelationship.SOURCE: RelatedNodeInfo(node_id=doc_id)},
                )
                node.excluded_embed_metadata_keys = ["doc_id", "title"]
                node.excluded_llm_metadata_keys = ["doc_id"]
                out.append(node)
        return out

    def _statistics(self) -> EntityStatistics:
        if self._stats is None:  # after load(): recompute from the stored chunk texts, once
            self._stats = EntityStatistics(self.config.max_ngram)
            self._stats.fit(c.text for c in self.chunks.values())
        return self._stats

    def _add_chunk(self, node: TextNode, new_entities: set[str], new_facts: set[str]) -> None:
        kg_nodes = node.metadata.pop(KG_NODES_KEY, [])
        kg_rels = node.metadata.pop(KG_RELATIONS_KEY, [])
        rec = ChunkRecord(node.node_id, node.metadata["doc_id"], node.text, node.metadata.get("title", ""),
                          int(node.node_id.rsplit("#", 1)[1]))
        surfaces = {n.name: n.properties.get("surface", n.name) for n in kg_nodes if isinstance(n, EntityNode)}
        contained = [r.target_id for r in kg_rels if r.label == CONTAINS]
        for key in dict.fromkeys(contained):
            self._support_entity(key, surfaces.get(key, key), rec.id, new_entities)
        rec.entities = list(dict.fromkeys(contained))
        self.chunks[rec.id] = rec
        for r in kg_rels:
            if r.label in (CONTAINS, SYNONYM):
                continue  # contains is in the record; synonyms are computed index-wide
            for key in (r.source_id, r.target_id):
                if key not in self.entities:  # e.g. an LLM triple naming a phrase not in the vocabulary
                    self._support_entity(key, surfaces.get(key, key), rec.id, new_entities)
                    rec.entities.append(key)
            self._support_fact(r, rec.id, new_facts)

    def _support_entity(self, key: str, surface: str, chunk_id: str, new_entities: set[str]) -> None:
        ent = self.entities.get(key)
        if ent is None:
            ent = self.entities[key] = EntityRecord(key, surface)
            new_entities.add(key)
        ent.chunks.add(chunk_id)

    def _support_fact(self, r: Relation, chunk_id: str, new_facts: set[str]) -> None:
        fid = fact_id(r.source_id, r.label, r.target_id)
        fact = self.facts.get(fid)
        if fact is None:
            text = str(r.properties.get("text") or f"{r.source_id} {r.label} {r.target_id}")
            fact = self.facts[fid] = FactRecord(fid, r.source_id, r.label, r.target_id, text, str(r.properties.get("kind", "other")))
            new_facts.add(fid)
        fact.chunks.add(chunk_id)

    def _link_new_entities_to_old_chunks(self, new_entities: set[str], new_chunks: set[str], cooc, new_facts: set[str]) -> list[str]:
        """Old chunks that mention an entity first extracted now get `contains` edges and new relations."""
        if not new_entities or len(self.chunks) == len(new_chunks):
            return []
        vocab = frozenset(new_entities)
        touched = []
        for cid, rec in self.chunks.items():
            if cid in new_chunks:
                continue
            found = {m.key for m in find_mentions(rec.text, vocab, self.config.max_ngram)}
            found -= set(rec.entities)
            if not found:
                continue
            touched.append(cid)
            for key in found:
                self.entities[key].chunks.add(cid)
                rec.entities.append(key)
            for r in cooc.relations(rec.text, frozenset(rec.entities), cid):
                self._support_fact(r, cid, new_facts)
        return touched

    # ------------------------------------------------------------------ embeddings and derived artefacts

    def _embed(self, texts: list[str], what: str) -> np.ndarray:
        if not texts:
            return np.zeros((0, self._dim or 1), np.float32)
        if self.show_progress:
            log.info("embedding %d %s", len(texts), what)
        # Batches of similar length waste little on padding: about 1.5x faster on CPU (measured on hotpotqa facts).
        order = sorted(range(len(texts)), key=lambda i: len(texts[i]))
        vecs = self.embed_model.get_text_embedding_batch([texts[i] for i in order], show_progress=self.show_progress)
        arr = np.empty((len(texts), len(vecs[0])), dtype=np.float32)
        arr[order] = np.asarray(vecs, dtype=np.float32)
        if self._dim is None:
            self._dim = arr.shape[1]
            self.chunk_vectors, self.entity_vectors, self.fact_vectors = (VectorTable(self._dim) for _ in range(3))
        return arr

    def embed_query(self, query: str) -> np.ndarray:
        """The query's unit vector with the index's embed model.

        The last 256 queries are remembered: an agent that asks again, or several methods run on one
        question, pay for the embedding once. :meth:`clear_query_cache` forgets them (the bench does,
        per method, so every method's latency includes its embedding).
        """
        cache = self._query_cache
        vec = cache.pop(query, None)
        if vec is None:
            vec = normalize_rows(np.asarray(self.embed_model.get_query_embedding(query), np.float32))[0]
            if len(cache) >= 256:
                cache.pop(next(iter(cache)))
        cache[query] = vec  # most recent last
        return vec

    def clear_query_cache(self) -> None:
        self._query_cache.clear()

    def _embed_new(self, chunk_nodes: list[TextNode], new_entities: set[str], new_facts: set[str]) -> None:
        chunk_vecs = self._embed([n.get_content(metadata_mode="embed") for n in chunk_nodes], "chunks")
        ent_ids = sorted(new_entities)
        ent_vecs = self._embed([self.entities[k].surface for k in ent_ids], "entities")
        self.chunk_vectors.add([n.node_id for n in chunk_nodes], chunk_vecs)
        self.entity_vectors.add(ent_ids, ent_vecs)
        # Many relations come from one sentence: each distinct fact text is embedded and stored once.
        texts = {text_key(self.facts[f].text): self.facts[f].text for f in sorted(new_facts)}
        keys = [k for k in texts if k not in self.fact_vectors]
        self.fact_vectors.add(keys, self._embed([texts[k] for k in keys], "fact texts"))

    def _unused_texts(self) -> set[str]:
        """Fact-text vectors no remaining fact uses."""
        if self.fact_vectors is None:
            return set()
        used = {text_key(f.text) for f in self.facts.values()}
        return {k for k in self.fact_vectors.ids if k not in used}

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

    def _add_synonyms(self, new_entities: set[str]) -> None:
        if not new_entities or self.entity_vectors is None or len(self.entity_vectors) < 2:
            return
        ids = self.entity_vectors.ids
        eligible = np.array([sum(ch.isalnum() for ch in k) >= self.config.synonym_min_chars for k in ids])
        rows = np.array([self.entity_vectors.row(k) for k in new_entities], np.int64)
        src, dst, sim = synonym_pairs(
            self.entity_vectors.vectors(), self.config.synonym_threshold, self.config.synonym_max_per_entity, rows, eligible
        )
        for i, j, s in zip(src.tolist(), dst.tolist(), sim.tolist()):
            self.synonyms[(ids[i], ids[j])] = float(s)

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
        entity_ids = list(self.entities)
        node_ids = entity_ids + self._chunk_order
        row = {n: i for i, n in enumerate(node_ids)}
        src, dst, kind, fact, weight = [], [], [], [], []
        for position, f in enumerate(self.facts.values()):
            src.append(row[f.subject]); dst.append(row[f.object]); kind.append(RELATION)
            fact.append(position); weight.append(1.0)
        for cid in self._chunk_order:
            for key in self.chunks[cid].entities:
                src.append(row[cid]); dst.append(row[key]); kind.append(E_CONTAINS); fact.append(-1); weight.append(1.0)
        for (a, b), s in self.synonyms.items():
            src.append(row[a]); dst.append(row[b]); kind.append(E_SYNONYM); fact.append(-1); weight.append(s)
        return GraphSnapshot(
            node_ids=node_ids,
            node_kind=np.array([ENTITY] * len(entity_ids) + [CHUNK] * len(self._chunk_order), np.int8),
            edge_src=np.array(src, np.int32), edge_dst=np.array(dst, np.int32),
            edge_kind=np.array(kind, np.int8), edge_fact=np.array(fact, np.int32),
            edge_weight=np.array(weight, np.float32),
        )

    # ------------------------------------------------------------------ the PropertyGraphStore mirror

    def _entity_node(self, key: str) -> EntityNode:
        e = self.entities[key]
        return EntityNode(name=key, label=ENTITY_LABEL, properties={"surface": e.surface})

    def _chunk_text_node(self, cid: str) -> TextNode:
        c = self.chunks[cid]
        return TextNode(text=c.text, id_=cid, metadata={"doc_id": c.doc_id, "title": c.title},
                        relationships={NodeRelationship.SOURCE: RelatedNodeInfo(node_id=c.doc_id)})

    def _upsert_chunks(self, chunk_ids: Iterable[str]) -> None:
        # upsert_llama_nodes stores the node as LlamaIndex expects, so get_llama_nodes() and
        # PGRetriever(include_text=True) find the chunk text behind a triple.
        self.property_graph_store.upsert_llama_nodes([self._chunk_text_node(c) for c in chunk_ids])

    def _fact_relation(self, f: FactRecord) -> Relation:
        return Relation(label=f.predicate, source_id=f.subject, target_id=f.object,
                        properties={"text": f.text, "kind": f.kind, "fact_id": f.id})

    def _relations_of_chunks(self, chunk_ids: Iterable[str]) -> list[Relation]:
        return [Relation(label=CONTAINS, source_id=cid, target_id=key, properties={"kind": CONTAINS})
                for cid in chunk_ids for key in self.chunks[cid].entities]

    def _mirror_upsert(self, chunk_ids: list[str], entity_ids: Iterable[str], fact_ids: Iterable[str]) -> None:
        store = self.property_graph_store
        self._upsert_chunks(chunk_ids)
        store.upsert_nodes([self._entity_node(k) for k in entity_ids])
        rels = [self._fact_relation(self.facts[f]) for f in fact_ids] + self._relations_of_chunks(chunk_ids)
        rels += [Relation(label=SYNONYM, source_id=a, target_id=b, properties={"kind": SYNONYM, "score": s})
                 for (a, b), s in self.synonyms.items() if a in entity_ids or b in entity_ids]
        store.upsert_relations(rels)

    # ------------------------------------------------------------------ deleting

    def delete(self, doc_id: str) -> int:
        """Remove a document: its chunks, the relations only it supported, the entities only it mentioned.

        Corpus statistics forget its chunks; entities of the remaining chunks are not re-scored.
        Returns the number of chunks removed. Raises KeyError for an unknown document.
        """
        gone_chunks = [c for c, rec in self.chunks.items() if rec.doc_id == doc_id]
        if not gone_chunks:
            raise KeyError(f"no document {doc_id!r} in the index")
        gone = set(gone_chunks)
        self._statistics().forget(self.chunks[c].text for c in gone_chunks)
        gone_entities, gone_facts = set(), set()
        for cid in gone_chunks:
            for key in self.chunks[cid].entities:
                ent = self.entities.get(key)
                if ent is not None:
                    ent.chunks.discard(cid)
                    if not ent.chunks:
                        gone_entities.add(key)
        for fid, f in self.facts.items():
            if f.chunks & gone:
                f.chunks -= gone
                if not f.chunks or f.subject in gone_entities or f.object in gone_entities:
                    gone_facts.add(fid)
        gone_syn = [p for p in self.synonyms if p[0] in gone_entities or p[1] in gone_entities]

        # Which surviving store nodes must be re-written: endpoints of removed facts, and (because
        # some stores delete a node's neighbours with it) the neighbours of everything deleted.
        deleted_ids = gone | gone_entities | {x for fid in gone_facts for x in (self.facts[fid].subject, self.facts[fid].object)}
        snap = self.snapshot
        around: set[str] = set()
        for node_id in deleted_ids:
            if snap.has(node_id):
                nbrs, _ = snap.neighbours_of(snap.row(node_id))
                around.update(snap.node_ids[i] for i in nbrs.tolist())
        around |= deleted_ids

        for cid in gone_chunks:
            del self.chunks[cid]
        for key in gone_entities:
            del self.entities[key]
        for fid in gone_facts:
            del self.facts[fid]
        for p in gone_syn:
            del self.synonyms[p]
        self.chunk_vectors.remove(gone_chunks)
        self.entity_vectors.remove(gone_entities)
        self.fact_vectors.remove(self._unused_texts())

        store = self.property_graph_store
        store.delete(ids=sorted(deleted_ids))
        survivors = around - gone - gone_entities
        keep_chunks = [n for n in survivors if n in self.chunks]
        keep_entities = {n for n in survivors if n in self.entities}
        keep_facts = [f for f in self.facts.values() if f.subject in survivors or f.object in survivors]
        self._upsert_chunks(keep_chunks)
        store.upsert_nodes([self._entity_node(k) for k in keep_entities])
        for f in keep_facts:  # endpoints may not have been touched; make sure they exist
            for k in (f.subject, f.object):
                if k not in keep_entities:
                    keep_entities.add(k)
                    store.upsert_nodes([self._entity_node(k)])
        contains_of = [c for c in self.chunks if c in survivors or set(self.chunks[c].entities) & survivors]
        rels = [self._fact_relation(f) for f in keep_facts] + self._relations_of_chunks(contains_of)
        rels += [Relation(label=SYNONYM, source_id=a, target_id=b, properties={"kind": SYNONYM, "score": s})
                 for (a, b), s in self.synonyms.items() if a in survivors or b in survivors]
        if contains_of:  # their chunk nodes must exist before the relations point at them
            self._upsert_chunks(c for c in contains_of if c not in survivors)
        store.upsert_relations(rels)
        self._refresh_derived()
        return len(gone_chunks)


    # ------------------------------------------------------------------ reading helpers for retrievers

    def cached(self, name: str, build):
        """Memo for artefacts retrievers derive from the snapshot (transition matrices, cost layouts).

        Cleared whenever the snapshot is replaced (every insert and delete), so it never goes stale.
        """
        memo = self._memo
        if memo.get("__snapshot__") is not self.snapshot:
            memo.clear()
            memo["__snapshot__"] = self.snapshot
        if name not in memo:
            memo[name] = build()
        return memo[name]

    def artefact(self, name: str, build: Callable[[], Any], load: Callable[[Path], Any] | None = None):
        """A method's derived artefact (ArchRAG's community hierarchy, A2RAG's document summaries).

        Like :meth:`cached` it belongs to the current snapshot. In addition, an artefact with a
        ``save(folder)`` method is written by :meth:`persist` (under ``artefacts/<name>/``, checksummed
        in the manifest like every file), and after :meth:`load` it is read back with ``load(folder)``
        instead of being rebuilt, so LLM summaries are paid for once. An insert or delete makes saved
        artefacts stale: they are then rebuilt on next use.
        """
        def build_or_load():
            folder = self._saved_artefacts.get(name)
            if folder is not None and load is not None and folder.is_dir():
                try:
                    return load(folder)
                except (OSError, ValueError, KeyError) as exc:  # damaged: rebuild rather than fail the query
                    log.warning("saved %s artefact at %s unreadable (%s); rebuilding it", name, folder, exc)
            return build()

        return self.cached(f"artefact:{name}", build_or_load)

    def _artefacts_to_save(self) -> dict[str, Any]:
        if self._memo.get("__snapshot__") is not self.snapshot:
            return {}
        return {key.split(":", 1)[1]: obj for key, obj in self._memo.items()
                if key.startswith("artefact:") and hasattr(obj, "save")}

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

    def as_retriever(self, method: str = "agrag", **params: Any):
        """The named method's retriever over this index (``graphrag-suite methods`` lists the names)."""
        from ..entrypoints import as_retriever

        return as_retriever(self, method, **params)

    def as_query_engine(self, method: str = "agrag", llm: Any = None, streaming: bool = False, **kwargs: Any):
        """A query engine over the named method; see :func:`llama_index_graphrag_suite.entrypoints.as_query_engine`."""
        from ..entrypoints import as_query_engine

        return as_query_engine(self, method, llm=llm if llm is not None else self.llm, streaming=streaming, **kwargs)

    def as_property_graph_index(self, llm: Any = None, **kwargs: Any):
        """A LlamaIndex ``PropertyGraphIndex`` over the same store (for LlamaIndex's own retrievers)."""
        from llama_index.core import PropertyGraphIndex

        return PropertyGraphIndex.from_existing(
            self.property_graph_store, llm=llm or self.llm, embed_model=self.embed_model, embed_kg_nodes=False,
            kg_extractors=[StatisticalEntityExtractor()], **kwargs,
        )

    # ------------------------------------------------------------------ persistence

    def persist(self, persist_dir: str | Path) -> Path:
        """Save atomically under ``persist_dir`` (see ``index/storage.py``); returns the version folder."""
        if self.snapshot is None:
            raise ValueError("nothing to persist: the index is empty")

        def write(folder: Path) -> None:
            write_json(folder / "chunks.json", [self.chunks[c].to_json() for c in self._chunk_order])
            write_json(folder / "entities.json", [e.to_json() for e in self.entities.values()])
            write_json(folder / "facts.json", [f.to_json() for f in self.facts.values()])
            write_json(folder / "synonyms.json", [[a, b, s] for (a, b), s in self.synonyms.items()])
            write_json(folder / "vector_ids.json", {
                "chunks": self.chunk_vectors.ids, "entities": self.entity_vectors.ids, "facts": self.fact_vectors.ids})
            np.savez(folder / "graph.npz", **self.snapshot.to_arrays())
            self.chunk_vectors.save(folder / "chunks.faiss")
            self.entity_vectors.save(folder / "entities.faiss")
            self.fact_vectors.save(folder / "facts.faiss")
            if isinstance(self.property_graph_store, SimplePropertyGraphStore):
                self.property_graph_store.persist(str(folder / STORE_FILE))
            in_memory = self._artefacts_to_save()
            for name, obj in in_memory.items():
                obj.save(folder / ARTEFACTS / name)
            for name, old in self._saved_artefacts.items():  # loaded from disk, never used: carry over
                if name not in in_memory and old.is_dir():
                    shutil.copytree(old, folder / ARTEFACTS / name)

        from .. import __version__

        manifest = {
            "library": "llama-index-graphrag-suite",
            "library_version": __version__,
            "created": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
            "config": self.config.model_dump(),
            "embed_model": embed_model_name(self.embed_model),
            "embed_dim": self._dim,
            "store": type(self.property_graph_store).__name__,
            "counts": self.stats(),
            "build": self.build_info,
        }
        saved = save_version(persist_dir, write, manifest)
        artefacts = saved / ARTEFACTS
        self._saved_artefacts = {p.name: p for p in artefacts.iterdir()} if artefacts.is_dir() else {}
        return saved

    @classmethod
    def load(
        cls,
        persist_dir: str | Path,
        embed_model: BaseEmbedding | str | None = None,
        llm: Any = None,
        property_graph_store: PropertyGraphStore | None = None,
        show_progress: bool = False,
    ) -> "GraphRAGIndex":
        """Load an index saved by :meth:`persist`.

        ``embed_model`` defaults to the one named in the manifest; a different model must have the
        same dimension (and should be the same model, or scores are meaningless). Pass
        ``property_graph_store`` when the index was built on an external store.
        Raises IndexNotFoundError, CorruptIndexError or IndexFormatError with a one-line reason.
        """
        folder, manifest = open_version(persist_dir)
        try:
            config = IndexConfig(**manifest["config"])
            embed = embed_model if embed_model is not None else manifest["embed_model"]
            store = property_graph_store
            if store is None:
                if (folder / STORE_FILE).is_file():
                    store = SimplePropertyGraphStore.from_persist_path(str(folder / STORE_FILE))
                else:
                    raise CorruptIndexError(
                        f"index at {persist_dir} was built on a {manifest['store']}; pass property_graph_store= to load it")
            index = cls(embed_model=embed, config=config, llm=llm, property_graph_store=store, show_progress=show_progress)
            dim = int(manifest["embed_dim"])
            index._dim = dim
            chunk_rows = read_json(folder / "chunks.json")
            index.chunks = {d["id"]: ChunkRecord(**d) for d in chunk_rows}
            index.entities = {d["key"]: EntityRecord.from_json(d) for d in read_json(folder / "entities.json")}
            index.facts = {d["id"]: FactRecord.from_json(d) for d in read_json(folder / "facts.json")}
            index.synonyms = {(a, b): float(s) for a, b, s in read_json(folder / "synonyms.json")}
            ids = read_json(folder / "vector_ids.json")
            index.chunk_vectors = VectorTable.load(folder / "chunks.faiss", ids["chunks"], dim)
            index.entity_vectors = VectorTable.load(folder / "entities.faiss", ids["entities"], dim)
            index.fact_vectors = VectorTable.load(folder / "facts.faiss", ids["facts"], dim)
            index.build_info = dict(manifest.get("build", {}))
            index._stats = None  # recomputed from chunk texts if an insert or delete needs it
            with np.load(folder / "graph.npz", allow_pickle=False) as arrays:
                snapshot = GraphSnapshot.from_arrays(list(index.entities) + list(index.chunks), arrays)
            index._refresh_derived(snapshot)
            if (folder / ARTEFACTS).is_dir():
                index._saved_artefacts = {p.name: p for p in (folder / ARTEFACTS).iterdir() if p.is_dir()}
        except (KeyError, TypeError, ValueError, RuntimeError) as exc:
            if isinstance(exc, CorruptIndexError):
                raise
            raise CorruptIndexError(f"corrupt index at {persist_dir}: {type(exc).__name__}: {exc}") from exc
        probe = index.embed_model.get_query_embedding("dimension check")
        if len(probe) != dim:
            raise ValueError(f"embed model gives {len(probe)}-dim vectors but the index at {persist_dir} holds {dim}-dim ones")
        return index
