"""An index with no documents yet: every method's retriever finds nothing (as LlamaIndex's own retrievers do)
instead of failing inside the method."""

import asyncio

import pytest

from llama_index_graphrag_suite import GraphRAGIndex
from llama_index_graphrag_suite.embeddings import HashEmbedding
from llama_index_graphrag_suite.registry import method_names


@pytest.mark.parametrize("method", method_names())
def test_every_method_on_an_empty_index_finds_nothing(method):
    retriever = GraphRAGIndex(embed_model=HashEmbedding(dim=64)).as_retriever(method)
    assert retriever.retrieve("Who founded the gallery?") == []
    assert asyncio.run(retriever.aretrieve("Who founded the gallery?")) == []


@pytest.mark.parametrize("top_k", [5.5, "5", True, None])
def test_a_top_k_that_is_no_whole_number_is_refused(graph_index, top_k):
    for method in ("hybrid", "agrag", "agrag:paper"):
        with pytest.raises(TypeError, match="top_k must be a whole number"):
            graph_index.as_retriever(method, top_k=top_k)
