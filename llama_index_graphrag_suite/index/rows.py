"""The row writers of an insert: extractor output -> chunk, entity and fact rows, links of new entities to older
chunks, synonym edges. Plain functions of the index's :class:`~.state.IndexState`; each touches a row in the
state's journal before it changes it (``journal.py``), so a failed change rolls them back.
"""

from __future__ import annotations

import numpy as np
from llama_index.core.graph_stores.types import KG_NODES_KEY, KG_RELATIONS_KEY, EntityNode, Relation
from llama_index.core.schema import TextNode

from ..extractors.entity_resolution import keep_alias_pairs
from ..extractors.statistical import CONTAINS, SYNONYM
from ..graph.synonyms import Blocks, approx_min_rows, listed_synonym_pairs, synonym_pairs
from .bm25 import bm25_tokens
from .chunking import DOC_HASH
from .extraction import Extraction
from .records import ChunkRecord, EntityRecord, FactRecord, entity_attributes, fact_id, text_key
from .row_overlay import RowOverlay, table_column

__all__ = ["add_chunk", "add_synonyms", "chunks_that_may_mention", "link_new_entities_to_old_chunks",
           "support_entity", "support_fact", "take_attributes", "unused_texts"]


def add_chunk(state, node: TextNode, new_entities: set[str], new_facts: set[str]) -> None:
    """A chunk node the extractors ran over -> its chunk row, the entities it contains, the facts it supports."""
    kg_nodes = node.metadata.pop(KG_NODES_KEY, [])
    kg_rels = node.metadata.pop(KG_RELATIONS_KEY, [])
    rec = ChunkRecord(node.node_id, node.metadata["doc_id"], node.text, node.metadata.get("title", ""),
                      int(node.node_id.rsplit("#", 1)[1]), doc_hash=node.metadata.pop(DOC_HASH, ""))
    surfaces = {n.name: n.properties.get("surface", n.name) for n in kg_nodes if isinstance(n, EntityNode)}
    types = {n.name: n.properties.get("type", "") for n in kg_nodes if isinstance(n, EntityNode)}
    contained = [r.target_id for r in kg_rels if r.label == CONTAINS]
    for key in dict.fromkeys(contained):
        support_entity(state, key, surfaces.get(key, key), rec.id, new_entities, types.get(key, ""))
    take_attributes(state, kg_nodes)
    rec.entities = list(dict.fromkeys(contained))
    state.journal.touch("chunks", rec.id)
    state.chunks[rec.id] = rec
    for r in kg_rels:
        if r.label in (CONTAINS, SYNONYM):
            continue  # contains is in the record; synonyms are computed index-wide
        for key in (r.source_id, r.target_id):
            if key not in state.entities:  # e.g. an LLM triple naming a phrase not in the vocabulary
                support_entity(state, key, surfaces.get(key, key), rec.id, new_entities)
                rec.entities.append(key)
        support_fact(state, r, rec.id, new_facts)


def support_entity(state, key: str, surface: str, chunk_id: str, new_entities: set[str], type_: str = "") -> None:
    state.journal.touch("entities", key)
    ent = state.entities.get(key)
    if ent is None:
        ent = state.entities[key] = EntityRecord(key, surface, type=type_)
        new_entities.add(key)
    elif type_ and not ent.type:
        ent.type = type_
    ent.chunks.add(chunk_id)


def take_attributes(state, kg_nodes: list) -> None:
    """Entity attributes the extractors gave (records.entity_attributes) into the entity records: a later
    non-empty value replaces an earlier one (the PathRAG extractor hands the description merged so far)."""
    for n in kg_nodes:
        if isinstance(n, EntityNode) and n.name in state.entities:
            attrs = entity_attributes(n.properties)
            ent = state.entities[n.name]
            if attrs and any(ent.attributes.get(k) != v for k, v in attrs.items()):
                state.journal.touch("entities", n.name)
                ent.attributes = {**ent.attributes, **attrs}


def support_fact(state, r: Relation, chunk_id: str, new_facts: set[str], recomputed: bool = False) -> None:
    """``chunk_id`` states the relation ``r``: its fact gets the chunk (or is made). ``recomputed``: the relation
    is one of an older chunk's, recomputed by the link step, which the chunk may state already."""
    fid = fact_id(r.source_id, r.label, r.target_id)
    if recomputed and _supported(state.facts, fid, chunk_id):
        # Most of an old chunk's recomputed relations are ones it states already: nothing changes, so no copy for
        # the journal and no row for the next save (it would write the row back as it was).
        return
    state.journal.touch("facts", fid)
    fact = state.facts.get(fid)
    if fact is None:
        text = str(r.properties.get("text") or f"{r.source_id} {r.label} {r.target_id}")
        fact = state.facts[fid] = FactRecord(fid, r.source_id, r.label, r.target_id, text, str(r.properties.get("kind", "other")))
        new_facts.add(fid)
    fact.chunks.add(chunk_id)


