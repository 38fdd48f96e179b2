"""ArchRAG hierarchy and retriever on the shared corpus (HashEmbedding): layers, search, chunk mapping, persistence."""

from __future__ import annotations

import numpy as np
import pytest

from llama_index_graphrag_suite import GraphRAGIndex, IndexConfig
from llama_index_graphrag_suite.embeddings import HashEmbedding
from llama_index_graphrag_suite.llm import ScriptedLLM
from llama_index_graphrag_suite.methods.scoring import minmax
from llama_index_graphrag_suite.methods.archrag import (ArchRAGConfig, ArchRAGHierarchy, ArchRAGRetriever, ChunkRanking,
                                                       RelationScope)

pytestmark = pytest.mark.usefixtures("evidence_in_retrieve")  # these tests read the evidence node

# Small clusters and a low node floor, so the six-passage corpus gets several community layers.
CONFIG = ArchRAGConfig(max_cluster_size=4, min_nodes=3, k_per_layer=3)
QUESTION = "Where was the painter Ada Lorne born?"


@pytest.fixture(scope="module")
def index():
    from tests.conftest import CORPUS
    from llama_index_graphrag_suite.documents import make_document
    from llama_index_graphrag_suite.embeddings import HashEmbedding

    docs = [make_document(i, text, title) for i, title, text in CORPUS]
    return GraphRAGIndex.from_documents(docs, embed_model=HashEmbedding(dim=128), config=IndexConfig(entities="statistical", entity_threshold=0.1))


@pytest.fixture(scope="module")
def hierarchy(index):
    return ArchRAGHierarchy.build(index, CONFIG)


def split(nodes):
    return [n for n in nodes if n.node.metadata["kind"] == "chunk"], [n for n in nodes if n.node.metadata["kind"] == "evidence"]


def test_hierarchy_layers_are_a_tree_over_the_entities(index, hierarchy):
    h = hierarchy
    assert h.entity_ids == list(index.entities) and len(h.memberships) >= 2
    assert h.chnsw.layer_sizes == [len(h.entity_ids)] + h.communities_per_layer()
    sizes = [len(h.entity_ids)] + h.communities_per_layer()
    for layer, membership in enumerate(h.memberships, start=1):
        assert membership.shape == (sizes[layer - 1],)
        assert sorted(set(membership.tolist())) == list(range(sizes[layer]))  # every community has members
        assert np.bincount(membership).max() <= CONFIG.max_cluster_size
        assert sizes[layer] < sizes[layer - 1]
    assert h.cost["communities_per_layer"] == sizes[1:]
    assert h.cost["summary_llm_calls"] == 0 and h.summary_kind == "extractive"
    assert set(h.cost["seconds"]) >= {"attribute_vectors", "clustering_and_summaries", "chnsw", "total"}
    # The extractive summary of a community starts with its most central member's name.
    members = h.community_members(1, 0)
    names = {index.entities[h.entity_ids[r]].surface for r in members}
    assert h.summaries[0][0].split(":")[0] in names
    assert np.allclose(np.linalg.norm(h.entity_vectors, axis=1), 1.0, atol=1e-5)


def test_retriever_searches_every_layer_and_ranks_chunks_by_best_item(index, hierarchy):
    retriever = ArchRAGRetriever(index, top_k=3, hierarchy=hierarchy, variant="best_item")
    chunks, evidence = split(retriever.retrieve(QUESTION))
    assert len(evidence) == 1 and 1 <= len(chunks) <= 3
    ev = evidence[0].node.metadata["evidence"]
    assert [l["layer"] for l in ev["layers"]] == list(range(hierarchy.num_layers))  # every layer searched
    assert all(len([i for i in l["items"] if i["kind"] != "relation"]) <= 3 for l in ev["layers"])
    assert "ada lorne" in [i["id"] for i in ev["layers"][0]["items"]]
    assert chunks[0].node.node_id == "p-ada::0" or chunks[0].node.metadata["doc_id"] == "p-ada"
    # Each chunk's score is the best score among the items that map to it (recomputed by hand).
    items = retriever.retrieve_items(QUESTION)
    order = index.chunk_order
    for node in chunks:
        pos = order.index(node.node.node_id)
        assert node.node.metadata["raw_score"] == pytest.approx(max(i["score"] for i in items if pos in i["chunks"]))
    scores = [n.score for n in chunks]
    assert scores == sorted(scores, reverse=True)


