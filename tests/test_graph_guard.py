"""The hybrid guard (methods/guard/). Where the graph knows nothing of a question, every graph method ranks as hybrid
does; where it does, the method may re-rank as far as the per-query weight allows; ``name:paper`` is the method
without it. The guard's trace comes back with the evidence, never kept on the retriever."""

from __future__ import annotations

import numpy as np
import pytest

from llama_index_graphrag_suite import GraphRAGIndex, IndexConfig
from llama_index_graphrag_suite.methods.guard import GuardConfig as GuardedConfig
from llama_index_graphrag_suite.methods.guard import fuse_rankings, guard_weight, hybrid_ranking, query_link
from llama_index_graphrag_suite.methods.guard.signals import hub_chunks

GRAPH_METHODS = ("hipporag", "agrag", "pathrag", "archrag", "a2rag")


def traced(retriever, question):
    """``(chunk ids, the guard's trace)`` of one retrieval: the trace is the evidence node's ``hybrid_guard``."""
    chunks, evidence = retriever.retrieve_with_evidence(question)
    return [n.node.node_id for n in chunks], evidence.node.metadata["evidence"].get("hybrid_guard")


def test_fusion_is_hybrid_at_weight_zero_and_the_graph_at_one():
    graph, hyb = np.array([7, 3, 9, 1]), np.array([1, 2, 3, 4, 5])
    assert fuse_rankings(graph, hyb, 0.0, 10, 3)[0].tolist() == [1, 2, 3]
    assert fuse_rankings(graph, hyb, 1.0, 10, 3)[0].tolist() == [7, 3, 9]
    mid, scores = fuse_rankings(graph, hyb, 0.5, 10, 5)
    assert mid[:2].tolist() == [1, 3] and scores == sorted(scores, reverse=True)  # 1 and 3 are in both lists
    assert fuse_rankings(np.array([], np.int64), hyb, 0.9, 10, 2)[0].tolist() == [1, 2]  # nothing ranked: hybrid


def test_weight_is_zero_when_nothing_links_and_grows_with_the_link():
    cfg = GuardedConfig(guard_max_weight=0.8, guard_link_gain=1.0, guard_agree_gain=0.5)
    assert guard_weight(0.0, 1.0, cfg) == 0.0
    assert 0 < guard_weight(0.3, 0.0, cfg) < guard_weight(0.6, 0.0, cfg) <= 0.8
    assert guard_weight(1.0, 1.0, cfg) == pytest.approx(0.8)  # clipped at max_weight


def test_weight_lies_on_the_grid_the_tuning_simulates():
    from llama_index_graphrag_suite.methods.guard.fusion import WEIGHT_STEP

    cfg = GuardedConfig(guard_max_weight=0.85, guard_link_gain=2.0, guard_agree_gain=0.5)
    for link, agree in [(0.13, 0.2), (0.27, 0.6), (0.41, 0.0), (0.05, 1.0)]:
        raw = 0.85 * min(1.0, 2.0 * link + 0.5 * agree)
        w = guard_weight(link, agree, cfg)
        assert w / WEIGHT_STEP == pytest.approx(round(w / WEIGHT_STEP)) and abs(w - raw) <= WEIGHT_STEP / 2 + 1e-9


@pytest.mark.parametrize("k0,k", [(2, 5), (2, 10), (5, 5), (10, 3), (1, 1)])
def test_below_full_weight_the_graph_never_pushes_hybrids_first_chunk_out_of_the_top_k(k0, k):
    rng = np.random.default_rng(k0 * 100 + k)
    hyb = np.arange(20)
    for weight in (0.3, 0.7, 0.95):
        for _ in range(30):  # graph rankings that lack hybrid's first chunk, some sharing the rest of its list
            graph = rng.permutation(np.arange(1, 60))[:20]
            fused, scores = fuse_rankings(graph, hyb, weight, k0, k)
            assert 0 in fused.tolist() and len(fused) == k and scores == sorted(scores, reverse=True)
    # at full weight the graph's own ranking stands (the paper variant's order)
    assert fuse_rankings(np.arange(100, 100 + k), hyb, 1.0, k0, k)[0].tolist() == list(range(100, 100 + k))