def _supported(facts, fid: str, chunk_id: str) -> bool:
    """Whether fact ``fid`` exists and lists ``chunk_id`` among its chunks, read without making a record of it (a
    loaded fact's chunks are read from its column)."""
    if isinstance(facts, RowOverlay):
        return facts.lists(fid, "chunks", chunk_id)
    fact = facts.get(fid)
    return fact is not None and chunk_id in fact.chunks


def link_new_entities_to_old_chunks(state, new_entities: set[str], new_chunks: set[str], extraction: Extraction,
                                    new_facts: set[str]) -> list[str]:
    """Old chunks that mention an entity first extracted now (or a known term an earlier insert left unlinked,
    see build.link) get `contains` edges; with the statistical extractor their co-occurrence relations are
    recomputed too (the NER extractor's relations need a parse of the old chunk, which an insert does not
    redo)."""
    if not new_entities or len(state.chunks) == len(new_chunks):
        return []
    find = extraction.known_finder(frozenset(new_entities))
    touched = []
    for cid in chunks_that_may_mention(state, new_entities, new_chunks):
        rec = state.chunks[cid]
        found = find(rec.text, rec.entities) - set(rec.entities)
        if not found:
            continue
        touched.append(cid)
        state.journal.touch("chunks", cid)
        for key in sorted(found):  # a set's order would follow the process's string hashing: builds would differ
            state.journal.touch("entities", key)
            state.entities[key].chunks.add(cid)
            rec.entities.append(key)
        if extraction.cooccurrence is not None:  # pairs of the sentences that mention a key found now
            for r in extraction.cooccurrence.relations(rec.text, frozenset(rec.entities), cid, frozenset(found)):
                support_fact(state, r, cid, new_facts, recomputed=True)
    return touched


def chunks_that_may_mention(state, keys: set[str], new_chunks: set[str]) -> list[str]:
    """The older chunks, in table order, that write every word of one of ``keys``: every chunk a finder can
    match a name in (names are matched as whole normalised words, the words BM25 counts), found through BM25's
    term columns instead of reading every chunk. All older chunks when a key has no such word."""
    bm25 = state.bm25
    words = [bm25_tokens(k) for k in keys]
    if bm25 is None or bm25.ids != state.chunk_order or not all(words):
        return [c for c in state.chunks if c not in new_chunks]
    rows = bm25.rows_with_all(words)
    return [c for c in (bm25.ids[r] for r in rows.tolist()) if c not in new_chunks and c in state.chunks]


def unused_texts(state) -> set[str]:
    """Fact-text vectors no remaining fact uses."""
    if state.fact_vectors is None:
        return set()
    used = {text_key(t) for t in table_column(state.facts, "text")}
    return {k for k in state.fact_vectors.ids if k not in used}


def add_synonyms(state, new_entities: set[str]) -> None:
    if not new_entities or state.entity_vectors is None or len(state.entity_vectors) < 2:
        return
    ids = state.entity_vectors.ids
    min_chars = state.config.synonym_min_chars

    def eligible(rows: np.ndarray) -> np.ndarray:  # asked about the rows searched and found only, not every name
        return np.fromiter((sum(ch.isalnum() for ch in ids[r]) >= min_chars for r in rows.tolist()), bool, len(rows))

    table, config = state.entity_vectors, state.config
    rows = np.fromiter((table.row(k) for k in new_entities), np.int64, len(new_entities))  # searched in row order
    lists = table.lists if table.listed else None  # a large table's lists (made by the embed step, saved)
    limit = approx_min_rows()
    # Fewer new names than known ones (any insert into a large index, a later batch of a batched build): each new
    # name is searched in its nearest lists, kept from insert to insert. An inverted file trained anew would read
    # and assign every known name at each insert, a cost that grows with the index, not the insert.
    if lists is not None and limit > 0 and (len(rows) < limit or 2 * len(rows) <= len(table)):
        src, dst, sim = listed_synonym_pairs(lists, table.at, rows, config.synonym_threshold,
                                             config.synonym_max_per_entity, eligible)
    else:
        src, dst, sim = synonym_pairs(Blocks(table.blocks()), config.synonym_threshold, config.synonym_max_per_entity,
                                      rows, eligible)
    # Not between names their words tell apart: two people sharing a surname, "sars cov" / "sars cov 2".
    src, dst, sim = keep_alias_pairs(ids, lambda k: getattr(state.entities.get(k), "type", ""), src, dst, sim)
    for i, j, s in zip(src.tolist(), dst.tolist(), sim.tolist()):
        state.journal.touch("synonyms", (ids[i], ids[j]))
        state.synonyms[(ids[i], ids[j])] = float(s)
