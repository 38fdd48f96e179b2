"""Cited answers: every method's answer prompt numbers the passages and asks for [n] citations; the response
names the cited chunks; a number that no passage has is flagged. Scripted LLMs only."""

from __future__ import annotations

import asyncio
import json

import pytest
from llama_index.core.schema import NodeWithScore, QueryBundle, TextNode

from llama_index_graphrag_suite.citations import (
    CITATION_RULES,
    citation_markers,
    number_passages,
    resolve_citations,
)
from llama_index_graphrag_suite.llm import ScriptedLLM
from llama_index_graphrag_suite.registry import get_retriever

QUESTION = "Which museum holds the painting by the painter born in Marlow?"
METHODS = ["dense", "bm25", "hybrid", "hipporag", "agrag", "pathrag", "archrag", "a2rag"]
TOP_K = 3
# LlamaIndex's default QA template forbids citing; no method may answer with it any more
DEFAULT_QA_WORDS = "Never directly reference the given context"


def _passages(response):
    return [n for n in response.source_nodes if n.node.metadata.get("kind") != "evidence"]


@pytest.mark.parametrize("method", METHODS)
def test_every_method_numbers_the_passages_and_resolves_the_citations(graph_index, method):
    llm = ScriptedLLM(responder=lambda prompt: "The Vant Gallery holds it [2], as the painter was born in Marlow [1][9].")
    response = get_retriever(graph_index, method, top_k=TOP_K).as_query_engine(llm=llm).query(QUESTION)
    prompt = llm.prompts[-1]
    assert CITATION_RULES in prompt and DEFAULT_QA_WORDS not in prompt
    passages = _passages(response)
    assert [n.node.metadata["citation"] for n in passages] == [1, 2, 3]
    for n in passages:  # each passage reaches the prompt under its number, and keeps its chunk id
        number = n.node.metadata["citation"]
        assert f"[{number}] " in prompt and n.node.node_id in graph_index.chunks
        assert n.node.get_content().startswith(f"[{number}] ")
    cites = response.metadata["citations"]
    assert cites["cited"] == [2, 1] and cites["invalid"] == [9]
    assert cites["cited_chunk_ids"] == [passages[1].node.node_id, passages[0].node.node_id]
    assert [p["cited"] for p in cites["passages"]] == [True, True, False]
    assert [n.node.metadata["cited"] for n in passages] == [True, True, False]
    assert [p["chunk_id"] for p in cites["passages"]] == [n.node.node_id for n in passages]


def test_the_numbered_chunks_are_the_retrieved_chunks_in_rank_order(graph_index):
    retriever = get_retriever(graph_index, "agrag", top_k=TOP_K)
    chunks, evidence = retriever.retrieve_with_evidence(QUESTION)
    llm = ScriptedLLM(responder=lambda prompt: "The Vant Gallery [1].")
    response = retriever.as_query_engine(llm=llm).query(QUESTION)
    assert [n.node.node_id for n in _passages(response)] == [n.node.node_id for n in chunks]
    # the reasoning graph comes first and is not a passage: it has no number
    assert response.source_nodes[0].node.node_id == evidence.node.node_id
    assert "citation" not in response.source_nodes[0].node.metadata
    assert not llm.prompts[-1].split("Context:", 1)[1].lstrip().startswith("[1]")
    # the retriever's own nodes are untouched: numbering works on copies
    assert not chunks[0].node.get_content().startswith("[1]")


def test_async_query_cites_too(graph_index):
    llm = ScriptedLLM(responder=lambda prompt: "The Vant Gallery [3].")
    engine = get_retriever(graph_index, "hybrid", top_k=TOP_K).as_query_engine(llm=llm)
    response = asyncio.run(engine.aquery(QUESTION))
    assert response.metadata["citations"]["cited"] == [3] and response.metadata["citations"]["invalid"] == []


def test_a_streamed_answer_has_its_citations_once_read(graph_index):
    llm = ScriptedLLM(responder=lambda prompt: "The Vant Gallery holds it [1] [4].")
    engine = get_retriever(graph_index, "a2rag", top_k=TOP_K).as_query_engine(llm=llm, streaming=True)
    response = engine.query(QUESTION)
    text = "".join(response.response_gen)
    assert text.strip() == "The Vant Gallery holds it [1] [4]."
    assert response.metadata["citations"]["cited"] == [1] and response.metadata["citations"]["invalid"] == [4]


