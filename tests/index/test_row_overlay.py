"""RowOverlay: the rows a change reached, as records over read-only columns, behave as the dict of records did."""

from __future__ import annotations

import random
from dataclasses import dataclass, field

import pytest

from llama_index_graphrag_suite import GraphRAGIndex, IndexConfig
from llama_index_graphrag_suite.documents import make_document
from llama_index_graphrag_suite.embeddings import HashEmbedding
from llama_index_graphrag_suite.index.row_columns import RowColumns
from llama_index_graphrag_suite.index.row_overlay import RowOverlay, table_column

from conftest import CORPUS


@dataclass
class Row:
    key: str
    value: int
    tags: list = field(default_factory=list)


class Columns(RowColumns):
    """Read-only rows for the test: records made from two lists, as the index's columns make them."""

    def __init__(self, rows: list[Row]) -> None:
        super().__init__([r.key for r in rows], "test")
        self._values = [r.value for r in rows]
        self._tags = [list(r.tags) for r in rows]

    def _make(self, row: int) -> Row:
        return Row(self._keys[row], self._values[row], list(self._tags[row]))

    def _copy(self, rec: Row) -> Row:
        return Row(rec.key, rec.value, list(rec.tags))

    def column(self, name: str) -> list:
        return list(self._values) if name == "value" else [list(t) for t in self._tags]


def snapshot(table) -> list[tuple]:
    return [(k, r.value, tuple(r.tags)) for k, r in table.items()]


@pytest.mark.parametrize("seed", range(20))
def test_an_overlay_does_what_the_dict_of_records_does(seed):
    rng = random.Random(seed)
    rows = [Row(f"k{i}", i, [i]) for i in range(30)]
    model = {r.key: Row(r.key, r.value, list(r.tags)) for r in rows}
    overlay = RowOverlay(Columns(rows))
    checkpoints = []
    for step in range(200):
        op = rng.random()
        key = f"k{rng.randrange(45)}"
        if op < 0.3 and key in model:  # change a row in place, read by key
            model[key].value += 1
            model[key].tags.append(step)
            rec = overlay[key]
            rec.value += 1
            rec.tags.append(step)
        elif op < 0.5:  # set (added at the end when absent)
            model[key] = Row(key, -step)
            overlay[key] = Row(key, -step)
        elif op < 0.7 and key in model:
            del model[key]
            del overlay[key]
        elif op < 0.75:
            with pytest.raises(KeyError):
                overlay["nope"]
        elif op < 0.8:
            checkpoints.append((overlay.checkpoint(), {k: Row(r.key, r.value, list(r.tags)) for k, r in model.items()}))
        elif op < 0.85 and checkpoints:  # as the journal rolls back: keys and order, then its copies of the rows
            checkpoint, before = checkpoints.pop()
            overlay.restore(checkpoint)
            for k, r in before.items():
                overlay[k] = Row(r.key, r.value, list(r.tags))
            model = before
            checkpoints.clear()
        assert len(overlay) == len(model)
        assert list(overlay) == list(model)
        assert (key in overlay) == (key in model)
    assert snapshot(overlay) == snapshot(model)
    assert table_column(overlay, "value") == [r.value for r in model.values()]
    assert table_column(model, "value") == [r.value for r in model.values()]


def test_reads_outside_a_change_hold_no_record():
    overlay = RowOverlay(Columns([Row("a", 1), Row("b", 2)]))
    overlay.editing = False
    overlay["a"].value = 99  # a copy: the table does not change
    assert overlay["a"].value == 1 and overlay.held() == 0
    overlay.editing = True
    overlay["a"].value = 99
    assert overlay["a"].value == 99 and overlay.held() == 1


def _index(tmp_path):
    config = IndexConfig(entities="statistical", entity_threshold=0.1)
    docs = [make_document(i, text, title) for i, title, text in CORPUS]
    built = GraphRAGIndex.from_documents(docs, embed_model=HashEmbedding(dim=64), config=config)
    built.persist(tmp_path / "idx")
    return built, tmp_path / "idx"


def test_inserts_into_a_loaded_index_equal_inserts_into_the_records(tmp_path):
    """The same two inserts and a delete, into the built index (records) and into its loaded copy (columns with an
    overlay): the same tables, snapshot and saved version."""
    built, folder = _index(tmp_path)
    loaded = GraphRAGIndex.load(folder, embed_model=HashEmbedding(dim=64))
    new = [make_document("n1", "Orla Finch sculpted The Copper Hare in Marlow with Ada Lorne.", "Orla Finch"),
           make_document("n2", "Ada Lorne wrote about Marlow and The Copper Hare.", "Marlow notes")]
    for index in (built, loaded):
        index.insert(new[:1])
        index.insert(new[1:])
        index.delete(CORPUS[0][0])
    assert isinstance(loaded.state.facts, RowOverlay)
    for name in ("chunks", "entities", "facts"):
        assert [r.to_json() for r in getattr(loaded, name).values()] == [r.to_json() for r in getattr(built, name).values()]
    assert loaded.stats() == built.stats()
    assert list(loaded.snapshot.node_ids) == list(built.snapshot.node_ids)
    for name, array in built.snapshot.to_arrays().items():
        assert (loaded.snapshot.to_arrays()[name] == array).all(), name
    again = GraphRAGIndex.load(loaded.persist(tmp_path / "b").parent, embed_model=HashEmbedding(dim=64))
    for name in ("chunks", "entities", "facts"):
        assert [r.to_json() for r in getattr(again, name).values()] == [r.to_json() for r in getattr(built, name).values()]


def test_a_failed_insert_into_a_loaded_index_leaves_it_as_it_was(tmp_path, monkeypatch):
    _, folder = _index(tmp_path)
    loaded = GraphRAGIndex.load(folder, embed_model=HashEmbedding(dim=64))
    before = {name: [r.to_json() for r in getattr(loaded, name).values()] for name in ("chunks", "entities", "facts")}

    class Boom(Exception):
        pass

    def fail(*args, **kwargs):
        raise Boom()

    import llama_index_graphrag_suite.index.rows as rows

    monkeypatch.setattr(rows, "add_synonyms", fail)  # after the tables, link and embed steps changed rows
    with pytest.raises(Boom):
        loaded.insert([make_document("n1", "Orla Finch sculpted The Copper Hare in Marlow with Ada Lorne.", "Orla")])
    for name, rows_before in before.items():
        assert [r.to_json() for r in getattr(loaded, name).values()] == rows_before
