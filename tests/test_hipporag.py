"""HippoRAG 2-style retriever: output contract, multi-hop through PPR, dense fallback, index updates."""

import asyncio
import json

import pytest

from llama_index_graphrag_suite import GraphRAGIndex, IndexConfig
from llama_index_graphrag_suite.documents import make_document
from llama_index_graphrag_suite.methods.baselines import HippoRAGRetriever
from llama_index_graphrag_suite.registry import available_methods, get_retriever

pytestmark = pytest.mark.usefixtures("evidence_in_retrieve")  # these tests read the evidence node

CONFIG = IndexConfig(entities="statistical", entity_threshold=0.3)

# p-a states the fact the query asks about (Orvel Dane wrote Salt Lanterns). p-b never mentions the
# book: it links Orvel Dane to Ilse Marrow, so only the graph can bring it in. p-c shares the
# query's other words ("who wrote the"), so dense similarity prefers it to p-b.
MULTI_HOP = [
    ("p-a", "Salt Lanterns", "Orvel Dane wrote the novel Salt Lanterns. Orvel Dane finished Salt Lanterns in one winter. "
                             "Orvel Dane lived by the sea."),
    ("p-b", "Ilse Marrow", "Ilse Marrow married Orvel Dane in Tarsk. Ilse Marrow was a sculptor. Ilse Marrow carved the stone lions."),
    ("p-c", "Old letters", "Who wrote the letters? Nobody knows who wrote the letters. The letters were found in a drawer."),
    ("p-d", "Tarsk", "Tarsk is a port city. Tarsk has two lighthouses. The old harbour of Tarsk is busy."),
    ("p-e", "Brenn Valley", "Brenn Valley is a farming region. Brenn Valley grows barley and apples. Rivers cross Brenn Valley."),
    ("p-f", "Copper Bay", "Copper Bay is a fishing village. Copper Bay has a small market. Boats leave Copper Bay at dawn."),
]
QUERY = "Who wrote the novel Salt Lanterns?"


def multi_hop_documents(skip: str = ""):
    return [make_document(i, text, title) for i, title, text in MULTI_HOP if i != skip]


def split(nodes):
    chunks = [n for n in nodes if n.node.metadata["kind"] == "chunk"]
    evidence = [n for n in nodes if n.node.metadata["kind"] == "evidence"]
    return chunks, evidence


def rank(nodes, doc_id: str) -> int:
    return [n.node.metadata["doc_id"] for n in split(nodes)[0]].index(doc_id)


@pytest.fixture
def index(documents, embed):
    return GraphRAGIndex.from_documents(documents, embed_model=embed, config=CONFIG)


@pytest.fixture
def multi_hop_index(embed):
    return GraphRAGIndex.from_documents(multi_hop_documents(), embed_model=embed, config=CONFIG)


def test_output_contract(index):
    nodes = HippoRAGRetriever(index, top_k=4).retrieve("Where was the painter of The Grey Harbour born?")
    chunks, evidence = split(nodes)
    assert len(chunks) == 4 and len(evidence) == 1 and nodes[-1] is evidence[0]
    scores = [n.score for n in chunks]
    assert scores == sorted(scores, reverse=True) and all(s > 0 for s in scores)
    assert all(n.node.metadata["method"] == "hipporag" for n in nodes)
    meta = json.loads(json.dumps(evidence[0].node.metadata))
    ev = meta["evidence"]
    assert ev["ranking"] == "ppr" and ev["damping"] == 0.5 and ev["passage_node_weight"] == 0.05
    assert 1 <= len(ev["facts"]) <= 5 and ev["facts"][0]["score"] == 1.0
    assert set(ev["facts"][0]) == {"id", "subject", "predicate", "object", "score"}
    assert set(ev["seed_entities"]) <= {f["subject"] for f in ev["facts"]} | {f["object"] for f in ev["facts"]}
    assert 1 <= len(ev["seed_entities"]) <= 5  # linking_top_k heaviest entities
    first = ev["facts"][0]
    assert evidence[0].node.text.splitlines()[1] == f"{first['subject']} | {first['predicate']} | {first['object']} (1.000)"