@pytest.mark.parametrize("k0,k", [(2, 5), (2, 10), (5, 5), (10, 3)])
def test_the_cap_is_the_weight_at_which_hybrids_first_chunk_ties_the_graphs_kth(k0, k):
    from llama_index_graphrag_suite.methods.guard.fusion import WEIGHT_STEP, protective_weight

    cap = protective_weight(k0, k)
    graph, hyb = np.arange(100, 100 + k), np.arange(20)  # rankings that share nothing
    fused, scores = fuse_rankings(graph, hyb, cap, k0, k + 1)
    assert fused.tolist()[-2:] == [100 + k - 1, 0] or fused.tolist()[-2:] == [0, 100 + k - 1]
    assert scores[-1] == pytest.approx(scores[-2])  # a tie, which goes to hybrid's chunk
    assert fuse_rankings(graph, hyb, cap, k0, k)[0].tolist()[-1] == 0
    fused, scores = fuse_rankings(graph, hyb, cap + WEIGHT_STEP, k0, k + 1)  # above it, the graph's k-th wins
    assert fused.tolist()[-2:] == [100 + k - 1, 0] and scores[-1] < scores[-2]
    # guard_max_weight unset; no scaling below top_k 5 (test_below_top_k_5_the_graph_weight_shrinks_...)
    cfg = GuardedConfig(guard_rrf_k=k0, guard_link_gain=1.0, guard_agree_gain=1.0, guard_small_k_power=0.0)
    top = guard_weight(1.0, 1.0, cfg, k=k)  # every signal at its most: the cap, on the weight grid
    assert top <= cap + 1e-12 and cap - top < WEIGHT_STEP


def test_the_cap_is_07_at_the_shipped_fusion_and_a_number_overrides_it():
    from llama_index_graphrag_suite.methods.guard.fusion import protective_weight, weight_cap

    assert protective_weight(2, 5) == pytest.approx(0.7)
    assert weight_cap(GuardedConfig(), 5) == pytest.approx(0.7)  # k0 = 2 by default
    assert weight_cap(GuardedConfig(), 10) == pytest.approx(12 / 15)  # a larger top_k leaves the graph more room
    assert weight_cap(GuardedConfig(guard_max_weight=1.0), 5) == 1.0
    assert guard_weight(1.0, 1.0, GuardedConfig(guard_max_weight=1.0), k=5) == pytest.approx(1.0)
    # at exactly the cap (0.7000000000000001 after the step rounding), hybrid's first chunk ties the graph's fifth
    # and the tie is hybrid's, whatever the floating-point rounding: the graph's first four, then hybrid's first
    w = guard_weight(1.0, 1.0, GuardedConfig(), k=5)
    fused, scores = fuse_rankings(np.arange(100, 105), np.arange(20), w, 2, 6)
    assert fused.tolist() == [100, 101, 102, 103, 0, 104] and round(scores[4], 12) == round(scores[5], 12)


@pytest.fixture(scope="module")
def index():
    from conftest import GALLERY_TEXTS, UNRELATED_TEXTS, index_of_texts

    return index_of_texts({
        **GALLERY_TEXTS,
        **UNRELATED_TEXTS,
    }, spread=1)  # the orders these tests contrast were written with one hashed dimension per word


def test_query_link_counts_only_specific_entities(index):
    share, found = query_link(index, "Who founded the Vant Gallery?", max_chunks=3)
    assert "vant gallery" in found and share == pytest.approx(2 / 3)  # founded, vant, gallery: 2 of 3 covered
    assert query_link(index, "Who founded the Vant Gallery?", max_chunks=0) == (0.0, [])  # every entity a hub
    assert query_link(index, "what do gauges measure during a storm", max_chunks=3)[0] == 0.0
    assert hub_chunks(10_000, 0.05, 20) == 500 and hub_chunks(100, 0.05, 20) == 20


