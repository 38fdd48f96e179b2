"""The bench's llamaindex_hybrid baseline: LlamaIndex's QueryFusionRetriever over its BM25Retriever and a vector
retriever, on the index's own chunks and vectors (nothing embedded again)."""

from __future__ import annotations

import builtins

import pytest

from llama_index_graphrag_suite.registry import get_retriever, method_names

TEXTS = {
    "tea": "Green tea is brewed at low temperature; black tea needs boiling water.",
    "bread": "Sourdough bread rises slowly because wild yeast ferments the dough.",
    "rain": "Rain gauges measure how much water falls during a storm.",
    "kiln": "A kiln fires clay at high temperature until it turns to stone.",
    "quay": "Fishing boats unload their catch on the quay at dawn.",
}


@pytest.fixture(scope="module")
def index():
    from conftest import index_of_texts

    return index_of_texts(TEXTS)


def test_it_fuses_llamaindexs_bm25_and_vector_rankings_of_our_chunks(index):
    from llama_index.core.llms import MockLLM
    from llama_index.core.retrievers import QueryFusionRetriever

    assert "llamaindex_hybrid" in method_names()  # a row of every `bench --methods all`
    retriever = get_retriever(index, "llamaindex_hybrid", top_k=3)
    question = "which drink needs boiling water"
    nodes = retriever.retrieve(question)
    assert [n.node.metadata["kind"] for n in nodes] == ["chunk"] * 3 and nodes[0].node.metadata["doc_id"] == "tea"
    scores = [n.score for n in nodes]
    assert scores == sorted(scores, reverse=True) and scores[0] == 1.0
    # the same as LlamaIndex's fusion of the two retrievers it is built from, asked with the index's query vector
    from llama_index.core.schema import QueryBundle

    vector, bm25 = retriever._retrievers(3)
    fusion = QueryFusionRetriever([vector, bm25], llm=MockLLM(), mode="reciprocal_rerank", similarity_top_k=3,
                                  num_queries=1, use_async=False)
    by_hand = fusion.retrieve(QueryBundle(question, embedding=index.embed_query(question).tolist()))
    assert [n.node.node_id for n in nodes] == [n.node.node_id for n in by_hand]
    # the vector side reads the index's stored vectors: its top chunk is our dense baseline's
    assert vector.retrieve(QueryBundle(question, embedding=index.embed_query(question).tolist()))[0].node.node_id == \
        get_retriever(index, "dense", top_k=1).retrieve(question)[0].node.node_id


def test_without_the_package_it_says_which_to_install(index, monkeypatch):
    real_import = builtins.__import__

    def no_bm25(name, *args, **kwargs):
        if name.startswith("llama_index.retrievers.bm25"):
            raise ImportError("No module named 'llama_index.retrievers.bm25'")
        return real_import(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", no_bm25)
    with pytest.raises(ImportError, match="pip install llama-index-retrievers-bm25"):
        get_retriever(index, "llamaindex_hybrid", top_k=2).retrieve("tea")
