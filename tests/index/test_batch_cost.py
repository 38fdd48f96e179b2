"""A later batch of a batched build does work that follows the batch, not the index it goes into.

Each test inserts into a loaded index (read-only columns with the changed rows over them, as every batch after the
first of ``build_in_batches``) and checks a count, never a time: the link step writes no fact it does not change,
a save places the changed rows without reading every row, and the graph snapshot maps the loaded rows by
whole-array joins instead of a Python lookup per row. The tables and the snapshot stay those the records give
(``test_row_overlay.py``, ``test_batched_build.py``).
"""

from __future__ import annotations

import random

import pytest

from llama_index_graphrag_suite import GraphRAGIndex, IndexConfig
from llama_index_graphrag_suite.documents import make_document
from llama_index_graphrag_suite.embeddings import HashEmbedding
from llama_index_graphrag_suite.index import rows as rows_module
from llama_index_graphrag_suite.index import state as state_module
from llama_index_graphrag_suite.index import tables as tables_module
from llama_index_graphrag_suite.index.row_overlay import RowOverlay

from conftest import CORPUS

CONFIG = IndexConfig(entities="statistical", entity_threshold=0.1)
# "dunmore" is written in three older chunks but is no entity of its own yet; this document makes it one, so the
# link step links it there and recomputes those chunks' co-occurrence relations (most of which they state already)
LINKING = [make_document("n-dunmore", "Dunmore is a city on a bay. Dunmore has a port. Dunmore grew around its art "
                                      "school and museum.", "Dunmore")]


def _loaded(tmp_path) -> tuple[GraphRAGIndex, GraphRAGIndex]:
    """(an index built in memory, its saved copy loaded back)."""
    docs = [make_document(i, text, title) for i, title, text in CORPUS]
    built = GraphRAGIndex.from_documents(docs, embed_model=HashEmbedding(dim=64), config=CONFIG)
    built.persist(tmp_path / "idx")
    return built, GraphRAGIndex.load(tmp_path / "idx", embed_model=HashEmbedding(dim=64))


def test_the_link_step_touches_only_the_facts_it_changes(tmp_path, monkeypatch):
    _, loaded = _loaded(tmp_path)
    before = GraphRAGIndex.load(tmp_path / "idx", embed_model=HashEmbedding(dim=64))
    calls = {"support": 0, "skipped": 0}
    support, supported = rows_module.support_fact, rows_module._supported

    def counted_support(*args, **kwargs):
        calls["support"] += 1
        return support(*args, **kwargs)

    def counted_supported(*args):
        found = supported(*args)
        calls["skipped"] += found
        return found

    monkeypatch.setattr(rows_module, "support_fact", counted_support)
    monkeypatch.setattr(rows_module, "_supported", counted_supported)
    loaded.insert(LINKING)
    changed = loaded.state.journal.last.rows
    old_chunks = [c for c, what in changed["chunks"].items() if what == "changed"]
    assert old_chunks, "the link step reached no older chunk: the test corpus no longer exercises it"
    assert calls["skipped"] > 0  # relations an old chunk stated already
    for fid, what in changed["facts"].items():  # every fact row the change recorded (and the save writes) changed
        if what == "changed":
            assert before.facts[fid].to_json() != loaded.facts[fid].to_json(), fid
    assert len(changed["facts"]) <= calls["support"] - calls["skipped"]


def test_an_insert_into_a_loaded_index_equals_one_into_the_records_after_linking(tmp_path):
    built, loaded = _loaded(tmp_path)
    for index in (built, loaded):
        index.insert(LINKING)
    assert isinstance(loaded.state.facts, RowOverlay)
    for name in ("chunks", "entities", "facts"):
        assert [r.to_json() for r in getattr(loaded, name).values()] == [r.to_json() for r in getattr(built, name).values()]
    assert dict(loaded.state.synonyms.items()) == dict(built.state.synonyms.items())
    assert list(loaded.snapshot.node_ids) == list(built.snapshot.node_ids)
    for name, array in built.snapshot.to_arrays().items():
        assert (loaded.snapshot.to_arrays()[name] == array).all(), name
    assert (loaded.state.entity_vector_rows == built.state.entity_vector_rows).all()
    assert loaded.state.bm25.ids == built.state.bm25.ids
    assert (loaded.state.bm25.counts != built.state.bm25.counts).nnz == 0
    again = GraphRAGIndex.load(loaded.persist(tmp_path / "b").parent, embed_model=HashEmbedding(dim=64))
    for name in ("chunks", "entities", "facts"):
        assert [r.to_json() for r in getattr(again, name).values()] == [r.to_json() for r in getattr(built, name).values()]
    assert again.state.bm25.ids == built.state.bm25.ids
    assert (again.state.bm25.counts != built.state.bm25.counts).nnz == 0


