"""A loaded index holds its chunks, entities and facts as read-only columns (index/*_columns.py), not one record
each; they read as the records a build made, and the first change turns them into records again."""

from __future__ import annotations

import gc

import numpy as np
import pyarrow as pa
import pytest

from llama_index_graphrag_suite import GraphRAGIndex, IndexConfig
from llama_index_graphrag_suite.documents import make_document
from llama_index_graphrag_suite.embeddings import HashEmbedding
from llama_index_graphrag_suite.index.chunk_columns import ChunkColumns
from llama_index_graphrag_suite.index.entity_columns import EntityColumns
from llama_index_graphrag_suite.index.fact_columns import FactColumns
from llama_index_graphrag_suite.index.records import ChunkRecord, EntityRecord, FactRecord, fact_id
from llama_index_graphrag_suite.index.row_overlay import RowOverlay
from llama_index_graphrag_suite.registry import get_retriever

from conftest import CORPUS

CONFIG = IndexConfig(entities="statistical", entity_threshold=0.1)
QUESTION = "Where was the teacher of Ada Lorne born?"


@pytest.fixture(scope="module")
def built_and_loaded(tmp_path_factory):
    docs = [make_document(i, text, title) for i, title, text in CORPUS]
    built = GraphRAGIndex.from_documents(docs, embed_model=HashEmbedding(dim=64), config=CONFIG)
    folder = tmp_path_factory.mktemp("idx") / "idx"
    built.persist(folder)
    return built, folder


def _records(kind: type) -> int:
    return sum(type(o) is kind for o in gc.get_objects())


def test_a_loaded_index_holds_no_record_per_fact_and_reads_as_the_built_one(built_and_loaded):
    built, folder = built_and_loaded
    before = _records(FactRecord), _records(EntityRecord), _records(ChunkRecord)
    loaded = GraphRAGIndex.load(folder, embed_model=HashEmbedding(dim=64))
    assert isinstance(loaded.state.facts, FactColumns)
    # the load keeps no record per row (the built index's own are older; a load's checks read a few entities)
    made = _records(FactRecord) - before[0], _records(EntityRecord) - before[1], _records(ChunkRecord) - before[2]
    assert made[0] <= 0 and max(made[1:]) <= 4 < len(built.entities) // 4, made
    assert len(loaded.facts) == len(built.facts) > 10
    assert list(loaded.facts) == list(built.facts) and list(loaded.fact_ids) == list(built.fact_ids)
    assert [f.to_json() for f in loaded.facts.values()] == [f.to_json() for f in built.facts.values()]
    assert {k: list(v) for k, v in loaded.facts_by_text.items()} == {k: list(v) for k, v in built.facts_by_text.items()}
    assert list(loaded.fact_text_rows) == list(built.fact_text_rows)
    assert loaded.stats() == built.stats()
    assert isinstance(loaded.state.chunks, ChunkColumns) and list(loaded.chunks) == list(built.chunks)
    assert [c.to_json() for c in loaded.chunks.values()] == [c.to_json() for c in built.chunks.values()]
    assert isinstance(loaded.state.entities, EntityColumns) and list(loaded.entities) == list(built.entities)
    assert [e.to_json() for e in loaded.entities.values()] == [e.to_json() for e in built.entities.values()]
    key = max(built.entities, key=lambda k: len(built.entities[k].chunks))
    assert loaded.entities[key] == built.entities[key] and len(loaded.entities[key].chunks) > 1
    for method in ("agrag", "pathrag", "a2rag", "archrag"):
        got = [(n.node_id, round(n.score, 6)) for n in get_retriever(loaded, method).retrieve(QUESTION)]
        assert got == [(n.node_id, round(n.score, 6)) for n in get_retriever(built, method).retrieve(QUESTION)]


def test_lookups_by_id(built_and_loaded):
    built, folder = built_and_loaded
    facts = GraphRAGIndex.load(folder, embed_model=HashEmbedding(dim=64)).state.facts
    fid = next(iter(built.facts))
    assert facts[fid] == built.facts[fid] and fid in facts
    for missing in (fid.upper(), "f-" + "0" * 16, fid[:-1], "x", 3, None):
        assert missing not in facts and facts.get(missing) is None
    with pytest.raises(KeyError):
        facts["f-nothere"]
    copy = facts[fid]
    copy.chunks.add("elsewhere")  # a record read is a copy: the table does not change
    assert "elsewhere" not in facts[fid].chunks


