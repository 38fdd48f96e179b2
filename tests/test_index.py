"""The index contract: build, insert, delete, persist, load, and clear errors for bad indexes."""

import json


import numpy as np
import pytest

from llama_index_graphrag_suite import GraphRAGIndex, IndexConfig
from llama_index_graphrag_suite.documents import make_document
from llama_index_graphrag_suite.index import CorruptIndexError, IndexFormatError, IndexNotFoundError, build
from llama_index_graphrag_suite.index.records import text_key
from llama_index_graphrag_suite.registry import get_retriever

CONFIG = IndexConfig(entities="statistical", entity_threshold=0.3)


def assert_consistent(index: GraphRAGIndex) -> None:
    """Every artefact agrees with the tables, and the store mirrors them."""
    chunks, entities, facts = set(index.chunks), set(index.entities), set(index.facts)
    assert set(index.chunk_vectors.ids) == chunks
    assert set(index.entity_vectors.ids) == entities
    assert set(index.fact_vectors.ids) == {text_key(f.text) for f in index.facts.values()}
    assert sum(map(len, index.facts_by_text.values())) == len(facts)
    assert index.bm25.size == len(chunks)
    snap = index.snapshot
    assert snap.node_ids == list(index.entities) + index.chunk_order
    contains = {(c, k) for c, rec in index.chunks.items() for k in rec.entities}
    assert snap.num_edges == len(facts) + len(contains) + len(index.synonyms)
    for key, ent in index.entities.items():
        assert ent.chunks and ent.chunks <= chunks, key
        assert all(key in index.chunks[c].entities for c in ent.chunks)
    for f in index.facts.values():
        assert f.chunks and f.chunks <= chunks and {f.subject, f.object} <= entities
    for a, b in index.synonyms:
        assert {a, b} <= entities
    graph = index.property_graph_store.graph
    labels = {nid: n.label for nid, n in graph.nodes.items()}
    assert {n for n, lab in labels.items() if lab == "text_chunk"} == chunks
    assert {n for n, lab in labels.items() if lab != "text_chunk"} == entities
    expected = {(f.subject, f.predicate, f.object) for f in index.facts.values()}
    expected |= {(c, "contains", k) for c, k in contains}
    expected |= {(a, "synonym", b) for a, b in index.synonyms}
    assert set(graph.triplets) == expected
    graph.get_triplets()  # no dangling triplet (would raise KeyError)


@pytest.fixture
def index(documents, embed):
    return GraphRAGIndex.from_documents(documents, embed_model=embed, config=CONFIG)


def test_build_produces_a_consistent_graph(index):
    assert_consistent(index)
    s = index.stats()
    assert s["documents"] == 6 and s["chunks"] == 6 and s["entities"] >= 8 and s["relations"] >= 4
    assert "grey harbour" in index.chunks["p-ada#0"].entities  # linked by mention, not by its own score


def test_chunking_is_token_based_with_overlap(embed):
    text = " ".join(f"word{i}" for i in range(400))
    idx = GraphRAGIndex.from_documents([make_document("long", text)], embed_model=embed,
                                       config=IndexConfig(chunk_size=64, chunk_overlap=16))
    pieces = [idx.chunks[c].text.split() for c in idx.chunk_order]
    assert len(pieces) > 5
    for a, b in zip(pieces, pieces[1:]):
        assert a[-1] in b  # consecutive chunks overlap
    assert idx.chunk_order == [f"long#{i}" for i in range(len(pieces))]


def test_insert_updates_every_artefact_and_links_old_chunks(documents, embed):
    idx = GraphRAGIndex.from_documents(documents[:-1], embed_model=embed, config=CONFIG)
    before_chunks = set(idx.chunks)
    new = make_document("p-piers", "Piers Vant was a banker in Dunmore. Piers Vant collected paintings. "
                        "Piers Vant left his collection to the city.", "Piers Vant")
    new_ids = idx.insert([new])
    assert new_ids == ["p-piers#0"]
    assert set(idx.chunks) == before_chunks | set(new_ids)
    assert_consistent(idx)
    assert "piers vant" in idx.entities
    # the old chunk that names the new entity ("founded by Piers Vant") is linked to it
    assert idx.entities["piers vant"].chunks == {"p-piers#0", "p-vant#0"}
    assert any(f.subject == "vant gallery" and f.object == "piers vant" and f.chunks == {"p-vant#0"}
               for f in idx.facts.values())  # and its co-occurrence relations were recomputed
    hits = get_retriever(idx, "bm25", top_k=1).retrieve("banker collected paintings")
    assert hits[0].node.node_id == "p-piers#0"