def test_relations_join_two_retrieved_entities(index, hierarchy):
    items = ArchRAGRetriever(index, hierarchy=hierarchy, k_per_layer=5).retrieve_items(QUESTION)
    entities = {i["id"] for i in items if i["kind"] == "entity"}
    relations = [i for i in items if i["kind"] == "relation"]
    assert relations, "the top entities of this corpus are linked"
    for r in relations:
        f = index.facts[r["id"]]
        assert f.subject in entities and f.object in entities
    assert [r["score"] for r in relations] == sorted((r["score"] for r in relations), reverse=True)


def test_incident_relations_touch_a_retrieved_entity(index, hierarchy):
    items = ArchRAGRetriever(index, hierarchy=hierarchy, relation_scope="incident", max_relations=4).retrieve_items(QUESTION)
    entities = {i["id"] for i in items if i["kind"] == "entity"}
    relations = [i for i in items if i["kind"] == "relation"]
    assert 1 <= len(relations) <= 4
    assert all(index.facts[r["id"]].subject in entities or index.facts[r["id"]].object in entities for r in relations)


def test_variants(index, hierarchy):
    only = ArchRAGRetriever(index, hierarchy=hierarchy, variant="entities_only")
    ev = split(only.retrieve(QUESTION))[1][0].node.metadata["evidence"]
    assert [l["layer"] for l in ev["layers"]] == [0]
    two = split(ArchRAGRetriever(index, hierarchy=hierarchy, variant="two_layers").retrieve(QUESTION))[1][0]
    assert [l["layer"] for l in two.node.metadata["evidence"]["layers"]] == [0, 1]
    no_knn = ArchRAGRetriever(index, config=CONFIG, variant="no_knn")
    assert no_knn.hierarchy.config.augment is False and no_knn.hierarchy.cost["knn_edges_per_layer"][0] == 0
    with pytest.raises(ValueError):
        ArchRAGRetriever(index, variant="bogus")
    with pytest.raises(ValueError):
        ArchRAGRetriever(index, hierarchy=hierarchy, variant="no_knn")


def test_hierarchy_is_cached_per_snapshot(index):
    a = ArchRAGRetriever(index, config=CONFIG)
    b = ArchRAGRetriever(index, config=CONFIG)
    assert a.hierarchy is b.hierarchy


def test_save_and_load_round_trip(index, hierarchy, tmp_path):
    hierarchy.save(tmp_path / "arch")
    loaded = ArchRAGHierarchy.load(tmp_path / "arch", index)
    assert all((a == b).all() for a, b in zip(loaded.memberships, hierarchy.memberships))
    assert loaded.summaries == hierarchy.summaries and loaded.config == hierarchy.config
    same = [n.node.node_id for n in ArchRAGRetriever(index, hierarchy=loaded).retrieve(QUESTION)]
    assert same == [n.node.node_id for n in ArchRAGRetriever(index, hierarchy=hierarchy).retrieve(QUESTION)]
    assert not list((tmp_path / "arch").rglob("*.pkl"))
    assert not list((tmp_path / "arch").rglob("entity_vectors.npy"))  # the vectors are stored once, in the C-HNSW
    assert isinstance(loaded.entity_vectors, np.memmap) and all(isinstance(v, np.memmap) for v in loaded.community_vectors)

    class Other:
        entities = {"someone": None}

    with pytest.raises(ValueError, match="different index"):
        ArchRAGHierarchy.load(tmp_path / "arch", Other())


def test_llm_summaries_with_a_failure_and_a_malformed_answer(index):
    calls = {"n": 0}

    def respond(prompt: str) -> str:
        calls["n"] += 1
        if calls["n"] == 2:
            return "{not json at all"
        return '{"title": "Scripted title", "summary": "Scripted summary of the members."}'

    llm = ScriptedLLM(responder=respond, fail_on={1})
    h = ArchRAGHierarchy.build(index, CONFIG, llm=llm)
    total = sum(h.communities_per_layer())
    assert h.summary_kind == "llm"
    assert h.cost["summary_llm_calls"] == total == llm.call_count
    assert h.cost["summary_llm_failures"] == 1 and h.cost["summary_extractive_fallbacks"] == 2
    flat = [s for layer in h.summaries for s in layer]
    assert flat.count("Scripted summary of the members.") == total - 2
    assert h.cost["summary_prompt_tokens"] > 0 and h.cost["summary_completion_tokens"] > 0
    first = llm.prompts[0]
    assert "Members (name: description)" in first and "Relations among the members" in first


