"""LlamaIndex conventions every method keeps: scores in [0, 1] with a stated meaning, exactly top_k chunk
nodes from retrieve(), and the evidence node only when asked for (the query engine asks for it)."""

from __future__ import annotations

import asyncio

import pytest
from llama_index.core.postprocessor import SimilarityPostprocessor

from llama_index_graphrag_suite.llm import ScriptedLLM
from llama_index_graphrag_suite.methods.base import SCORE_SCALES, retrieve_nodes
from llama_index_graphrag_suite.registry import available_methods, get_retriever, method_info

QUESTION = "Where was the painter of The Grey Harbour born?"
METHODS = sorted(available_methods())
GRAPH_METHODS = ["a2rag", "agrag", "archrag", "hipporag", "pathrag"]  # the methods with an evidence node


@pytest.mark.parametrize("method", METHODS)
def test_scores_are_in_unit_range_nonincreasing_and_survive_a_cutoff(graph_index, method):
    cls = method_info(method).load()
    assert cls.score_scale in SCORE_SCALES and cls.score_meaning.strip()
    nodes = get_retriever(graph_index, method, top_k=5).retrieve(QUESTION)
    scores = [n.score for n in nodes]
    assert all(isinstance(s, float) and 0.0 <= s <= 1.0 for s in scores), scores
    assert scores == sorted(scores, reverse=True)
    assert all(isinstance(n.node.metadata["raw_score"], float) for n in nodes)
    for n in nodes:  # the raw score is bookkeeping: not in the prompt, not embedded
        assert "raw_score" in n.node.excluded_llm_metadata_keys and "raw_score" in n.node.excluded_embed_metadata_keys
        assert "raw_score" not in n.node.get_content(metadata_mode="llm")
    kept = SimilarityPostprocessor(similarity_cutoff=0.1).postprocess_nodes(list(nodes))
    assert kept and kept[0].node.node_id == nodes[0].node.node_id
    if cls.score_scale == "relative":
        assert scores[0] == 1.0


@pytest.mark.parametrize("method", METHODS)
def test_rank_order_is_the_raw_order(graph_index, method):
    nodes = get_retriever(graph_index, method, top_k=5).retrieve(QUESTION)
    if method in ("dense", "bm25", "hybrid", "hipporag", "agrag"):  # one raw scale: the raw scores are sorted
        raws = [n.node.metadata["raw_score"] for n in nodes]
        assert raws == sorted(raws, reverse=True)
    if method == "dense":
        assert all(n.score == pytest.approx(max(0.0, min(1.0, n.node.metadata["raw_score"]))) for n in nodes)


@pytest.mark.parametrize("method", METHODS)
def test_top_k_means_top_k_chunk_nodes(graph_index, method):
    nodes = get_retriever(graph_index, method, top_k=5).retrieve(QUESTION)
    assert len(nodes) == 5 and all(n.node.metadata["kind"] == "chunk" for n in nodes)
    async_nodes = asyncio.run(get_retriever(graph_index, method, top_k=5).aretrieve(QUESTION))
    assert [n.node.node_id for n in async_nodes] == [n.node.node_id for n in nodes]


@pytest.mark.parametrize("method", METHODS)
def test_evidence_when_asked_for(graph_index, method):
    chunks, evidence = get_retriever(graph_index, method, top_k=5).retrieve_with_evidence(QUESTION)
    assert len(chunks) == 5 and all(n.node.metadata["kind"] == "chunk" for n in chunks)
    with_evidence = get_retriever(graph_index, method, top_k=5, include_evidence=True).retrieve(QUESTION)
    if method not in GRAPH_METHODS:
        assert evidence is None and len(with_evidence) == 5
        return
    assert evidence.node.metadata["kind"] == "evidence" and evidence.score == chunks[0].score
    assert len(with_evidence) == 6 and with_evidence[-1].node.metadata["kind"] == "evidence"
    assert [n.node.node_id for n in with_evidence[:5]] == [n.node.node_id for n in chunks]
    assert retrieve_nodes(get_retriever(graph_index, method, top_k=5), QUESTION)[-1].node.node_id == evidence.node.node_id


@pytest.mark.parametrize("method", GRAPH_METHODS)
def test_query_engine_prompt_still_has_the_evidence(graph_index, method):
    retriever = get_retriever(graph_index, method, top_k=3)
    _, evidence = retriever.retrieve_with_evidence(QUESTION)
    line = next(l for l in evidence.node.get_content().splitlines() if l.strip())
    llm = ScriptedLLM(responder=lambda prompt: "Marlow.")
    response = retriever.as_query_engine(llm=llm).query(QUESTION)
    assert "Marlow" in str(response)
    assert any(line in prompt for prompt in llm.prompts), line
    kinds = [n.node.metadata["kind"] for n in response.source_nodes]
    assert kinds.count("evidence") == 1 and kinds.count("chunk") == 3
    async_llm = ScriptedLLM(responder=lambda prompt: "Marlow.")
    asyncio.run(retriever.as_query_engine(llm=async_llm).aquery(QUESTION))
    assert any(line in prompt for prompt in async_llm.prompts)


def test_top_k_breaks_ties_by_index_at_the_cut_too():
    import numpy as np

    from llama_index_graphrag_suite.methods.scoring import top_k

    rng = np.random.default_rng(0)
    for _ in range(200):
        # coarse scores: many exact ties, as duplicated passages give
        scores = rng.integers(0, 6, size=rng.integers(1, 60)).astype(np.float64)
        full = np.lexsort((np.arange(scores.size), -scores))  # every index, best first, ties by index
        for k in (1, 3, 5, 20, 100):
            assert top_k(scores, k).tolist() == full[:k].tolist()
    # two passages tied at the fifth place: the lower index is kept, whatever k the caller asks for
    scores = np.array([0.9, 0.8, 0.7, 0.6, 0.1, 0.5, 0.1, 0.5, 0.0])
    assert top_k(scores, 5).tolist() == [0, 1, 2, 3, 5]
    assert top_k(scores, 20)[:5].tolist() == top_k(scores, 5).tolist()
    assert top_k(np.array([np.nan, 1.0, 2.0]), 2).tolist() == [2, 1]
