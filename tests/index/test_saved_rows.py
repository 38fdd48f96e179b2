"""A fact's ends and text, and a chunk's links, are saved as rows beside their names (``fact_columns.SAVED_ROWS``,
``saved_rows.LINK_ROWS``): a load checks those rows instead of joining every name again, and joins by name only the
rows the check refutes (``saved_rows.py``)."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pytest

from llama_index_graphrag_suite import GraphRAGIndex, IndexConfig
from llama_index_graphrag_suite.documents import make_document
from llama_index_graphrag_suite.embeddings import HashEmbedding
from llama_index_graphrag_suite.index import saved_rows
from llama_index_graphrag_suite.index.fact_columns import SAVED_ROWS, FactColumns, with_saved_rows
from llama_index_graphrag_suite.index.records import fact_id

from conftest import CORPUS

CONFIG = IndexConfig(entities="statistical", entity_threshold=0.1)
NEW = make_document("new", "Orla Finch sculpted The Copper Hare in Marlow with Ada Lorne.", "Orla Finch")


@pytest.fixture
def joined(monkeypatch) -> list[int]:
    """How many names each join by name looked up (the work the saved rows spare a load)."""
    sizes: list[int] = []
    join = saved_rows.joined

    def counted(names, keys):
        sizes.append(len(names))
        return join(names, keys)

    monkeypatch.setattr(saved_rows, "joined", counted)
    return sizes


def _edges(index) -> tuple[list[int], list[int], list[int]]:
    snap = index.state.snapshot
    return snap.edge_src.tolist(), snap.edge_dst.tolist(), snap.edge_kind.tolist()


def _load(folder):
    return GraphRAGIndex.load(folder, embed_model=HashEmbedding(dim=64))


def test_a_load_reads_the_saved_rows_and_joins_no_name_after_a_build_and_after_an_insert(tmp_path, joined):
    docs = [make_document(i, text, title) for i, title, text in CORPUS]
    built = GraphRAGIndex.from_documents(docs, embed_model=HashEmbedding(dim=64), config=CONFIG)
    built.persist(tmp_path / "idx")
    joined.clear()
    loaded = _load(tmp_path / "idx")
    assert joined == [] and len(loaded.facts) > 10
    assert _edges(loaded) == _edges(built)

    loaded.insert([NEW])  # the insert's snapshot reads the loaded facts' rows too: no join of theirs
    assert sum(joined) == 0
    loaded.persist(tmp_path / "idx")  # an appended segment, with the new facts' rows
    again = _load(tmp_path / "idx")
    assert joined == [] and _edges(again) == _edges(loaded)
    assert list(again.fact_text_rows) == list(loaded.fact_text_rows)


def test_rows_a_delete_moved_are_joined_by_name_and_the_graph_is_the_one_saved(tmp_path, joined):
    docs = [make_document(i, text, title) for i, title, text in CORPUS]
    built = GraphRAGIndex.from_documents(docs, embed_model=HashEmbedding(dim=64), config=CONFIG)
    built.persist(tmp_path / "idx")
    loaded = _load(tmp_path / "idx")
    loaded.delete(CORPUS[0][0])  # its entities go: every entity row after them moves up
    loaded.persist(tmp_path / "idx")
    joined.clear()
    again = _load(tmp_path / "idx")
    # at most two ends and a text per fact and each link of a chunk
    assert 0 < sum(joined) <= 3 * len(again.facts) + again.stats()["contains_edges"]
    assert _edges(again) == _edges(loaded)
    assert list(again.fact_text_rows) == list(loaded.fact_text_rows)
    assert [c.entities for c in again.chunks.values()] == [c.entities for c in loaded.chunks.values()]
    names = [(f.subject, f.object) for f in again.facts.values()]
    keys = list(again.entities)
    snap = again.state.snapshot
    assert [(keys[a], keys[b]) for a, b in zip(snap.edge_src[:len(names)], snap.edge_dst[:len(names)])] == names


def _facts(subjects: list[str], objects: list[str], saved: list[int | None] | None) -> FactColumns:
    n = len(subjects)
    predicates = [f"p{i}" for i in range(n)]  # one fact per row, whichever names repeat
    cols = {"id": [fact_id(*f) for f in zip(subjects, predicates, objects)], "subject": subjects,
            "predicate": predicates, "object": objects, "text": [" ".join(f) for f in zip(subjects, predicates, objects)],
            "kind": ["x"] * n, "chunks": [["c"]] * n}
    if saved is not None:
        cols[SAVED_ROWS["subject"]] = pa.array(saved, pa.int32())
        cols[SAVED_ROWS["object"]] = pa.array([None] * n, pa.int32())
    return FactColumns(pa.table(cols))


def test_a_saved_row_is_used_only_where_the_key_there_is_the_facts_name(joined):
    keys = pa.array(["ada", "ben", "cy", "dee"])
    # right, wrong (another entity's row), out of range, negative, missing, and a name the keys lack
    facts = _facts(["ben", "cy", "dee", "ada", "cy", "zed"], ["ada"] * 6, [1, 0, 9, -3, None, 2])
    assert facts.end_rows("subject", keys).tolist() == [1, 2, 3, 0, 2, -1]
    assert joined == [5]  # every row but the one whose saved row names it
    joined.clear()
    assert facts.end_rows("object", keys).tolist() == [0] * 6 and joined == [6]  # no saved rows: all joined
    plain = _facts(["ben", "zed"], ["ada", "ada"], None)  # a version saved before the rows were
    assert plain.end_rows("subject", keys).tolist() == [1, -1]


def test_segments_saved_before_the_rows_were_read_with_later_ones():
    old = _facts(["ada"], ["ben"], None).arrow()
    new = _facts(["ben"], ["cy"], [1]).arrow()
    for column, row in zip(SAVED_ROWS.values(), (1, 2, 0)):
        new = new.append_column(column, pa.array([row], pa.int32()))
    both = with_saved_rows([old, new])
    assert [t.column_names for t in both] == [new.column_names] * 2
    assert both[0].column(SAVED_ROWS["subject"]).null_count == 1
    assert with_saved_rows([old]) == [old]
    facts = FactColumns(pa.concat_tables(both))
    assert facts.end_rows("subject", pa.array(["ada", "ben", "cy"])).tolist() == [0, 1]
    assert np.array_equal(facts.end_rows("object", pa.array(["ada", "ben", "cy"])), [1, 2])


def test_a_chunks_saved_link_rows_are_used_where_they_name_its_entities(joined):
    from llama_index_graphrag_suite.index.tables import _link_codes

    keys = pa.array(["ada", "ben", "cy"])
    linked = pa.array([["ben", "cy"], [], ["ada"]], pa.list_(pa.string()))
    saved = pa.array([[1, 0], [], [0]], pa.list_(pa.int32()))  # "cy" saved at the row of "ada": refuted
    offsets, codes = _link_codes(linked, keys, ["c1", "c2", "c3"], saved)
    assert offsets.tolist() == [0, 2, 2, 3] and codes.tolist() == [1, 2, 0] and joined == [1]
    joined.clear()
    other = pa.array([[1], [], [0, 2]], pa.list_(pa.int32()))  # as many rows, other lengths: not used at all
    assert _link_codes(linked, keys, ["c1", "c2", "c3"], other)[1].tolist() == [1, 2, 0] and joined == [3]
    with pytest.raises(ValueError, match="unknown entity 'zed'"):
        _link_codes(pa.array([["zed"]], pa.list_(pa.string())), keys, ["c1"], pa.array([[0]], pa.list_(pa.int32())))


def test_a_table_written_in_slices_saves_the_rows_of_the_whole_table(tmp_path, joined, monkeypatch):
    from llama_index_graphrag_suite.index import tables

    monkeypatch.setattr(tables, "WHOLE_SLICE_ROWS", 4)  # every table of the corpus in several slices
    docs = [make_document(i, text, title) for i, title, text in CORPUS]
    built = GraphRAGIndex.from_documents(docs, embed_model=HashEmbedding(dim=64), config=CONFIG)
    assert len(built.facts) > 4 and len(built.chunks) > 4
    built.persist(tmp_path / "idx")
    joined.clear()
    loaded = _load(tmp_path / "idx")
    assert joined == [] and _edges(loaded) == _edges(built)
    assert [c.entities for c in loaded.chunks.values()] == [c.entities for c in built.chunks.values()]