def test_filter_graph_over_the_retriever(index, hierarchy):
    from langgraph_agents.archrag_filter import build_archrag_filter_graph

    def respond(prompt: str) -> str:
        if "Reports:" in prompt:
            return "Marlow"
        return '{"report": "born in Marlow", "score": 90}' if "Marlow" in prompt else '{"report": "", "score": 0}'

    retriever = ArchRAGRetriever(index, hierarchy=hierarchy)
    out = build_archrag_filter_graph(retriever, ScriptedLLM(responder=respond)).invoke({"question": QUESTION})
    assert out["answer"] == "Marlow"
    assert len(out["reports"]) == len(retriever.retrieve_items(QUESTION))
    assert any(r["score"] == 90 for r in out["reports"])


def test_chunk_items_and_dense_boost_ranking(index, hierarchy):
    q = index.embed_query(QUESTION)
    dense = index.chunk_dense_scores(q)
    order = index.chunk_order
    # dense_boost: each chunk's blended dense/BM25 score plus item_weight x its best item score (0 when no item
    # maps to it).
    boosted = ArchRAGRetriever(index, top_k=6, hierarchy=hierarchy, chunk_ranking="dense_boost", sparse_weight=0.25,
                                                              item_weight=0.1)
    chunks, _ = split(boosted.retrieve(QUESTION))
    best, _ = boosted._chunk_scores(boosted.retrieve_items(QUESTION), dense)
    base = 0.75 * minmax(dense) + 0.25 * minmax(index.bm25.scores(QUESTION))
    expected = base + 0.1 * np.where(np.isfinite(best), best, 0.0)
    for node in chunks:
        assert node.node.metadata["raw_score"] == pytest.approx(expected[order.index(node.node.node_id)], abs=1e-6)
    assert len(chunks) == min(6, len(order))
    # chunk_top_k: the top dense chunks are items with their own cosine, shown in the evidence.
    with_chunks = ArchRAGRetriever(index, hierarchy=hierarchy, chunk_top_k=2)
    ev = split(with_chunks.retrieve(QUESTION))[1][0].node.metadata["evidence"]
    chunk_items = [i for i in ev["layers"][0]["items"] if i["kind"] == "chunk"]
    top2 = [order[c] for c in np.argsort(-dense, kind="stable")[:2]]
    assert [i["id"] for i in chunk_items] == top2
    with pytest.raises(ValueError):
        ArchRAGRetriever(index, hierarchy=hierarchy, chunk_ranking="bogus")


def test_hierarchy_is_saved_beside_the_index_and_reused(tmp_path, index):
    from llama_index_graphrag_suite.methods.archrag import ArchRAGHierarchy, ArchRAGRetriever

    first = ArchRAGRetriever(index).hierarchy
    index.persist(tmp_path / "idx")
    loaded = GraphRAGIndex.load(tmp_path / "idx", embed_model=HashEmbedding(dim=128))
    builds = []
    original = ArchRAGHierarchy.build
    try:
        ArchRAGHierarchy.build = classmethod(lambda cls, *a, **k: builds.append(1) or original.__func__(cls, *a, **k))
        again = ArchRAGRetriever(loaded).hierarchy
    finally:
        ArchRAGHierarchy.build = original
    assert not builds  # read from the index folder, not rebuilt
    assert [m.tolist() for m in again.memberships] == [m.tolist() for m in first.memberships]


def _networkx_ppr_on_chunks(index, restart: dict[str, float], damping: float) -> dict[str, float]:
    """Independent reference: networkx PageRank on the index graph (parallel edges summed), chunk nodes only."""
    import networkx as nx

    snap = index.snapshot
    graph = nx.Graph()
    graph.add_nodes_from(snap.node_ids)
    for u, v in zip(snap.edge_src.tolist(), snap.edge_dst.tolist()):
        a, b = snap.node_ids[u], snap.node_ids[v]
        w = graph[a][b]["weight"] + 1.0 if graph.has_edge(a, b) else 1.0
        graph.add_edge(a, b, weight=w)
    ranks = nx.pagerank(graph, alpha=damping, personalization=restart, weight="weight", tol=1e-12, max_iter=1000)
    return {c: ranks[c] for c in index.chunk_order}