@pytest.mark.parametrize("method", GRAPH_METHODS)
def test_a_question_the_graph_does_not_know_gets_hybrids_ranking(index, method):
    from llama_index_graphrag_suite.registry import get_retriever

    question = "what do gauges measure during a storm"
    retriever = get_retriever(index, method, top_k=3)
    chunks, guard = traced(retriever, question)
    expected = [index.chunk_order[c] for c in hybrid_ranking(index, question, 3).tolist()]
    assert chunks == expected
    assert guard["graph_weight"] == 0.0 and guard["query_link"] == 0.0


@pytest.mark.parametrize("method", GRAPH_METHODS)
def test_the_paper_variant_is_the_methods_own_ranking(index, method):
    from llama_index_graphrag_suite.registry import get_retriever

    question = "Which painter did the founder of the Vant Gallery collect?"
    from llama_index_graphrag_suite.methods.guard import HybridGuard
    from llama_index_graphrag_suite.registry import method_info

    paper = get_retriever(index, f"{method}:paper", top_k=3)
    # A2RAG's paper variant also drops our additions to its ranking (tests/test_a2rag_hop_anchors.py)
    ours = {"ppr_dense_seeds": 0, "hybrid_anchors": 0, "title_anchors": False, "hop_anchors": False}
    plain = method_info(method).load()(index, top_k=3, **(ours if method == "a2rag" else {}))
    assert not isinstance(paper, HybridGuard) and traced(paper, question)[1] is None
    assert [n.node.node_id for n in paper.retrieve(question)] == [n.node.node_id for n in plain.retrieve(question)]
    guarded = get_retriever(index, method, top_k=3)
    assert isinstance(guarded, HybridGuard) and guarded.inner.config == type(plain.config)()  # the defaults
    nodes = guarded.retrieve(question)
    _, guard = traced(guarded, question)
    assert len(nodes) == 3 and guard["query_link"] > 0
    assert all(n.node.metadata["graph_weight"] == guard["graph_weight"] for n in nodes)
    scores = [n.score for n in nodes]
    assert scores == sorted(scores, reverse=True) and scores[0] == 1.0


def test_async_retrieval_is_guarded_too(index):
    import asyncio

    from llama_index_graphrag_suite.registry import get_retriever

    retriever = get_retriever(index, "a2rag", top_k=3)
    question = "what do gauges measure during a storm"
    sync = [n.node.node_id for n in retriever.retrieve(question)]
    assert [n.node.node_id for n in asyncio.run(retriever.aretrieve(question))] == sync


@pytest.mark.parametrize("method", GRAPH_METHODS)
def test_the_guard_reuses_the_methods_dense_and_bm25_scores(index, method, monkeypatch):
    """One guarded retrieval scores the question against every chunk once (dense and BM25), not once for the
    method and again for the guard; a second retrieval scores it afresh (nothing is kept between calls)."""
    import asyncio

    from llama_index_graphrag_suite.registry import get_retriever

    calls = {"dense": 0, "bm25": 0}
    dense, bm25 = type(index).chunk_dense_scores, type(index.bm25).scores

    def counted_dense(self, query_vec):
        calls["dense"] += 1
        return dense(self, query_vec)

    def counted_bm25(self, question):
        calls["bm25"] += 1
        return bm25(self, question)

    monkeypatch.setattr(type(index), "chunk_dense_scores", counted_dense)
    monkeypatch.setattr(type(index.bm25), "scores", counted_bm25)
    retriever = get_retriever(index, method, top_k=3)
    question = "Which painter did the founder of the Vant Gallery collect?"
    first = [n.node.node_id for n in retriever.retrieve(question)]
    assert calls == {"dense": 1, "bm25": 1}
    assert [n.node.node_id for n in asyncio.run(retriever.aretrieve(question))] == first
    assert calls == {"dense": 2, "bm25": 2}