def test_delete_removes_what_only_that_document_supported(index):
    only_harbour = {k for k, e in index.entities.items() if e.chunks == {"p-harbour#0"}}
    harbour_facts = {f for f, r in index.facts.items() if r.chunks == {"p-harbour#0"}}
    shared = {k for k, e in index.entities.items() if "p-harbour#0" in e.chunks and len(e.chunks) > 1}
    assert only_harbour and harbour_facts and shared
    assert index.delete("p-harbour") == 1
    assert_consistent(index)
    assert not (only_harbour & set(index.entities)) and not (harbour_facts & set(index.facts))
    assert shared <= set(index.entities)  # e.g. "grey harbour" is still named by the painter's page
    assert all("p-harbour#0" not in e.chunks for e in index.entities.values())
    assert "p-harbour#0" not in index.snapshot.node_ids
    hits = get_retriever(index, "hybrid", top_k=6).retrieve("fishing boats at dawn")
    assert all(h.node.metadata["doc_id"] != "p-harbour" for h in hits)
    with pytest.raises(KeyError):
        index.delete("p-harbour")


def test_insert_then_delete_round_trips(documents, embed):
    idx = GraphRAGIndex.from_documents(documents, embed_model=embed, config=CONFIG)
    state = (set(idx.chunks), set(idx.facts), set(idx.property_graph_store.graph.triplets))
    idx.insert([make_document("p-extra", "Zorvane Quill wrote Teal Mirrors. Zorvane Quill lived in Ostrel.", "Zorvane Quill")])
    assert_consistent(idx)
    idx.delete("p-extra")
    assert_consistent(idx)
    assert (set(idx.chunks), set(idx.facts), set(idx.property_graph_store.graph.triplets)) == state


def test_duplicate_document_is_refused(index, documents):
    with pytest.raises(ValueError, match="already in the index"):
        index.insert([documents[0]])


def test_persist_load_round_trip(index, tmp_path, embed):
    index.persist(tmp_path / "idx")
    loaded = GraphRAGIndex.load(tmp_path / "idx", embed_model=embed)
    assert_consistent(loaded)
    assert loaded.stats() == index.stats()
    assert loaded.config == index.config
    for name, arr in index.snapshot.to_arrays().items():
        np.testing.assert_array_equal(arr, loaded.snapshot.to_arrays()[name])
    q = "Which gallery holds The Grey Harbour?"
    for method in ("dense", "bm25", "hybrid"):
        a = [(n.node_id, round(n.score, 5)) for n in get_retriever(index, method).retrieve(q)]
        b = [(n.node_id, round(n.score, 5)) for n in get_retriever(loaded, method).retrieve(q)]
        assert a == b
    # the loaded index keeps working incrementally (statistics are recomputed from the chunks)
    loaded.insert([make_document("p-new", "Orla Finch sculpted The Copper Hare in Marlow.", "Orla Finch")])
    loaded.delete("p-ada")
    assert_consistent(loaded)
    assert not any(p.suffix == ".pkl" for p in (tmp_path / "idx").rglob("*"))