def test_ppr_refine_restarts_from_the_items_and_the_chunk_items(index, hierarchy):
    order = index.chunk_order
    # items only: restart on the retrieved entities (by score) and each community's entities (score spread evenly)
    refine = ArchRAGRetriever(index, top_k=len(order), hierarchy=hierarchy, chunk_ranking="ppr_refine")
    items = refine.retrieve_items(QUESTION)
    restart: dict[str, float] = {}
    for item in items:
        weight = max(item["score"], 0.0)
        if item["kind"] == "entity":
            restart[item["id"]] = restart.get(item["id"], 0.0) + weight
        elif item["kind"] == "community":
            members = [hierarchy.entity_ids[r] for r in np.flatnonzero(hierarchy.entity_community[item["layer"] - 1] == item["row"])]
            for key in members:
                restart[key] = restart.get(key, 0.0) + weight / len(members)
    expected = _networkx_ppr_on_chunks(index, restart, 0.85)
    chunks, evidence = split(refine.retrieve(QUESTION))
    assert [n.node.node_id for n in chunks] == sorted(order, key=lambda c: -expected[c])
    for node in chunks:
        assert node.node.metadata["raw_score"] == pytest.approx(expected[node.node.node_id], rel=1e-4)
    assert evidence[0].node.metadata["evidence"]["chunk_ranking"] == "ppr_refine"

    # chunk_share 1.0 ignores the items: the walk restarts from the top chunk items alone, by their cosine
    dense = index.chunk_dense_scores(index.embed_query(QUESTION))
    top = np.argsort(-dense, kind="stable")[:2]
    only_chunks = ArchRAGRetriever(index, top_k=3, hierarchy=hierarchy, chunk_ranking="ppr_refine", chunk_top_k=2,
                                   chunk_share=1.0, ppr_damping=0.5)
    expected = _networkx_ppr_on_chunks(index, {order[c]: float(dense[c]) for c in top}, 0.5)
    chunks, evidence = split(only_chunks.retrieve(QUESTION))
    assert [n.node.node_id for n in chunks] == sorted(order, key=lambda c: -expected[c])[:3]
    assert evidence[0].node.metadata["evidence"]["chunk_share"] == 1.0

    # the named variant brings 3 chunk items; bad shares and damping are refused
    assert ArchRAGRetriever(index, hierarchy=hierarchy, variant="ppr_refine").config.chunk_top_k == 3
    for bad in ({"chunk_share": 1.5}, {"ppr_damping": 1.0}):
        with pytest.raises(ValueError):
            ArchRAGRetriever(index, hierarchy=hierarchy, chunk_ranking="ppr_refine", **bad)


# ---------------------------------------------------------------------------------------- config, presets, prompts


def test_variants_are_presets_of_the_config():
    assert set(ArchRAGConfig.PRESETS) == {"no_knn", "entities_only", "two_layers", "dense_boost", "best_item", "ppr_refine", "paper"}
    assert ArchRAGConfig.resolve(variant="no_knn").augment is False
    assert ArchRAGConfig.resolve(variant="entities_only").search_layers == 1
    assert ArchRAGConfig.resolve(variant="two_layers").search_layers == 2
    assert ArchRAGConfig.resolve(variant="dense_boost").chunk_ranking == "dense_boost"
    ppr = ArchRAGConfig.resolve(variant="ppr_refine")
    assert ppr.chunk_ranking is ChunkRanking.PPR_REFINE and ppr.chunk_top_k == 3
    assert ArchRAGConfig.resolve(variant="ppr_refine", chunk_top_k=5).chunk_top_k == 5  # overrides come after the preset
    assert ArchRAGConfig(relation_scope="incident").relation_scope is RelationScope.INCIDENT
    defaults = ArchRAGConfig()
    assert (defaults.k_per_layer, defaults.ef, defaults.max_relations, defaults.chunk_top_k, defaults.item_weight,
            defaults.chunk_share, defaults.ppr_damping, defaults.max_cluster_size, defaults.knn_percentile) == (
        5, 64, 10, 0, 0.2, 0.5, 0.85, 15, 80.0)
    for bad in ({"k_per_layer": 0}, {"ef": 0}, {"search_layers": 0}, {"max_relations": -1}, {"chunk_top_k": -1},
                {"chunk_share": 1.5}, {"ppr_damping": 1.0}, {"objective": "louvain"}, {"community_vector": "mean"},
                {"relation_scope": "all"}, {"max_cluster_size": 1}, {"summary_members": 0}, {"no_such_setting": 1}):
        with pytest.raises(ValueError):
            ArchRAGConfig(**bad)


def test_a_variant_is_the_same_as_its_settings(index, hierarchy):
    def ids(nodes):
        return [(n.node.node_id, n.score) for n in split(nodes)[0]]

    for variant, settings in (("two_layers", {"search_layers": 2}), ("dense_boost", {"chunk_ranking": "dense_boost"}),
                              ("ppr_refine", {"chunk_ranking": "ppr_refine", "chunk_top_k": 3})):
        named = ArchRAGRetriever(index, hierarchy=hierarchy, variant=variant).retrieve(QUESTION)
        explicit = ArchRAGRetriever(index, hierarchy=hierarchy, **settings).retrieve(QUESTION)
        assert ids(named) == ids(explicit)
        assert split(named)[1][0].node.metadata["evidence"]["variant"] == variant
        assert split(explicit)[1][0].node.metadata["evidence"]["variant"] == "full"