def test_linked_hybrid_lifts_chunks_holding_the_questions_entities():
    from llama_index_graphrag_suite.methods.guard import linked_hybrid

    hyb = np.array([4, 7, 1, 9, 3])
    assert linked_hybrid(hyb, np.zeros(5), 0.35).tolist() == [4, 7, 1, 9, 3]  # nothing linked: hybrid's order
    assert linked_hybrid(hyb, np.array([0, 0, 1.0, 0, 0]), 0.0).tolist() == [4, 7, 1, 9, 3]  # gain 0: off
    # rank scores 1, 2/3, 1/2, 2/5, 1/3: the third chunk, holding every entity, passes the second (1/2 + 0.2 > 2/3)
    assert linked_hybrid(hyb, np.array([0, 0, 1.0, 0, 0]), 0.2).tolist() == [4, 1, 7, 9, 3]
    # ... and the first too with a larger gain; equal scores keep hybrid's order
    assert linked_hybrid(hyb, np.array([0, 0, 1.0, 0, 0]), 0.6).tolist() == [1, 4, 7, 9, 3]
    assert linked_hybrid(hyb, np.array([0.5, 0.5, 0.5, 0.5, 0.5]), 0.3).tolist() == [4, 7, 1, 9, 3]


def test_entity_coverage_is_the_share_of_the_questions_entities_a_chunk_holds(index):
    from llama_index_graphrag_suite.methods.guard.signals import entity_coverage, entity_specificity

    keys = [k for k in ("vant gallery", "tomas reed") if k in index.entities]
    assert len(keys) == 2
    chunk_of = {index.chunks[c].doc_id: c for c in index.chunk_order}  # one chunk per document here
    positions = np.array([index.chunk_position[chunk_of[d]] for d in ("vant", "reed", "tea")])
    # vant names both the gallery and its founder; reed names Tomas Reed only (its share of the two entities'
    # specificity); tea neither
    spec = entity_specificity(index, keys)
    assert (spec > 0).all()
    assert entity_coverage(index, keys, positions).tolist() == pytest.approx([1.0, spec[1] / spec.sum(), 0.0])
    assert entity_coverage(index, [], positions).tolist() == [0.0, 0.0, 0.0]


def test_entity_coverage_weighs_an_entity_by_how_few_chunks_it_is_linked_to():
    from types import SimpleNamespace

    from llama_index_graphrag_suite.methods.guard.signals import entity_coverage, entity_specificity

    # a book's hero in all four chunks, its inn in one, its letter in two
    linked = {"c0": ["hero", "inn"], "c1": ["hero"], "c2": ["hero", "letter"], "c3": ["hero", "letter"]}
    entities = {k: SimpleNamespace(chunks=[c for c, ks in linked.items() if k in ks])
                for k in ("hero", "inn", "letter")}
    index = SimpleNamespace(chunk_order=list(linked), entities=entities,
                            chunks={c: SimpleNamespace(entities=ks) for c, ks in linked.items()})
    spec = entity_specificity(index, ["hero", "inn", "letter", "unknown"])
    assert spec.tolist() == pytest.approx([0.0, np.log(4), np.log(2), 0.0])
    every = np.arange(4)
    # the hero tells no chunk from another: a chunk holding the inn holds all the question's specificity
    assert entity_coverage(index, ["hero", "inn"], every).tolist() == [1.0, 0.0, 0.0, 0.0]
    assert entity_coverage(index, ["inn", "letter"], every).tolist() == pytest.approx([2 / 3, 0.0, 1 / 3, 1 / 3])
    # a question naming only the hero lifts no chunk: hybrid's order stays
    assert entity_coverage(index, ["hero"], every).tolist() == [0.0, 0.0, 0.0, 0.0]