def test_missing_corrupt_and_newer_indexes_fail_clearly(index, tmp_path, embed):
    with pytest.raises(IndexNotFoundError, match="does not exist"):
        GraphRAGIndex.load(tmp_path / "nope", embed_model=embed)
    (tmp_path / "empty").mkdir()
    with pytest.raises(IndexNotFoundError, match="no index"):
        GraphRAGIndex.load(tmp_path / "empty", embed_model=embed)

    folder = index.persist(tmp_path / "idx")
    (facts,) = json.loads((folder / "manifest.json").read_text())["tables"]["facts"]
    segment = tmp_path / "idx" / "segments" / facts
    segment.write_bytes(segment.read_bytes()[:-20])  # truncated file
    with pytest.raises(CorruptIndexError, match=f"segment {facts} does not match its checksum"):
        GraphRAGIndex.load(tmp_path / "idx", embed_model=embed)

    folder = index.persist(tmp_path / "idx2")
    matrix = json.loads((folder / "manifest.json").read_text())["vectors"]["chunks"][0][1]
    (tmp_path / "idx2" / "segments" / matrix).unlink()
    with pytest.raises(CorruptIndexError, match=f"segment {matrix} is missing"):
        GraphRAGIndex.load(tmp_path / "idx2", embed_model=embed)

    folder = index.persist(tmp_path / "idx3")
    manifest = json.loads((folder / "manifest.json").read_text())
    manifest["format_version"] = 99
    (folder / "manifest.json").write_text(json.dumps(manifest))
    with pytest.raises(IndexFormatError, match="newer"):
        GraphRAGIndex.load(tmp_path / "idx3", embed_model=embed)


def test_crash_mid_write_keeps_previous_index_readable(index, tmp_path, embed, monkeypatch):
    target = tmp_path / "idx"
    index.persist(target)
    before = GraphRAGIndex.load(target, embed_model=embed).stats()
    index.delete("p-vant")

    def boom(self, matrix):
        raise OSError("disk full")

    from llama_index_graphrag_suite.index.tables import SegmentWriter

    monkeypatch.setattr(SegmentWriter, "matrix", boom)
    with pytest.raises(OSError, match="disk full"):
        index.persist(target)
    assert GraphRAGIndex.load(target, embed_model=embed).stats() == before
    assert [p.name for p in target.iterdir() if p.name.startswith("v-")] == ["v-000001"]  # no half-written version left
    monkeypatch.undo()
    index.persist(target)
    listed = json.loads((target / "v-000002" / "manifest.json").read_text())["segments"]
    listed |= json.loads((target / "v-000001" / "manifest.json").read_text())["segments"]
    assert {p.name for p in (target / "segments").iterdir()} == set(listed)  # the failed save's segments are gone
    assert GraphRAGIndex.load(target, embed_model=embed).stats() == index.stats()


def test_persist_refuses_a_foreign_folder(index, tmp_path):
    (tmp_path / "mine").mkdir()
    (tmp_path / "mine" / "notes.txt").write_text("keep me")
    with pytest.raises(FileExistsError):
        index.persist(tmp_path / "mine")
    assert (tmp_path / "mine" / "notes.txt").read_text() == "keep me"


def test_wrong_embedding_dimension_is_refused(index, tmp_path):
    from llama_index_graphrag_suite.embeddings import HashEmbedding

    index.persist(tmp_path / "idx")
    with pytest.raises(ValueError, match="128-dim"):
        GraphRAGIndex.load(tmp_path / "idx", embed_model=HashEmbedding(dim=64))


def test_llm_relations_join_the_graph_and_ungrounded_ones_are_dropped(documents, embed):
    from llama_index_graphrag_suite.llm import ScriptedLLM

    def respond(prompt: str) -> str:
        if "Tomas Brey was born in Dunmore" in prompt:
            return ('```json\n{"triples": [["Tomas Brey", "born in", "Dunmore"], '
                    '["Tomas Brey", "taught", "Ada Lorne"], ["Tomas Brey", "married", "Queen Mab"]]}\n```')
        return '{"triples": ['  # truncated output: nothing usable, nothing raised
    llm = ScriptedLLM(responder=respond)
    idx = GraphRAGIndex.from_documents(documents, embed_model=embed, config=CONFIG, llm=llm)
    assert_consistent(idx)
    llm_facts = {(f.subject, f.predicate, f.object) for f in idx.facts.values() if f.kind == "llm"}
    assert llm_facts == {("tomas brey", "born in", "dunmore"), ("tomas brey", "taught", "ada lorne")}
    assert "queen mab" not in idx.entities  # hallucinated: not in the chunk
    assert idx.build_info["llm_calls"] == len(documents)
    fact = next(f for f in idx.facts.values() if f.predicate == "born in")
    assert fact.chunks == {"p-brey#0"} and fact.text == "Tomas Brey born in Dunmore"