def test_hierarchy_digest_depends_on_the_hierarchy_fields_only(index):
    # the name hierarchies were saved under before the config merge (and before the faiss C-HNSW builder)
    assert ArchRAGConfig(chnsw_builder="insertion").hierarchy_digest() == "8250adb964c0"
    base = ArchRAGConfig().hierarchy_digest()
    assert base != "8250adb964c0"
    searching = ArchRAGConfig(k_per_layer=3, ef=10, search_layers=2, chunk_ranking="ppr_refine", chunk_top_k=2,
                              relation_scope="incident", max_relations=4)
    assert searching.hierarchy_digest() == base
    assert ArchRAGConfig(augment=False).hierarchy_digest() != base
    assert ArchRAGConfig(community_vector="summary").hierarchy_digest() != base
    # one hierarchy serves every search setting
    a = ArchRAGRetriever(index, config=CONFIG)
    b = ArchRAGRetriever(index, config=CONFIG, variant="dense_boost", k_per_layer=2, relation_scope="incident")
    assert a.hierarchy is b.hierarchy


def test_prompts_are_listed_and_update_prompts_changes_the_summary_prompt(index):
    retriever = ArchRAGRetriever(index, config=CONFIG)
    assert set(retriever.get_prompts()) == {"community_summary", "filter_analysis", "final_answer", "answer"}

    from llama_index.core import PromptTemplate

    answer = '{"title": "Scripted title", "summary": "Scripted summary."}'
    custom_llm = ScriptedLLM(responder=lambda prompt: answer)
    custom = ArchRAGRetriever(index, config=CONFIG, llm=custom_llm)
    custom.update_prompts({"community_summary": PromptTemplate(
        "CUSTOM SUMMARY PROMPT\nMembers:\n{members}\nLinks:\n{relations}\nJSON:")})
    h = custom.hierarchy
    assert h.summary_kind == "llm" and custom_llm.call_count == sum(h.communities_per_layer())
    assert all(p.startswith("CUSTOM SUMMARY PROMPT") and "Members (name: description)" not in p
               for p in custom_llm.prompts)
    # the default prompt writes other summaries: its own artefact, the default wording
    default_llm = ScriptedLLM(responder=lambda prompt: answer)
    default = ArchRAGRetriever(index, config=CONFIG, llm=default_llm).hierarchy
    assert default is not h and "Members (name: description)" in default_llm.prompts[0]
    with pytest.raises(KeyError):
        custom.update_prompts({"no_such_prompt": PromptTemplate("x")})


def test_filter_graph_reads_the_retrievers_prompts(index, hierarchy):
    from langgraph_agents.archrag_filter import build_archrag_filter_graph
    from llama_index.core import PromptTemplate

    retriever = ArchRAGRetriever(index, hierarchy=hierarchy)
    retriever.update_prompts({
        "filter_analysis": PromptTemplate("RATE ({kind}, {layer}) {content} FOR {question}"),
        "final_answer": PromptTemplate("FINAL {question}\n{reports}"),
    })
    llm = ScriptedLLM(rules=[(r"^FINAL", "Marlow"), (r"^RATE", '{"report": "seen", "score": 50}')])
    out = build_archrag_filter_graph(retriever, llm).invoke({"question": QUESTION})
    assert out["answer"] == "Marlow"
    assert len(llm.prompts) == len(retriever.retrieve_items(QUESTION)) + 1
    assert all(p.startswith(("RATE", "FINAL")) for p in llm.prompts)


def test_a_hierarchy_saved_with_its_own_vector_files_still_loads(index, hierarchy, tmp_path):
    """Saved before the layers' vectors were kept only in the C-HNSW: ``entity_vectors.npy`` and
    ``community_vectors_L.npy`` beside it are read."""
    from llama_index_graphrag_suite.index.storage import open_version

    hierarchy.save(tmp_path / "arch")
    target, _ = open_version(tmp_path / "arch")
    np.save(target / "entity_vectors.npy", np.asarray(hierarchy.entity_vectors))
    for layer, vectors in enumerate(hierarchy.community_vectors, start=1):
        np.save(target / f"community_vectors_{layer}.npy", np.asarray(vectors))
    loaded = ArchRAGHierarchy.load(tmp_path / "arch", index)
    assert np.array_equal(loaded.entity_vectors, hierarchy.entity_vectors)
    same = [n.node.node_id for n in ArchRAGRetriever(index, hierarchy=loaded).retrieve(QUESTION)]
    assert same == [n.node.node_id for n in ArchRAGRetriever(index, hierarchy=hierarchy).retrieve(QUESTION)]