def test_name_trust_scales_the_weight_by_the_corpus_name_density():
    from llama_index_graphrag_suite.methods.guard.signals import name_trust

    assert name_trust(6.0, 24.0) == 0.25 and name_trust(30.0, 24.0) == 1.0
    assert name_trust(None, 24.0) == 1.0 and name_trust(3.0, 0.0) == 1.0  # unknown density, or the factor off
    cfg = GuardedConfig(guard_max_weight=1.0, guard_link_gain=1.0, guard_agree_gain=0.0)
    assert guard_weight(0.8, 0.0, cfg, trust=0.25) == pytest.approx(0.2)


def test_a_corpus_written_in_common_nouns_gives_the_walk_less_weight(index):
    from llama_index_graphrag_suite.methods.guard.signals import corpus_name_density
    from llama_index_graphrag_suite.registry import get_retriever

    question = "Which painter did the founder of the Vant Gallery collect?"
    density = corpus_name_density(index)
    assert density == index.build_info["capitalised_per_100_words"] > 0  # measured at build time
    full = get_retriever(index, "hipporag", top_k=3, guard_name_density=0.0)
    scaled = get_retriever(index, "hipporag", top_k=3, guard_name_density=4 * density)
    full_guard, scaled_guard = traced(full, question)[1], traced(scaled, question)[1]
    assert full_guard["name_trust"] == 1.0 and scaled_guard["name_trust"] == pytest.approx(0.25, abs=1e-3)
    assert 0 < scaled_guard["graph_weight"] < full_guard["graph_weight"]


def test_the_name_density_is_read_off_the_chunks_when_the_build_did_not_record_it():
    from llama_index.core import Document

    from llama_index_graphrag_suite.embeddings import HashEmbedding
    from llama_index_graphrag_suite.extractors.terms import capitalised_per_100_words
    from llama_index_graphrag_suite.methods.guard.signals import corpus_name_density

    texts = ["Ada Lorne painted the harbour at dawn.", "the tide rose over the old quay and the boats."]
    built = GraphRAGIndex.from_documents([Document(text=t, doc_id=str(i)) for i, t in enumerate(texts)],
                                         embed_model=HashEmbedding(dim=16), config=IndexConfig(terms=False))
    expected = capitalised_per_100_words(built.chunks[c].text for c in built.chunk_order)
    assert built.build_info["capitalised_per_100_words"] == round(expected, 2)  # measured by every build
    for key in ("capitalised_per_100_words", "capitalised_words"):  # as in an index saved before it was
        built.build_info.pop(key)
    assert corpus_name_density(built) == pytest.approx(expected) and expected > 0


def test_in_own_order_lists_the_fused_chunks_as_the_method_ranks_them():
    from llama_index_graphrag_suite.methods.guard.fusion import in_own_order

    fused, graph = np.array([5, 1, 9, 0, 4]), np.array([1, 9, 7, 5])
    # the method's 1, 9, 5 in its order, then what it did not rank (hybrid's 0 and 4) in the fusion's order
    assert fused[in_own_order(fused, graph)].tolist() == [1, 9, 5, 0, 4]
    assert fused[in_own_order(fused, np.array([], np.int64))].tolist() == fused.tolist()  # nothing ranked