def test_seed_weights_follow_fact_scores_and_entity_rarity(multi_hop_index):
    ev = split(HippoRAGRetriever(multi_hop_index).retrieve(QUERY))[1][0].node.metadata["evidence"]
    shares: dict[str, list[float]] = {}
    for f in ev["facts"]:
        for key in (f["subject"], f["object"]):
            shares.setdefault(key, []).append(f["score"] / len(multi_hop_index.entities[key].chunks))
    means = {k: sum(v) / len(v) for k, v in shares.items()}
    heaviest = dict(sorted(means.items(), key=lambda kv: (-kv[1], kv[0]))[:5])  # HippoRAG 2 keeps linking_top_k
    assert ev["seed_entities"] == pytest.approx(heaviest)


def test_ppr_brings_in_a_passage_linked_only_through_the_graph(multi_hop_index):
    best = split(HippoRAGRetriever(multi_hop_index).retrieve(QUERY))[1][0].node.metadata["evidence"]["facts"][0]
    assert (best["subject"], best["object"]) == ("orvel dane", "salt lanterns")
    assert multi_hop_index.facts[best["id"]].chunks == {"p-a#0"}

    dense = get_retriever(multi_hop_index, "dense", top_k=6).retrieve(QUERY)
    assert rank(dense, "p-c") < rank(dense, "p-b")  # words alone prefer the unrelated passage
    nodes = HippoRAGRetriever(multi_hop_index, top_k=6).retrieve(QUERY)
    assert rank(nodes, "p-a") == 0
    assert rank(nodes, "p-b") < rank(nodes, "p-c")  # reached via Orvel Dane's `contains` edge


def test_dense_fallback_without_facts(embed):
    # τ = 0.6 on three chunks extracts no entity at all, so there is no fact to map.
    docs = [make_document("k", "Kestrels hunt mice in open fields."), make_document("o", "Owls hunt at night in the woods."),
            make_document("s", "Swifts sleep while flying.")]
    index = GraphRAGIndex.from_documents(docs, embed_model=embed, config=IndexConfig(entities="statistical", entity_threshold=0.6))
    assert not index.facts
    query = "which birds hunt at night"
    chunks, evidence = split(HippoRAGRetriever(index, top_k=2).retrieve(query))
    dense = get_retriever(index, "dense", top_k=2).retrieve(query)
    assert [n.node.node_id for n in chunks] == [n.node.node_id for n in dense]
    assert [n.node.metadata["raw_score"] for n in chunks] == pytest.approx([n.score for n in dense])  # raw cosines
    ev = evidence[0].node.metadata["evidence"]
    assert ev["ranking"] == "dense" and ev["facts"] == [] and ev["seed_entities"] == {}


def test_follows_the_index_through_insert_and_delete(embed):
    index = GraphRAGIndex.from_documents(multi_hop_documents(skip="p-b"), embed_model=embed, config=CONFIG)
    retriever = HippoRAGRetriever(index, top_k=6)
    before = retriever.retrieve(QUERY)
    assert "p-b" not in [n.node.metadata.get("doc_id") for n in before]

    index.insert(multi_hop_documents()[1:2])  # p-b
    after_insert = retriever.retrieve(QUERY)
    assert rank(after_insert, "p-b") < rank(after_insert, "p-c")

    index.delete("p-a")
    after_delete = retriever.retrieve(QUERY)
    chunks, evidence = split(after_delete)
    assert len(chunks) == len(index.chunks) == 5 and len(evidence) == 1
    assert "p-a" not in [n.node.metadata["doc_id"] for n in chunks]


def test_aretrieve_matches_retrieve(multi_hop_index):
    retriever = HippoRAGRetriever(multi_hop_index, top_k=3)
    sync = retriever.retrieve(QUERY)
    async_ = asyncio.run(retriever.aretrieve(QUERY))
    assert [(n.node.node_id, n.score) for n in async_] == [(n.node.node_id, n.score) for n in sync]


def test_registered_and_validates_parameters(multi_hop_index):
    assert "hipporag" in available_methods(multi_hop_index)
    retriever = get_retriever(multi_hop_index, "hipporag", top_k=2, linking_top_k=3)
    assert isinstance(retriever.inner, HippoRAGRetriever) and retriever.config.linking_top_k == 3  # in the guard
    for bad in ({"linking_top_k": 0}, {"damping": 1.0}, {"passage_node_weight": -0.1}):
        with pytest.raises(ValueError):
            HippoRAGRetriever(multi_hop_index, **bad)


