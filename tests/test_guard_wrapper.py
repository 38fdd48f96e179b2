"""The hybrid guard as a wrapper the registry applies (methods/guard/retriever.py): a method with and without it,
the registry's variants, and one guarded retriever shared by threads asking different questions."""

from __future__ import annotations

import threading

import numpy as np

import pytest

from llama_index_graphrag_suite.methods.guard import GuardConfig, HybridGuard, method_depth
from llama_index_graphrag_suite.registry import get_retriever, method_info, resolve_method

GRAPH_METHODS = ("hipporag", "agrag", "pathrag", "archrag", "a2rag")
LINKED = "Which painter did the founder of the Vant Gallery collect?"
UNLINKED = "what do gauges measure during a storm"


@pytest.fixture(scope="module")
def index():
    from conftest import GALLERY_TEXTS, UNRELATED_TEXTS, index_of_texts

    return index_of_texts({
        **GALLERY_TEXTS,
        "bell": "Piers Bell sold nets on the quay of Grey Harbour.",
        **UNRELATED_TEXTS,
    })


def ids(nodes):
    return [n.node.node_id for n in nodes]


def guard_of(evidence):
    return evidence.node.metadata["evidence"]["hybrid_guard"]


@pytest.mark.parametrize("method", GRAPH_METHODS)
def test_the_registry_wraps_the_method_and_the_paper_variant_is_the_method_alone(index, method):
    cls = method_info(method).load()
    guarded, paper = get_retriever(index, method, top_k=3), get_retriever(index, f"{method}:paper", top_k=3)
    assert isinstance(guarded, HybridGuard) and type(guarded.inner) is cls and type(paper) is cls
    # the method ranks as deep as the fusion reads (A2RAG: its top_k), and does not know it is wrapped
    assert guarded.inner.top_k == method_depth(3, guarded.guard_config) == (3 if method == "a2rag" else 20)
    assert not hasattr(cls, "_apply_guard") and "guard_depth" not in cls.config_class.model_fields
    # it answers as the method: name, config, prompts (one set, shared), evidence placement
    assert guarded.method == method and guarded.config == guarded.inner.config
    assert guarded.config_class is cls.config_class and isinstance(guarded.guard_config, GuardConfig)
    assert guarded.get_prompts().keys() == guarded.inner.get_prompts().keys()
    assert guarded.evidence_placement == cls.evidence_placement


@pytest.mark.parametrize("method", ["agrag", "a2rag"])
def test_a_method_wrapped_by_hand_ranks_as_the_registrys(index, method):
    cls = method_info(method).load()
    spec = resolve_method(method)
    by_hand = HybridGuard(cls(index, top_k=method_depth(3, spec.guard)), top_k=3, config=spec.guard)
    assert ids(by_hand.retrieve(LINKED)) == ids(get_retriever(index, method, top_k=3).retrieve(LINKED))
    # without the wrapper the method returns its own top 3; with it, a question the graph does not know is hybrid's
    from llama_index_graphrag_suite.methods.guard import hybrid_ranking

    expected = [index.chunk_order[c] for c in hybrid_ranking(index, UNLINKED, 3).tolist()]
    assert ids(by_hand.retrieve(UNLINKED)) == expected
    assert len(cls(index, top_k=3).retrieve(UNLINKED)) == 3


def test_the_variants_that_run_without_the_guard():
    assert resolve_method("agrag").guard == GuardConfig()
    assert resolve_method("agrag:no_mcmi").guard == GuardConfig()  # an ablation keeps the guard
    assert resolve_method("agrag:paper").guard is None and resolve_method("a2rag:unguarded").guard is None
    a2rag = resolve_method("a2rag").guard
    assert a2rag.guard_names_only and a2rag.guard_rank_to_top_k and a2rag.guard_link_gain == 4.0
    # A2RAG's paper variant also drops our anchors; "unguarded" is our ranking as it is
    assert resolve_method("a2rag:paper").config.hybrid_anchors == 0
    assert resolve_method("a2rag:unguarded").config == resolve_method("a2rag").config
    # guard settings reach the guard, method settings the method; the plain method has no guard settings
    spec = resolve_method("pathrag", {"guard_link_gain": 2.0, "alpha": 0.8})
    assert spec.guard.guard_link_gain == 2.0 and spec.config.alpha == 0.8
    from llama_index_graphrag_suite.registry import RequestError

    with pytest.raises(RequestError, match="no setting 'guard_link_gain'"):
        resolve_method("pathrag:paper", {"guard_link_gain": 2.0})
    with pytest.raises(RequestError, match="no variant 'unguarded'"):
        resolve_method("agrag:unguarded")