@pytest.mark.parametrize("own_from", [None, 0.0])
def test_own_order_changes_which_chunk_comes_first_never_which_are_returned(index, own_from, monkeypatch):
    """``guard_own_order_from``: the fused chunks listed in the method's own order once the graph weight reaches
    it; the fusion still chooses them (A2RAG ships 0.5: its own top opens with hybrid's surest chunk)."""
    from llama_index_graphrag_suite.methods.guard import fusion, retriever
    from llama_index_graphrag_suite.methods.guard.fusion import in_own_order
    from llama_index_graphrag_suite.registry import get_retriever

    plain = fusion.hybrid_ranking

    def reversed_top(index, question, depth):  # hybrid's top 3 upside down: the two orders now differ
        ranking = plain(index, question, depth)
        return np.concatenate([ranking[:3][::-1], ranking[3:]])

    monkeypatch.setattr(retriever, "hybrid_ranking", reversed_top)
    question = "Which painter did the founder of the Vant Gallery collect?"
    fusion_order = get_retriever(index, "a2rag", top_k=3, guard_own_order_from=None)
    listed = get_retriever(index, "a2rag", top_k=3, guard_own_order_from=own_from)
    fused = [n.node.node_id for n in fusion_order.retrieve(question)]
    got = listed.retrieve(question)
    guard = traced(listed, question)[1]
    assert guard["graph_weight"] > 0 and guard["own_order"] is (own_from is not None)
    assert sorted(n.node.node_id for n in got) == sorted(fused)
    own = [n.node.node_id for n in get_retriever(index, "a2rag:unguarded", top_k=20).retrieve(question)]
    position = index.chunk_position
    expected = fused if own_from is None else [fused[i] for i in in_own_order(
        np.asarray([position[c] for c in fused]), np.asarray([position[c] for c in own])).tolist()]
    assert [n.node.node_id for n in got] == expected and (expected != fused) is (own_from is not None)
    scores = [n.score for n in got]
    assert scores == sorted(scores, reverse=True) and scores[0] == 1.0


def test_a2rag_lists_its_fused_chunks_in_its_own_order_from_half_the_weight():
    from llama_index_graphrag_suite.registry import resolve_method

    assert resolve_method("a2rag").guard.guard_own_order_from == 0.5
    assert GuardedConfig().guard_own_order_from is None  # the other methods: the fusion's order


def test_below_top_k_5_the_graph_weight_shrinks_by_the_small_k_power():
    from llama_index_graphrag_suite.methods.guard.fusion import small_k_share
    from llama_index_graphrag_suite.registry import resolve_method

    assert small_k_share(5, 2.0) == 1.0 and small_k_share(10, 2.0) == 1.0 and small_k_share(3, 0.0) == 1.0
    assert small_k_share(2, 2.0) == pytest.approx(0.16) and small_k_share(3, 1.0) == pytest.approx(0.6)
    cfg = GuardedConfig(guard_max_weight=1.0, guard_link_gain=1.0, guard_agree_gain=0.0)
    assert cfg.guard_small_k_power == 2.0 and resolve_method("a2rag").guard.guard_small_k_power == 0.0
    assert guard_weight(1.0, 0.0, cfg, k=5) == pytest.approx(1.0) and guard_weight(1.0, 0.0, cfg, k=10) == 1.0
    assert guard_weight(1.0, 0.0, cfg, k=2) == pytest.approx(0.15)  # 0.16 on the weight grid
    assert guard_weight(1.0, 0.0, cfg.model_copy(update={"guard_small_k_power": 0.0}), k=2) == pytest.approx(1.0)


@pytest.mark.parametrize("method", ["hipporag", "a2rag"])
def test_at_top_k_2_the_guard_leans_to_hybrid_except_for_a2rag(index, method):
    from llama_index_graphrag_suite.registry import get_retriever

    question = "Which painter did the founder of the Vant Gallery collect?"
    at_five = traced(get_retriever(index, method, top_k=5), question)[1]
    at_two = traced(get_retriever(index, method, top_k=2), question)[1]
    unscaled = traced(get_retriever(index, method, top_k=2, guard_small_k_power=0.0), question)[1]
    assert at_five["graph_weight"] > 0
    if method == "a2rag":  # its own top opens with hybrid's first chunk: no scaling
        assert at_two["graph_weight"] == unscaled["graph_weight"]
    else:
        assert at_two["graph_weight"] < unscaled["graph_weight"]
