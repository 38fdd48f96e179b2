"""ArchRAG's bottom layer read as arrays (attributes.py) gives the texts and vectors the per-fact Python code gave:
on an index in memory (fact records), a loaded one (fact columns, vectors mapped) and a loaded one after an insert
(changed rows over the columns)."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp

from llama_index_graphrag_suite.methods.archrag import attributes


# ----------------------------------------------------------------- the per-fact code these functions replace

def _old_ends(index):
    facts = index.facts
    if hasattr(facts, "arrow_column"):
        return tuple(facts.arrow_column(c).to_pylist() for c in ("subject", "object", "text"))
    if hasattr(facts, "layout"):
        return tuple(facts.column(c) for c in ("subject", "object", "text"))
    records = [facts[fid] for fid in index.fact_ids]
    return [f.subject for f in records], [f.object for f in records], [f.text for f in records]


def _old_texts(entity_ids, ends):
    row = {k: i for i, k in enumerate(entity_ids)}
    counts = [dict() for _ in entity_ids]
    for subject, object_, text in zip(*ends):
        for end in (subject, object_):
            i = row.get(end)
            if i is not None:
                counts[i][text] = counts[i].get(text, 0) + 1
    return [" ".join(sorted(c, key=lambda t: -c[t])[:2]) for c in counts]


def _old_vectors(index, entity_ids, ends):
    table = index.entity_vectors
    out = np.asarray(table.vectors()[np.fromiter((table.row(k) for k in entity_ids), np.int64)], np.float32)
    out /= np.maximum(np.linalg.norm(out, axis=1, keepdims=True), 1e-12)
    row = {k: i for i, k in enumerate(entity_ids)}
    fact_rows = np.asarray(index.fact_text_rows, np.int64)
    at_subject = np.fromiter((row.get(k, -1) for k in ends[0]), np.int64)
    at_object = np.fromiter((row.get(k, -1) for k in ends[1]), np.int64)
    both = at_object != at_subject
    rows, cols = np.concatenate([at_subject, at_object[both]]), np.concatenate([fact_rows, fact_rows[both]])
    known = rows >= 0
    texts = index.fact_vectors.vectors()
    incidence = sp.csr_matrix((np.ones(int(known.sum()), np.float32), (rows[known], cols[known])),
                              shape=(len(entity_ids), texts.shape[0]))
    incidence.data[:] = 1.0
    incidence.sum_duplicates()
    incidence.data[:] = 1.0
    sums = np.asarray(incidence @ texts, np.float32)
    sums /= np.maximum(np.linalg.norm(sums, axis=1, keepdims=True), 1e-12)
    out += sums
    out /= np.maximum(np.linalg.norm(out, axis=1, keepdims=True), 1e-12)
    return out


# ----------------------------------------------------------------------------------------------- tests

@pytest.fixture(scope="module")
def indexes(tmp_path_factory):
    from llama_index_graphrag_suite import GraphRAGIndex, IndexConfig
    from llama_index_graphrag_suite.documents import make_document
    from llama_index_graphrag_suite.embeddings import HashEmbedding
    from tests.conftest import CORPUS

    docs = [make_document(i, text, title) for i, title, text in CORPUS]
    embed = HashEmbedding(dim=64)
    config = IndexConfig(entities="statistical", entity_threshold=0.1)
    built = GraphRAGIndex.from_documents(docs[:-2], embed_model=embed, config=config)
    folder = tmp_path_factory.mktemp("attributes") / "idx"
    built.persist(folder)
    loaded = GraphRAGIndex.load(folder, embed_model=embed)
    changed = GraphRAGIndex.load(folder, embed_model=embed)
    changed.insert(docs[-2:])  # rows over the columns; the vector tables get a second block
    return {"records": built, "columns": loaded, "overlay": changed}


@pytest.mark.parametrize("kind", ["records", "columns", "overlay"])
def test_texts_and_vectors_are_the_per_fact_ones(indexes, kind, monkeypatch):
    index = indexes[kind]
    ids = list(index.entities)
    old = _old_ends(index)
    ends = attributes.fact_ends(index, ids)
    assert ends.subject_rows.size == len(old[0]) and len(ids) > 10
    assert attributes.entity_names(index, ids) == [index.entities[k].surface for k in ids]
    assert attributes.entity_names(index, ids[::-1]) == [index.entities[k].surface for k in ids[::-1]]
    texts = attributes.entity_texts(ends, len(ids))
    assert texts == _old_texts(ids, old) and any(texts) and not all(texts)
    expected = _old_vectors(index, ids, old)
    assert attributes.attribute_vectors(index, ids, ends).tobytes() == expected.tobytes()
    monkeypatch.setattr(attributes, "SUM_BLOCK", 3)  # blocks of three entities: the same numbers
    assert attributes.attribute_vectors(index, ids, ends).tobytes() == expected.tobytes()


def test_sentences_rank_by_relations_then_first_seen_and_a_self_fact_counts_twice():
    ends = attributes.FactEnds(subject_rows=np.array([0, 1, 0, 2, 2, -1]), object_rows=np.array([1, 0, 1, 2, 0, 0]),
                               text_codes=np.array([0, 1, 1, 2, 3, 3]), texts=attributes.pa.array(["a", "b", "c", "d"]))
    # entity 0: a x1, b x2, d x2 (b seen first) -> "b d"; entity 1: a, b x2 -> "b a"; entity 2: c x2, d -> "c d"
    assert attributes.entity_texts(ends, 4) == ["b d", "b a", "c d", ""]
    assert attributes.entity_texts(ends, 4, first=1) == ["b", "b", "c", ""]


def test_dropping_a_tables_mapped_pages_leaves_its_rows_readable(indexes):
    table = indexes["columns"].fact_vectors
    assert isinstance(table.blocks()[0], np.memmap)  # a loaded table's rows are mapped
    before = np.array(table.vectors())
    table.at(np.arange(len(table)))  # read every page
    table.drop_mapped_pages()
    assert np.array_equal(table.vectors(), before)


@pytest.mark.parametrize("kind", ["records", "columns", "overlay"])
@pytest.mark.parametrize("extra", [[], ["no such entity"]])
def test_entity_chunks_from_the_snapshot_are_the_records_chunk_sets(indexes, kind, extra):
    from llama_index_graphrag_suite.methods.archrag.hierarchy import _entity_chunks
    from llama_index_graphrag_suite.methods.shared_graph import ChunkPositions

    index = indexes[kind]
    ids = list(index.entities) + extra  # extra: a hierarchy row the index no longer has (no chunks)
    position = ChunkPositions(index)
    rows, cols = [], []
    for r, key in enumerate(ids):
        rec = index.entities.get(key)
        for cid in (rec.chunks if rec else ()):
            if cid in position:
                rows.append(r)
                cols.append(position[cid])
    old = sp.csr_matrix((np.ones(len(rows), np.float32), (rows, cols)), shape=(len(ids), len(position)))
    new = _entity_chunks(index, ids)
    old.sort_indices()
    new.sort_indices()
    assert old.nnz > len(ids) and old.shape == new.shape
    assert np.array_equal(old.indptr, new.indptr) and np.array_equal(old.indices, new.indices)
    assert old.data.tobytes() == new.data.tobytes()
