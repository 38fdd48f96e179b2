"""Instrumentation spans: each method's stages and an index build's stages, seen by a handler on the root dispatcher."""

from __future__ import annotations

import asyncio

import llama_index.core.instrumentation as instrument
import pytest
from conftest import CORPUS
from llama_index.core.instrumentation.span_handlers import SimpleSpanHandler

from llama_index_graphrag_suite import GraphRAGIndex, IndexConfig
from llama_index_graphrag_suite.documents import make_document
from llama_index_graphrag_suite.embeddings import HashEmbedding
from llama_index_graphrag_suite.registry import get_retriever
from llama_index_graphrag_suite.tracing import span_name, stage, traced

QUESTION = "Which painter taught Ada Lorne at Kell Academy?"


@pytest.fixture
def spans():
    """A SimpleSpanHandler on the root dispatcher for one test; removed after it (nothing leaks into other tests)."""
    root = instrument.get_dispatcher()
    handler = SimpleSpanHandler()
    root.add_span_handler(handler)
    try:
        yield handler
    finally:
        root.span_handlers.remove(handler)


def tree(handler) -> dict[str, tuple[str, str | None]]:
    """span id -> (name, parent id), for the spans that ended (completed or dropped)."""
    return {s.id_: (span_name(s.id_), s.parent_id) for s in handler.completed_spans + handler.dropped_spans}


def ancestors(spans: dict, span_id: str) -> list[str]:
    names, parent = [], spans[span_id][1]
    while parent is not None and parent in spans:
        names.append(spans[parent][0])
        parent = spans[parent][1]
    return names


def stages_under(handler, outer: str) -> set[str]:
    """Names of the spans that have a span named ``outer`` above them."""
    spans = tree(handler)
    return {name for sid, (name, _) in spans.items() if outer in ancestors(spans, sid)}


@pytest.mark.parametrize("method, expected", [
    ("agrag", {"agrag.hybrid", "agrag.fact_mapping", "agrag.triple_filter", "agrag.ppr", "agrag.steiner", "agrag.mcmi"}),
    ("pathrag", {"pathrag.keywords", "pathrag.node_retrieval", "pathrag.flow_propagation", "pathrag.path_ranking"}),
    ("archrag", {"archrag.hierarchical_search", "archrag.relations", "archrag.chunk_ranking"}),
    ("a2rag", {"a2rag.seeds", "a2rag.local", "a2rag.chunk_ranking"}),
])
def test_method_stages_nest_under_the_retrieve_span(graph_index, spans, method, expected):
    retriever = get_retriever(graph_index, method, top_k=3)
    assert retriever.retrieve(QUESTION)
    outer = f"{type(retriever).__name__}.retrieve"  # the span LlamaIndex's BaseRetriever.retrieve opens
    assert expected <= stages_under(spans, outer), stages_under(spans, outer)
    assert expected <= stages_under(spans, f"{type(retriever).__name__}._retrieve")


def test_every_a2rag_stage_and_the_gate(graph_index, spans):
    for name in ("local", "bridge", "global"):  # one stage each: the last stage always runs
        get_retriever(graph_index, "a2rag", top_k=3, stages=(name,)).retrieve(QUESTION)
    assert {"a2rag.local", "a2rag.bridge", "a2rag.global"} <= stages_under(spans, "A2RAGRetriever.retrieve")
    get_retriever(graph_index, "a2rag").gate(QUESTION)
    assert "a2rag.gate" in {name for name, _ in tree(spans).values()}


def test_async_retrieve_nests_the_stages_too(graph_index, spans):
    retriever = get_retriever(graph_index, "agrag", top_k=3)
    asyncio.run(retriever.aretrieve(QUESTION))  # the guard's span, the method's stages under it
    assert {"agrag.ppr", "agrag.steiner"} <= stages_under(spans, f"{type(retriever).__name__}.aretrieve")


def test_index_build_stages_nest_under_the_insert_span(spans):
    docs = [make_document(i, text, title) for i, title, text in CORPUS]
    index = GraphRAGIndex.from_documents(docs[:4], embed_model=HashEmbedding(dim=128),
                                         config=IndexConfig(entities="statistical", entity_threshold=0.1))
    build = {"index.chunk", "index.extract", "index.embed", "index.synonyms", "index.graph"}
    assert build <= stages_under(spans, "index.insert")
    assert set(index.build_info["stage_seconds"]) >= {"chunk", "extract", "embed", "synonyms", "graph"}
    index.refresh(docs)  # a refresh's insert nests under its own span
    assert {"index.insert", "index.embed"} <= stages_under(spans, "index.refresh")
    index.delete("p-ada")
    assert "index.delete" in {name for name, _ in tree(spans).values()}


def test_a_failing_stage_is_dropped_with_its_error_and_the_error_passes_through(spans):
    @traced("demo.outer")
    def outer():
        with stage("demo.inner"):
            raise KeyError("boom")

    with pytest.raises(KeyError, match="boom"):
        outer()
    dropped = {span_name(s.id_): s for s in spans.dropped_spans}
    assert set(dropped) == {"demo.outer", "demo.inner"}
    assert dropped["demo.inner"].parent_id == dropped["demo.outer"].id_
    assert "boom" in dropped["demo.inner"].metadata["error"]


def test_traced_refuses_async_functions():
    with pytest.raises(TypeError, match="async"):
        @traced("demo.async")
        async def nope():
            return None