def test_the_snapshot_of_a_loaded_index_maps_its_rows_by_whole_columns(tmp_path, monkeypatch):
    """After an insert into a loaded index, the snapshot reads no column of every row as Python values (the facts'
    subjects and objects, the entity keys of every link) and looks up only the held and added rows one by one."""
    _, loaded = _loaded(tmp_path)
    used, read = [], []
    edges = state_module.overlay_edges
    monkeypatch.setattr(state_module, "overlay_edges", lambda *a: used.append(1) or edges(*a))
    loaded.insert(LINKING)
    for cls in {type(t.base) for t in (loaded.state.chunks, loaded.state.entities, loaded.state.facts)}:
        def column(self, name, original=cls.column):
            read.append((type(self).__name__, name))
            return original(self, name)

        monkeypatch.setattr(cls, "column", column)
    used.clear()
    snapshot = loaded.state.build_snapshot()
    assert used == [1] and read == []
    monkeypatch.undo()
    records = {name: dict(getattr(loaded.state, name).items()) for name in ("chunks", "entities", "facts")}
    plain = state_module.IndexState(config=loaded.state.config, chunks=records["chunks"], entities=records["entities"],
                                    facts=records["facts"], synonyms=loaded.state.synonyms)
    plain.chunk_order = list(plain.chunks)
    expected = plain.build_snapshot()  # the per-row path over records
    assert snapshot.node_ids == expected.node_ids
    for name, array in expected.to_arrays().items():
        assert (snapshot.to_arrays()[name] == array).all(), name


def test_a_save_places_the_changed_rows_without_reading_every_row(tmp_path, monkeypatch):
    _, loaded = _loaded(tmp_path)
    loaded.insert(LINKING)
    iterated = []
    original_iter, write = RowOverlay.__iter__, tables_module.write_tables

    def counted_iter(self):
        iterated.append(type(self.base).__name__)
        return original_iter(self)

    def counted_write(*args, **kwargs):
        monkeypatch.setattr(RowOverlay, "__iter__", counted_iter)
        try:
            return write(*args, **kwargs)
        finally:
            monkeypatch.setattr(RowOverlay, "__iter__", original_iter)

    import llama_index_graphrag_suite.index.persistence as persistence

    monkeypatch.setattr(persistence, "write_tables", counted_write, raising=False)
    monkeypatch.setattr(tables_module, "write_tables", counted_write)
    loaded.persist(tmp_path / "idx")
    assert iterated == []
    built, _ = _loaded(tmp_path / "again")
    built.insert(LINKING)
    again = GraphRAGIndex.load(tmp_path / "idx", embed_model=HashEmbedding(dim=64))
    for name in ("chunks", "entities", "facts"):
        assert [r.to_json() for r in getattr(again, name).values()] == [r.to_json() for r in getattr(built, name).values()]


@pytest.mark.parametrize("seed", range(10))
def test_positions_and_order_of_keys_are_the_table_order(seed):
    """``RowOverlay.positions`` / ``in_order`` give what a scan of the table gives, after adds, removals and re-adds."""
    rng = random.Random(seed)
    from test_row_overlay import Columns, Row

    overlay = RowOverlay(Columns([Row(f"k{i}", i) for i in range(40)]))
    for step in range(120):
        key = f"k{rng.randrange(60)}"
        if rng.random() < 0.4 and key in overlay:
            del overlay[key]
        else:
            overlay[key] = Row(key, step)
    order = list(overlay)
    keys = rng.sample(order, min(15, len(order))) + ["absent"]
    assert overlay.positions(keys[:-1]).tolist() == [order.index(k) for k in keys[:-1]]
    assert overlay.in_order(keys) == [k for k in order if k in set(keys)]
    with pytest.raises(KeyError):
        overlay.positions(["absent"])


def test_chunk_ids_behave_as_the_set_they_stand_for():
    import numpy as np

    from llama_index_graphrag_suite.index.records import ChunkIds

    ids = [f"c{i}" for i in range(10)]
    lazy = ChunkIds(ids, np.array([1, 3, 5], np.int32))
    lazy.add("c9")
    lazy.add("c3")  # already in the base rows
    twin = lazy.copy()
    assert lazy._set is None and twin._set is None  # added to and copied unread
    twin.add("c0")
    assert lazy == {"c1", "c3", "c5", "c9"} and {"c1", "c3", "c5", "c9"} == lazy and len(lazy) == 4
    assert twin == {"c0", "c1", "c3", "c5", "c9"}  # the copy's change did not reach the original, nor the reverse
    lazy.discard("c1")
    assert "c1" not in lazy and "c1" in twin and sorted(lazy) == ["c3", "c5", "c9"]
    assert lazy - {"c3"} == {"c5", "c9"} and {"c3", "x"} - lazy == {"x"} and lazy | {"x"} == {"c3", "c5", "c9", "x"}
    assert lazy.issubset(twin) and lazy.union({"y"}) == {"c3", "c5", "c9", "y"} and isinstance(lazy - set(), set)
    again = lazy.copy()
    again.add("z")
    assert "z" not in lazy and isinstance(again, set)  # a read one copies as a plain set
    lazy.clear()
    assert not lazy and len(twin) == 5


def test_an_insert_reads_no_old_entity_s_chunk_set(tmp_path):
    """The tables and link steps add the new chunks to old entities and the journal copies them, without making a
    set of every chunk an old entity is in; the tables read afterwards are those of the records (above)."""
    from llama_index_graphrag_suite.index.records import ChunkIds

    built, loaded = _loaded(tmp_path)
    loaded.insert(LINKING)
    entities = loaded.state.entities
    old = [k for k in built.entities if k in entities._rows]  # old entities the insert changed
    assert old and all(isinstance(entities._rows[k].chunks, ChunkIds) for k in old)
    assert all(entities._rows[k].chunks._set is None for k in old)  # never made whole
    built.insert(LINKING)
    assert {k: sorted(entities[k].chunks) for k in old} == {k: sorted(built.entities[k].chunks) for k in old}