def test_large_graph_weighs_only_the_densest_passages(multi_hop_index, monkeypatch):
    """On a graph where the local push answers (``Transition.pushes``), only PASSAGE_RESET_TOP passages get a
    passage weight, the densest ones; elsewhere every passage does (HippoRAG 2)."""
    import numpy as np

    from llama_index_graphrag_suite.graph import ppr
    from llama_index_graphrag_suite.methods import baselines
    from llama_index_graphrag_suite.methods.query_scores import dense_scores

    resets = []
    solve = ppr.personalized_pagerank
    monkeypatch.setattr(ppr, "personalized_pagerank", lambda t, reset, **kw: resets.append(reset) or solve(t, reset, **kw))
    retriever = HippoRAGRetriever(multi_hop_index, top_k=6)
    retriever.retrieve(QUERY)
    rows = retriever._graph().chunk_rows
    seeds = split(retriever.retrieve(QUERY))[1][0].node.metadata["evidence"]["seed_entities"]
    dense = dense_scores(multi_hop_index, QUERY)
    assert np.count_nonzero(resets[0][rows]) == np.count_nonzero(dense > dense.min())  # every passage above the least

    monkeypatch.setattr(ppr.Transition, "pushes", property(lambda self: True))
    monkeypatch.setattr(baselines, "PASSAGE_RESET_TOP", 2)
    nodes = retriever.retrieve(QUERY)
    weighed = set(np.flatnonzero(resets[-1][rows]).tolist())
    assert weighed == set(np.argsort(-dense)[:2].tolist())
    snapshot = multi_hop_index.snapshot
    assert {s: resets[-1][snapshot.row(s)] for s in seeds} == pytest.approx(seeds)  # the entity seeds as before
    assert len(split(nodes)[0]) == 6


def test_pushed_ranking_is_the_dense_one(multi_hop_index, monkeypatch):
    """Where the local push answers, the chunks are ranked from the nodes it reached (no array over every node):
    the same chunks, order and scores (to rounding) as ranking the dense PageRank vector of the same push."""
    from llama_index_graphrag_suite.graph import ppr

    from llama_index_graphrag_suite.methods import baselines

    for name, value in (("FAST_MIN_NNZ", 0), ("PUSH_MIN_NNZ", 0), ("PUSH_MAX_RESET_SHARE", 1.0)):
        monkeypatch.setattr(ppr, name, value)
    monkeypatch.setattr(baselines, "PUSH_TOLERANCE", ppr.PUSH_EPS)  # the dense path's push tolerance
    retriever = HippoRAGRetriever(multi_hop_index, top_k=3)
    assert retriever._graph().transition.pushes
    calls = []
    real = HippoRAGRetriever._pushed_top
    monkeypatch.setattr(HippoRAGRetriever, "_pushed_top", lambda self, *a: calls.append(1) or real(self, *a))
    sparse = split(retriever.retrieve(QUERY))[0]
    assert calls == [1]
    monkeypatch.setattr(HippoRAGRetriever, "_pushed_top", lambda self, *a: None)
    dense = split(retriever.retrieve(QUERY))[0]
    assert [n.node.node_id for n in sparse] == [n.node.node_id for n in dense]
    assert [n.score for n in sparse] == [n.score for n in dense]


def test_listed_fact_table_maps_the_same_facts_and_bounds(multi_hop_index, monkeypatch):
    """On a listed fact table the mapped facts and the min-max bounds come from the probed lists and the centroids;
    they equal what the array of every fact's (estimated) cosine gives."""
    import numpy as np

    from llama_index_graphrag_suite.graph import vector_lists
    from llama_index_graphrag_suite.methods import baselines

    table = multi_hop_index.fact_vectors
    table.lists = vector_lists.train_lists(table.vectors(), nlist=4)
    table.lists.moves = table.moves
    assert table.listed
    monkeypatch.setattr(vector_lists, "QUERY_NPROBE", 2)
    answered = 0
    for question in (QUERY, "Who married Orvel Dane?", "Where are the stone lions?", "Tarsk port lighthouses",
                     "barley apples valley", "fishing village market"):
        query_vec = multi_hop_index.embed_query(question)
        for k in (1, 3):
            every = table.scores(query_vec)
            expected = (baselines.facts_from_cosines(multi_hop_index, every, k), float(every.min()), float(every.max()))
            found = baselines._listed_matches(multi_hop_index, table, query_vec, k)
            answered += found is not None
            assert baselines.mapped_facts(multi_hop_index, query_vec, k) == expected
            assert found is None or found == expected
    assert answered  # the listed path ran, not only the fallback
    assert len(np.unique(table.lists.lists)) > 2  # some lists were left unprobed