def test_llm_usage_is_counted_per_build_and_the_cache_spares_a_rebuild(documents, embed, tmp_path):
    from llama_index_graphrag_suite.llm import RobustLLM, ScriptedLLM

    inner = ScriptedLLM(responder=lambda prompt: '{"triples": []}')
    llm = RobustLLM(inner, cache=tmp_path / "cache.sqlite")
    first = GraphRAGIndex.from_documents(documents, embed_model=embed, config=CONFIG, llm=llm)
    assert first.build_info["llm_calls"] == len(documents)
    assert first.build_info["llm_usage"]["calls"] == len(documents) and inner.call_count == len(documents)
    assert first.build_info["llm_usage"]["prompt_tokens"] > 0
    second = GraphRAGIndex.from_documents(documents, embed_model=embed, config=CONFIG,
                                          llm=RobustLLM(inner, cache=tmp_path / "cache.sqlite"))
    assert inner.call_count == len(documents)  # every answer came from the cache
    assert second.build_info["llm_usage"]["cache_hits"] == len(documents)
    assert second.build_info["llm_usage"]["calls"] == 0


def test_the_store_serves_llamaindex_own_tools(index):
    pg = index.as_property_graph_index()
    assert pg.property_graph_store is index.property_graph_store
    triplets = index.property_graph_store.get_triplets(entity_names=["grey harbour"])
    assert triplets and all("grey harbour" in (s.id, o.id) for s, _, o in triplets)
    chunk = index.property_graph_store.get_llama_nodes(["p-ada#0"])[0]
    assert chunk.text == index.chunks["p-ada#0"].text


def test_failed_insert_leaves_the_index_as_it_was(index, embed, monkeypatch):
    from llama_index_graphrag_suite.llm import ScriptedLLM

    state = (index.stats(), {k: set(e.chunks) for k, e in index.entities.items()},
             {k: list(c.entities) for k, c in index.chunks.items()}, set(index.property_graph_store.graph.triplets))
    index.llm = ScriptedLLM(responses=[], fail_from=0)  # the LLM server is down
    doc = make_document("p-new", "Piers Vant was a banker. Piers Vant founded the Vant Gallery. Piers Vant lived in Marlow.",
                        "Piers Vant")
    with pytest.raises(Exception):
        index.insert([doc])
    index.llm = None

    def broken_embed(ctx, texts, what):  # embedding fails after the tables were touched
        raise RuntimeError("embedder crashed")

    monkeypatch.setattr(build, "embed_texts", broken_embed)
    with pytest.raises(RuntimeError, match="embedder crashed"):
        index.insert([doc])
    monkeypatch.undo()
    assert (index.stats(), {k: set(e.chunks) for k, e in index.entities.items()},
            {k: list(c.entities) for k, c in index.chunks.items()}, set(index.property_graph_store.graph.triplets)) == state
    assert_consistent(index)
    index.insert([doc])  # and the same document goes in fine afterwards
    assert_consistent(index)
    assert "piers vant" in index.entities and "p-vant#0" in index.entities["piers vant"].chunks


def test_fact_search_returns_facts_by_text_similarity(index, embed):
    q = index.embed_query("The Esk River reaches the sea at Marlow.")
    hits = index.search_facts(q, 3)
    assert hits[0][1] == pytest.approx(1.0, abs=1e-5)
    assert index.facts[hits[0][0]].text == "The Esk River reaches the sea at Marlow."
    assert [s for _, s in hits] == sorted((s for _, s in hits), reverse=True)
    # a sentence shared by several relations is embedded and stored once
    doc = make_document("p-three", "Lina Oster, Bram Oster and Cato Oster founded Osterbank in Marlow.", "Osterbank")
    index.insert([doc])
    shared = [f for f in index.facts.values() if f.chunks == {"p-three#0"}]
    assert len(shared) >= 3 and len({f.text for f in shared}) == 1
    assert len(index.fact_vectors) == len({f.text for f in index.facts.values()}) < len(index.facts)