def test_engine_synthesize_with_nodes_already_retrieved(graph_index):
    """The server answers from the nodes it has already retrieved: ``engine.synthesize`` numbers them too."""
    retriever = get_retriever(graph_index, "pathrag", top_k=TOP_K)
    nodes = retriever.retrieve_with_evidence(QUESTION)
    llm = ScriptedLLM(responder=lambda prompt: "No passage says so.")
    response = retriever.as_query_engine(llm=llm).synthesize(QueryBundle(QUESTION), nodes[0] + [nodes[1]])
    cites = response.metadata["citations"]
    assert cites["cited"] == [] and cites["invalid"] == [] and len(cites["passages"]) == TOP_K
    assert "[1] " in llm.prompts[-1] and "[3] " in llm.prompts[-1]


def test_a_replaced_answer_prompt_still_gets_numbered_passages(graph_index):
    from llama_index.core import PromptTemplate

    retriever = get_retriever(graph_index, "dense", top_k=2)
    retriever.update_prompts({"answer": PromptTemplate("MINE {context_str} Q: {query_str}")})
    llm = ScriptedLLM(responder=lambda prompt: "x [2]")
    response = retriever.as_query_engine(llm=llm).query(QUESTION)
    assert llm.prompts[-1].startswith("MINE [1] ") and response.metadata["citations"]["cited"] == [2]


# ------------------------------------------------------------------------------- parsing, unit level

def _node(ident: str, kind: str = "chunk", title: str = "") -> NodeWithScore:
    return NodeWithScore(node=TextNode(id_=ident, text=f"text of {ident}", metadata={"kind": kind, "title": title}),
                         score=0.5)


def test_marker_forms():
    text = "A [1, 2]; B [3][4]; C [ 5 ]; not [entity 12], [2a], [x] or [] - but [0]."
    assert [m["numbers"] for m in citation_markers(text)] == [[1, 2], [3], [4], [5], [0]]
    first = citation_markers(text)[0]
    assert text[first["start"]:first["end"]] == "[1, 2]"


def test_resolve_flags_numbers_no_passage_has():
    nodes = number_passages([_node("evidence-x", kind="evidence"), _node("c1", title="Ada"), _node("c2")])
    assert nodes[0].node.node_id == "evidence-x" and "citation" not in nodes[0].node.metadata
    assert nodes[1].node.get_content() == "[1] Ada\ntext of c1" and nodes[2].node.get_content() == "[2] text of c2"
    found = resolve_citations("B [2]. A [1] and [0], [3], [2].", nodes)
    assert found.cited == [2, 1] and found.invalid == [0, 3] and found.cited_chunk_ids == ["c2", "c1"]
    assert resolve_citations("no citations at all", nodes).to_json()["cited_chunk_ids"] == []


# ------------------------------------------------------------------------------- the one query path (runner)

def test_runner_answer_records_the_citations_in_the_result(graph_index):
    from llama_index_graphrag_suite.runner import answer, retrieve, stream_answer

    run = retrieve(graph_index, QUESTION, "agrag", top_k=TOP_K)
    text = answer(run, ScriptedLLM(responder=lambda prompt: "The Vant Gallery [2][7]."))
    chunk_ids = [n["id"] for n in run.result["nodes"] if n["kind"] == "chunk"]
    cites = run.result["citations"]
    assert text == "The Vant Gallery [2][7]." and cites["cited_chunk_ids"] == [chunk_ids[1]] and cites["invalid"] == [7]
    assert [p["chunk_id"] for p in cites["passages"]] == chunk_ids  # passage n is the n-th chunk of the result
    json.dumps(run.result)  # the server returns it as JSON

    run = retrieve(graph_index, QUESTION, "a2rag", top_k=TOP_K)
    pieces = list(stream_answer(run, ScriptedLLM(responder=lambda prompt: "It is the Vant Gallery [3].")))
    assert "".join(pieces).strip() == "It is the Vant Gallery [3]." and run.result["citations"]["cited"] == [3]


def test_archrag_filtering_answer_cites_its_reports():
    from langgraph_agents.archrag_filter import build_archrag_filter_graph

    items = [{"id": "e-ada", "kind": "entity", "layer": 0, "title": "Ada Lorne", "content": "ITEM-A born in Marlow"},
             {"id": "c-7", "kind": "community", "layer": 1, "title": "Painters", "content": "ITEM-B painters of Marlow"}]
    llm = ScriptedLLM(rules=[(r"ITEM-A", '{"report": "Ada was born in Marlow.", "score": 90}'),
                             (r"ITEM-B", '{"report": "Painters of Marlow.", "score": 40}'),
                             (r"Reports:", "Marlow [1] [5].")])
    out = build_archrag_filter_graph(items, llm).invoke({"question": "Where was Ada Lorne born?"})
    assert "cite the reports" in [p for p in llm.prompts if "Reports:" in p][0]
    cites = out["citations"]
    assert cites["cited"] == [1] and cites["invalid"] == [5] and cites["cited_chunk_ids"] == []
    assert [(p["number"], p["item_id"], p["cited"]) for p in cites["passages"]] == [(1, "e-ada", True), (2, "c-7", False)]
