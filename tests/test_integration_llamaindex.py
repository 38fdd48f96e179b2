"""LlamaIndex integration: every method from one entry point, PropertyGraphIndex round trips, PGRetriever,
query engines (sync, async, streaming), token counting and instrumentation events."""

from __future__ import annotations

import asyncio

import pytest
from llama_index.core import PropertyGraphIndex, Settings, StorageContext, load_index_from_storage
from llama_index.core.callbacks import CallbackManager, TokenCountingHandler
from llama_index.core.indices.property_graph import PGRetriever, VectorContextRetriever

from llama_index_graphrag_suite.index.derive import graph_index_of
from llama_index_graphrag_suite.registry import as_query_engine, as_retriever
from llama_index_graphrag_suite.extractors import (
    CooccurrenceRelationExtractor,
    StatisticalEntityExtractor,
    SynonymEdgeExtractor,
)
from llama_index_graphrag_suite.llm import ScriptedLLM
from llama_index_graphrag_suite.registry import UnknownMethodError, available_methods
from llama_index_graphrag_suite.methods.pg_subretriever import GraphRAGSubRetriever

QUESTION = "Which museum holds the painting by the painter born in Marlow?"


@pytest.fixture(scope="module")
def index(graph_index):
    return graph_index


def _extractors(embed):
    return [StatisticalEntityExtractor(threshold=0.3), CooccurrenceRelationExtractor(), SynonymEdgeExtractor(embed_model=embed)]


def _pg_index(documents, embed, embed_kg_nodes=False):
    return PropertyGraphIndex.from_documents(
        documents,
        kg_extractors=_extractors(embed),
        embed_model=embed, embed_kg_nodes=embed_kg_nodes, use_async=False,
    )


@pytest.mark.parametrize("method", sorted(available_methods()))
def test_every_method_is_one_call_away(index, method):
    nodes = index.as_retriever(method=method, top_k=3).retrieve(QUESTION)
    chunks = [n for n in nodes if n.node.metadata["kind"] == "chunk"]
    assert 1 <= len(chunks) <= 3
    assert all(n.node.metadata["method"] == method and n.node.metadata["chunk_id"] == n.node.node_id for n in chunks)
    assert sum(n.node.metadata["kind"] == "evidence" for n in nodes) <= 1


def test_unknown_method_names_the_available_ones(index):
    with pytest.raises(UnknownMethodError, match="available: .*agrag"):
        index.as_retriever(method="graphrag-9000")


def test_property_graph_index_persisted_and_reloaded_serves_every_method(tmp_path, documents, embed):
    pg = _pg_index(documents, embed)
    pg.storage_context.persist(persist_dir=str(tmp_path))
    reloaded = load_index_from_storage(StorageContext.from_defaults(persist_dir=str(tmp_path)),
                                       embed_model=embed, kg_extractors=_extractors(embed))
    assert isinstance(reloaded, PropertyGraphIndex)
    for method in ("agrag", "hybrid", "hipporag"):
        nodes = as_retriever(reloaded, method, top_k=3).retrieve(QUESTION)
        assert [n for n in nodes if n.node.metadata["kind"] == "chunk"]
    assert graph_index_of(reloaded) is graph_index_of(reloaded)  # derived once, reused by every method


def test_derived_index_notices_an_insert(documents, embed):
    pg = _pg_index(documents[:4], embed)
    first = graph_index_of(pg)
    pg.insert(documents[4])
    second = graph_index_of(pg)
    assert second is not first and len(second.chunks) == len(first.chunks) + 1


def test_our_sub_retriever_combines_with_vector_context_retriever(documents, embed):
    pg = _pg_index(documents, embed, embed_kg_nodes=True)
    ours = GraphRAGSubRetriever.from_index(pg, method="agrag", top_k=3)
    theirs = VectorContextRetriever(pg.property_graph_store, vector_store=pg.vector_store, embed_model=embed,
                                    similarity_top_k=2, path_depth=1)
    nodes = PGRetriever(sub_retrievers=[ours, theirs]).retrieve(QUESTION)
    kinds = [n.node.metadata.get("kind") for n in nodes]
    assert "chunk" in kinds  # ours: whole chunks with provenance
    assert any(k is None and "->" in n.node.get_content() for k, n in zip(kinds, nodes))  # theirs: triplets
    # the same combination through LlamaIndex's own entry point
    qe_nodes = pg.as_retriever(sub_retrievers=[ours]).retrieve(QUESTION)
    assert [n.node.node_id for n in qe_nodes if n.node.metadata.get("kind") == "chunk"]


def _answering_llm():
    return ScriptedLLM(responder=lambda prompt: "The Vant Gallery holds The Grey Harbour.")


@pytest.mark.parametrize("method", sorted(available_methods()))
def test_query_engine_sync_async_streaming(index, method):
    engine = index.as_query_engine(method=method, llm=_answering_llm())
    response = engine.query(QUESTION)
    assert "Vant Gallery" in str(response)
    kinds = [n.node.metadata.get("kind") for n in response.source_nodes]
    assert "chunk" in kinds
    if "evidence" in kinds:  # PathRAG ends its prompt with the paths (Eq. 6); the others lead with the structure
        assert kinds.index("evidence") == (len(kinds) - 1 if method == "pathrag" else 0)

    async_response = asyncio.run(engine.aquery(QUESTION))
    assert "Vant Gallery" in str(async_response)

    streaming = index.as_query_engine(method=method, llm=_answering_llm(), streaming=True).query(QUESTION)
    pieces = list(streaming.response_gen)
    assert len(pieces) > 1 and "".join(pieces).strip() == "The Vant Gallery holds The Grey Harbour."


def test_method_prompt_reaches_the_llm(index):
    llm = _answering_llm()
    index.as_query_engine(method="agrag", llm=llm).query(QUESTION)
    assert "reasoning" in llm.prompts[-1].lower()  # AGRAG's own answer prompt, not LlamaIndex's default


def test_token_counting_handler_counts_our_query_engine(index):
    counter = TokenCountingHandler()
    engine = as_query_engine(index, "agrag", llm=_answering_llm(), callback_manager=CallbackManager([counter]))
    engine.query(QUESTION)
    assert counter.prompt_llm_token_count > 50 and counter.completion_llm_token_count > 3


def test_instrumentation_sees_retrieval(index):
    import llama_index.core.instrumentation as instrument
    from llama_index.core.instrumentation.event_handlers import BaseEventHandler

    class Collector(BaseEventHandler):
        seen: list = []

        @classmethod
        def class_name(cls) -> str:
            return "Collector"

        def handle(self, event, **kwargs) -> None:
            self.seen.append(event.class_name())

    collector = Collector()
    root = instrument.get_dispatcher()
    root.add_event_handler(collector)
    try:
        index.as_query_engine(method="hybrid", llm=_answering_llm()).query(QUESTION)
    finally:
        root.event_handlers.remove(collector)
    seen = collector.seen
    assert seen.index("RetrievalStartEvent") < seen.index("RetrievalEndEvent") < seen.index("QueryEndEvent")


def test_query_engine_without_llm_is_a_clear_error(index, monkeypatch):
    monkeypatch.setattr(Settings, "_llm", None)
    index.llm = None
    with pytest.raises(ValueError, match="needs an LLM"):
        index.as_query_engine(method="hybrid")