def test_settings_given_to_get_retriever_reach_the_method_and_the_guard(index):
    r = get_retriever(index, "agrag", top_k=3, damping=0.4, guard_cover_gain=0.0)
    assert r.inner.config.damping == 0.4 and r.guard_config.guard_cover_gain == 0.0
    assert get_retriever(index, "agrag", variant="paper").config.damping == 0.5


def test_a2rag_guarded_keeps_its_gate_and_its_trace(index):
    guarded = get_retriever(index, "a2rag", top_k=3)
    assert 0.0 <= guarded.gate_score(LINKED) <= 1.0  # the method's own helper, through the wrapper
    nodes, trace = guarded.retrieve_with_trace(LINKED)
    assert ids(nodes[:-1]) == ids(guarded.retrieve(LINKED)) and trace["hybrid_guard"]["query_link"] > 0
    assert "stage_reached" in trace and guard_of(nodes[-1]) == trace["hybrid_guard"]
    _, plain_trace = get_retriever(index, "a2rag:unguarded", top_k=3).retrieve_with_trace(LINKED)
    assert "hybrid_guard" not in plain_trace


@pytest.mark.parametrize("method", ["agrag", "a2rag"])
def test_one_guarded_retriever_serves_threads_each_with_its_own_trace(index, method):
    """No per-query state on the retriever: threads asking different questions at once each get the trace of
    their own question (the same as asked alone)."""
    retriever = get_retriever(index, method, top_k=3)
    questions = [LINKED, UNLINKED, "Who founded the Vant Gallery?", "Where did Piers Bell sell nets?"] * 3
    alone = {}
    for q in set(questions):
        chunks, evidence = retriever.retrieve_with_evidence(q)
        alone[q] = (ids(chunks), guard_of(evidence))
    assert alone[LINKED][1]["graph_weight"] > 0 and alone[UNLINKED][1]["graph_weight"] == 0.0  # traces differ
    got: dict[int, tuple] = {}
    start = threading.Barrier(len(questions))

    def ask(i: int, q: str) -> None:
        start.wait()
        for _ in range(3):
            chunks, evidence = retriever.retrieve_with_evidence(q)
            got.setdefault(i, []).append((ids(chunks), guard_of(evidence)))

    threads = [threading.Thread(target=ask, args=(i, q)) for i, q in enumerate(questions)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for i, q in enumerate(questions):
        assert got[i] == [alone[q]] * 3
    assert not any(k.startswith("last_") for k in vars(retriever))


@pytest.mark.parametrize("method", ["hipporag", "agrag"])
def test_where_the_walk_keeps_hybrids_first_chunk_its_own_top_k_stands(index, method, monkeypatch):
    """``guard_walk_keeps_first`` (on by default): the fusion protects hybrid's first chunk; where the method's own
    top_k already holds it (in a corpus written in names), the method's top_k is returned as it ranks it. The
    question is a two-hop one (the gallery's founder, then the painter he collected): the walk's question."""
    from llama_index_graphrag_suite.methods.guard import hybrid_ranking

    own = ids(get_retriever(index, f"{method}:paper", top_k=5).retrieve(LINKED))
    first = index.chunk_order[int(hybrid_ranking(index, LINKED, 1)[0])]
    assert first in own  # the walk kept what the fusion protects
    on = get_retriever(index, method, top_k=5)
    assert on.guard_config.guard_walk_keeps_first
    chunks, evidence = on.retrieve_with_evidence(LINKED)
    assert ids(chunks) == own and guard_of(evidence)["walk_keeps_first"] and guard_of(evidence)["graph_weight"] == 1.0
    off = get_retriever(index, method, top_k=5, guard_walk_keeps_first=False)
    assert guard_of(off.retrieve_with_evidence(LINKED)[1])["graph_weight"] <= 0.7  # the fusion's: at most the cap
    # in a corpus written in common nouns (as the index reads it when deciding on terms) the fusion decides
    from llama_index_graphrag_suite.methods.guard import signals

    assert signals.written_in_names(index)
    monkeypatch.setattr(signals, "NAME_RICH", 1000.0)
    assert guard_of(on.retrieve_with_evidence(LINKED)[1])["graph_weight"] < 1.0
    monkeypatch.undo()
    # below the top_k it was measured at (5), each place counts more: the fusion decides
    assert guard_of(get_retriever(index, method, top_k=3).retrieve_with_evidence(LINKED)[1])["graph_weight"] < 1.0


def test_scores_shared_within_a_retrieval_are_never_those_of_another_index_state():
    """The guard and the method share one question's dense and BM25 scores (methods/query_scores.py); a block left
    open must still not hand out the scores of an index that has changed since."""
    from conftest import UNRELATED_TEXTS, index_of_texts
    from llama_index.core import Document

    from llama_index_graphrag_suite.methods.query_scores import bm25_scores, dense_scores, shared_query_scores

    index = index_of_texts(UNRELATED_TEXTS)
    with shared_query_scores():
        first = dense_scores(index, "rain water")
        assert dense_scores(index, "rain water") is first  # shared inside the block
        with shared_query_scores():  # a nested block (the method inside the guard) shares the outer one's
            assert dense_scores(index, "rain water") is first
        index.insert([Document(text="Hail falls as balls of ice in a storm.", doc_id="hail")])
        after = dense_scores(index, "rain water")
        assert after is not first and after.size == first.size + 1
        assert bm25_scores(index, "rain water").size == after.size


def test_a_walk_that_drops_hybrids_first_chunk_is_fused_not_trusted(monkeypatch):
    """The switch needs the walk's agreement: a method whose own top_k leaves out hybrid's surest chunk is fused with
    hybrid as before (weight at most the cap, hybrid's first chunk kept), even in a corpus written in names."""
    from conftest import GALLERY_TEXTS, index_of_texts

    from llama_index_graphrag_suite.methods.guard import hybrid_ranking
    from llama_index_graphrag_suite.methods.guard.signals import written_in_names

    index = index_of_texts({**GALLERY_TEXTS, "bell": "Piers Bell sold nets on the quay of Grey Harbour."})
    assert written_in_names(index)
    question = "Where was Ada Lorne, the painter, born?"
    first = index.chunk_order[int(hybrid_ranking(index, question, 1)[0])]

    guarded = get_retriever(index, "agrag", top_k=5)
    inner_retrieve = guarded.inner.retrieve_with_evidence

    def walk_elsewhere(query):
        chunks, evidence = inner_retrieve(query)
        return [n for n in chunks if n.node.node_id != first], evidence  # a stand-in walk that went elsewhere

    monkeypatch.setattr(guarded.inner, "retrieve_with_evidence", walk_elsewhere)
    chunks, evidence = guarded.retrieve_with_evidence(question)
    trace = guard_of(evidence)
    assert not trace["walk_keeps_first"] and trace["graph_weight"] <= 0.7
    assert first in ids(chunks)  # the fusion's promise: hybrid's surest chunk keeps a place


def test_a_walk_that_keeps_hybrids_first_chunk_but_drops_a_name_is_fused(index, monkeypatch):
    """The switch's second condition: the walk's own top 5 holds hybrid's first chunk but none of the chunks of the
    other names the question gives (its hops went to passages about nothing the question names), while the fused top
    5 keeps them: the fusion decides. The same walk with those chunks kept stands."""
    from llama_index_graphrag_suite.methods.base import chunk_node
    from llama_index_graphrag_suite.methods.guard import hybrid_ranking
    from llama_index_graphrag_suite.methods.guard.signals import names_held, query_link

    question = "Did Ada Lorne paint the quay where Piers Bell sold nets?"  # two names: Ada Lorne, Bell
    first = index.chunk_order[int(hybrid_ranking(index, question, 1)[0])]
    assert first == "bell#0"  # the chunk hybrid is surest of names Bell only
    guarded = get_retriever(index, "hipporag", top_k=5)
    inner_retrieve = guarded.inner.retrieve_with_evidence
    unnamed = ["tea#0", "bread#0", "rain#0"]  # passages that name nothing the question names

    def walk(keep_names: bool):
        def ranked(query):
            chunks, evidence = inner_retrieve(query)
            by_id = {n.node.node_id: n for n in chunks}
            head = [first] + (["reed#0", "ada#0", "vant#0"] if keep_names else unnamed)
            order = head + ([c for c in by_id if c not in head] if keep_names else [])
            return [by_id.get(c) or chunk_node(index, c, 0.0, "hipporag") for c in order], evidence
        return ranked

    monkeypatch.setattr(guarded.inner, "retrieve_with_evidence", walk(keep_names=False))
    chunks, evidence = guarded.retrieve_with_evidence(question)
    trace = guard_of(evidence)
    assert trace["walk_keeps_first"] and not trace["walk_stands"] and trace["graph_weight"] <= 0.7
    _, keys = query_link(index, question, 20)
    position = index.chunk_position
    fused = [position[c] for c in ids(chunks)]
    assert names_held(index, keys, np.asarray(fused)) > names_held(index, keys, np.asarray(
        [position[c] for c in [first] + unnamed]))
    monkeypatch.setattr(guarded.inner, "retrieve_with_evidence", walk(keep_names=True))
    chunks, evidence = guarded.retrieve_with_evidence(question)
    assert guard_of(evidence)["walk_stands"] and guard_of(evidence)["graph_weight"] == 1.0
    assert ids(chunks)[0] == first