def test_ids_of_another_form_are_looked_up_too():
    rec = FactRecord("my fact", "a", "knows", "b", "a knows b", "llm", {"c1"})
    table = pa.table({"id": ["my fact", fact_id("a", "x", "b")], "subject": ["a", "a"], "predicate": ["knows", "x"],
                      "object": ["b", "b"], "text": ["a knows b", "a x b"], "kind": ["llm", "llm"],
                      "chunks": [["c1"], ["c2"]]})
    facts = FactColumns(table)
    assert facts["my fact"] == rec and len(facts) == 2 and list(facts) == ["my fact", fact_id("a", "x", "b")]
    twice = pa.table({c: table.column(c).take([0, 0]) for c in table.column_names})
    with pytest.raises(ValueError, match="twice"):
        FactColumns(twice)


def test_a_change_holds_only_the_rows_it_reaches_as_records_and_a_save_reads_back(built_and_loaded, tmp_path):
    built, folder = built_and_loaded
    loaded = GraphRAGIndex.load(folder, embed_model=HashEmbedding(dim=64))
    loaded.insert([make_document("new", "Orla Finch sculpted The Copper Hare in Marlow with Ada Lorne.", "Orla Finch")])
    assert len(loaded.facts) > len(built.facts)
    for table in (loaded.state.chunks, loaded.state.entities, loaded.state.facts):
        assert isinstance(table, RowOverlay) and 0 < table.held() < len(table)
    loaded.delete("new")
    assert [f.to_json() for f in loaded.facts.values()] == [f.to_json() for f in built.facts.values()]
    again = GraphRAGIndex.load(loaded.persist(tmp_path / "b").parent, embed_model=HashEmbedding(dim=64))
    assert [f.to_json() for f in again.facts.values()] == [f.to_json() for f in built.facts.values()]
    assert [e.to_json() for e in again.entities.values()] == [e.to_json() for e in built.entities.values()]
    assert [c.to_json() for c in again.chunks.values()] == [c.to_json() for c in built.chunks.values()]
    assert again.stats() == built.stats()


def test_fact_ids_of_the_usual_form_are_found_by_value_and_one_listed_twice_is_refused():
    ids = [fact_id(f"s{i}", "p", f"o{i}") for i in range(50)]
    table = pa.table({"id": ids, "subject": ["a"] * 50, "predicate": ["p"] * 50, "object": ["b"] * 50,
                      "text": [f"t{i}" for i in range(50)], "kind": ["llm"] * 50, "chunks": [["c"]] * 50})
    facts = FactColumns(table)
    assert [facts[f].text for f in reversed(ids)] == [f"t{i}" for i in reversed(range(50))]
    twice = pa.table({c: table.column(c).take(list(range(50)) + [17]) for c in table.column_names})
    with pytest.raises(ValueError, match=f"lists a key twice \\('{ids[17]}'\\)"):
        FactColumns(twice)


def test_fact_ids_are_found_by_bucket_at_the_ends_of_the_range_and_near_misses_are_not():
    rng = np.random.default_rng(7)
    values = sorted({0, 1, 2**63, 2**64 - 1, *rng.integers(0, 2**63, 3000, dtype=np.uint64).tolist()})
    ids = [f"f-{v:016x}" for v in values][::-1]  # table order is not value order
    n = len(ids)
    table = pa.table({"id": ids, "subject": ["a"] * n, "predicate": ["p"] * n, "object": ["b"] * n,
                      "text": [f"t{i}" for i in range(n)], "kind": ["llm"] * n, "chunks": [["c"]] * n})
    facts = FactColumns(table)
    assert [facts._find(f) for f in ids] == list(range(n))
    held = set(values)
    near = [f"f-{v + d:016x}" for v in values[:200] for d in (-1, 1) if 0 <= v + d < 2**64 and v + d not in held]
    # int() reads these as 1, the value of "f-0000000000000001", which the table holds
    odd = ["f-+000000000000001", "f-0_00000000000001", "f- 000000000000001", "f-" + "1" * 17]
    assert near and all(facts._find(f) == -1 for f in near + odd)
