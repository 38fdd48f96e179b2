"""Entity attributes live in the tables; the graph store is a projection of them.

Before: PathRAG's entity descriptions lived only in the graph store (EntityRecord had no field for them) and the
index's mirror writes replaced whole nodes, so ``index.delete(doc)`` erased a surviving neighbour's description,
and a failed refresh (whose restore re-upserts every entity) erased all of them.
"""

from __future__ import annotations

import pytest
from test_pathrag import _extraction_llm, _pg_index

from llama_index_graphrag_suite import GraphRAGIndex, IndexConfig
from llama_index_graphrag_suite.documents import make_document
from llama_index_graphrag_suite.embeddings import HashEmbedding
from llama_index_graphrag_suite.extractors.pathrag_extractor import PathRAGExtractor
from llama_index_graphrag_suite.methods.pathrag.render import node_source

HARBOUR = "A painting of 1901. | It hangs in the Vant Gallery."


def _from_pg() -> GraphRAGIndex:
    pg = _pg_index(PathRAGExtractor(llm=_extraction_llm(), max_gleaning=0))
    return GraphRAGIndex.from_property_graph_index(pg, embed_model=HashEmbedding(dim=64))


def _stored_description(index: GraphRAGIndex, key: str) -> str:
    return index.property_graph_store.graph.nodes[key].properties.get("description", "")


def test_the_tables_hold_the_extractor_s_attributes():
    index = _from_pg()
    harbour = index.entities["the grey harbour"]
    assert harbour.attributes == {"entity_type": "work", "description": HARBOUR}
    assert index.entities["ada lorne"].attributes["description"] == "A painter born in Marlow."


def test_deleting_a_neighbour_s_document_keeps_every_surviving_description():
    index = _from_pg()
    assert _stored_description(index, "the grey harbour") == HARBOUR
    index.delete("p-vant")  # p-vant's entities neighbour the harbour and the gallery
    survivors = [k for k, e in index.entities.items() if e.attributes.get("description")]
    assert "the grey harbour" in survivors and "ada lorne" in survivors
    for key in survivors:  # the store's node carries what the tables hold
        assert _stored_description(index, key) == index.entities[key].attributes["description"]
    assert "A painting of 1901." in node_source(index, "the grey harbour")[0]  # what PathRAG renders

    index.delete("p-harbour")  # the gallery's and the painting's own chunk: the painting stays (in p-ada)
    assert _stored_description(index, "ada lorne") == "A painter born in Marlow."
    assert _stored_description(index, "the grey harbour") == HARBOUR


def test_a_failed_refresh_keeps_every_description(monkeypatch):
    index = _from_pg()
    before = {k: e.attributes for k, e in index.entities.items()}
    assert "p-ada" in {c.doc_id for c in index.chunks.values()}
    changed = make_document("p-ada", "Ada Lorne was a painter from Marlow who painted harbours.", "Ada Lorne")

    def broken(*args, **kwargs):
        raise RuntimeError("embedding server down")

    monkeypatch.setattr(type(index.embed_model), "get_text_embedding_batch", broken)
    with pytest.raises(RuntimeError, match="embedding server down"):
        index.refresh([changed])
    assert {k: e.attributes for k, e in index.entities.items()} == before
    for key, attrs in before.items():
        if attrs.get("description"):
            assert _stored_description(index, key) == attrs["description"]


def test_attributes_from_an_extra_extractor_survive_persist_load_and_a_lazy_store(tmp_path):
    config = IndexConfig(entities="statistical", entity_threshold=0.1)
    from conftest import CORPUS

    docs = [make_document(i, text, title) for i, title, text in CORPUS]
    index = GraphRAGIndex.from_documents(docs, embed_model=HashEmbedding(dim=64), config=config,
                                         extra_extractors=[PathRAGExtractor(llm=_extraction_llm(), max_gleaning=0)])
    assert index.entities["the grey harbour"].attributes["description"] == HARBOUR
    index.delete("p-vant")
    index.persist(tmp_path / "idx")
    back = GraphRAGIndex.load(tmp_path / "idx", embed_model=HashEmbedding(dim=64))
    assert back.entities["the grey harbour"].attributes == {"entity_type": "work", "description": HARBOUR}
    # the lazy simple store, filled from the tables on first use, carries them too
    assert back.property_graph_store.graph.nodes["the grey harbour"].properties["description"] == HARBOUR


def test_an_index_saved_before_the_tables_held_attributes_takes_them_from_its_store(tmp_path):
    from format1 import to_format_1

    index = _from_pg()
    index.persist(tmp_path / "idx")
    version = to_format_1(tmp_path / "idx", index.snapshot, attributes=False)  # as an older library wrote it
    assert (version / "property_graph_store.json").is_file()  # the descriptions live only there
    back = GraphRAGIndex.load(tmp_path / "idx", embed_model=HashEmbedding(dim=64))
    assert back.entities["the grey harbour"].attributes["description"] == HARBOUR


def test_deleting_an_insert_gives_back_the_description_it_merged_into_an_older_entity(tmp_path):
    """Insert then delete restores the index (tests/faults/test_roundtrip.py), descriptions included."""
    from conftest import CORPUS

    docs = {i: make_document(i, text, title) for i, title, text in CORPUS}
    config = IndexConfig(entities="statistical", entity_threshold=0.1)
    index = GraphRAGIndex.from_documents([docs["p-ada"], docs["p-vant"]], embed_model=HashEmbedding(dim=64), config=config,
                                         extra_extractors=[PathRAGExtractor(llm=_extraction_llm(), max_gleaning=0)])
    before = {k: dict(e.attributes) for k, e in index.entities.items()}
    assert before["the grey harbour"]["description"] == "A painting of 1901."
    index.insert([docs["p-harbour"]])
    assert index.entities["the grey harbour"].attributes["description"] == HARBOUR
    index.persist(tmp_path / "idx")  # the record survives a save and a load
    index = GraphRAGIndex.load(tmp_path / "idx", embed_model=HashEmbedding(dim=64))
    index.delete("p-harbour")
    assert {k: dict(e.attributes) for k, e in index.entities.items()} == before
    assert index.state.provenance == []
