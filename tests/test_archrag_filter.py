"""ArchRAG adaptive filtering (Eq. 3-4) as a LangGraph graph: scripted LLMs, malformed scores, a failing item."""

from __future__ import annotations

from typing import TypedDict

import pytest
from langchain_core.language_models.fake_chat_models import FakeListChatModel
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import END, START, StateGraph

from langgraph_agents.archrag_filter import build_archrag_filter_graph, pack_reports, parse_score
from llama_index_graphrag_suite.llm import ScriptedLLM

ITEMS = [
    {"id": "A", "kind": "entity", "layer": 0, "title": "Ada Lorne", "content": "ITEM-A Ada Lorne was born in Marlow."},
    {"id": "B", "kind": "community", "layer": 1, "title": "painters", "content": "ITEM-B Painters of Dunmore."},
    {"id": "C", "kind": "community", "layer": 2, "title": "towns", "content": "ITEM-C Towns on rivers."},
    {"id": "D", "kind": "relation", "layer": 0, "title": "x", "content": "ITEM-D a relation whose call fails"},
    {"id": "E", "kind": "entity", "layer": 0, "title": "Esk", "content": "ITEM-E The Esk River."},
]


def _failing(prompt: str) -> str:
    raise ConnectionError("server down")  # only ITEM-D reaches the responder


def _scripted():
    return ScriptedLLM(rules=[
        (r"ITEM-A", '{"report": "Ada Lorne was born in Marlow.", "score": 80}'),
        (r"ITEM-B", "Analysis: painters in Dunmore, background only.\nScore: 30"),
        (r"ITEM-C", "I cannot tell how relevant this is."),  # no score at all
        (r"ITEM-E", '```json\n{"report": "unrelated river", "score": 0}\n```'),
        (r"Reports:", "Marlow"),
    ], responder=_failing)


@pytest.mark.parametrize("text, expected", [
    ('{"report": "r", "score": 70}', ("r", 70)),
    ('{"report": "r", "score": "85"}', ("r", 85)),
    ('{"report": "r", "score": 150}', ("r", 100)),
    ("The passage names the town.\nScore: 70", ("The passage names the town.", 70)),
    ("Relevance = 45.6", ("", 46)),
    ("useful: 60/100", ("useful:", 60)),
    ("Mentions the painter. Relevance: high.", ("Mentions the painter.", 75)),
    ('{"report": "r", "score": "irrelevant"}', ("r", 0)),
])
def test_parse_score_forms(text, expected):
    assert parse_score(text) == expected


@pytest.mark.parametrize("text", ["", "   ", "I do not know.", '{"report": "no score here"}', "Score: great"])
def test_parse_score_failures(text):
    assert parse_score(text) is None


def test_pack_reports_sorts_drops_zero_and_truncates():
    reports = [{"id": "x", "kind": "entity", "score": 20, "report": "low " * 5},
               {"id": "y", "kind": "entity", "score": 0, "report": "zero"},
               {"id": "z", "kind": "entity", "score": 90, "report": "high " * 5}]
    context, packed = pack_reports(reports, 1000)
    assert [r["id"] for r in packed] == ["z", "x"]
    assert context.index("relevance 90") < context.index("relevance 20") and "zero" not in context
    context, packed = pack_reports([{"id": "big", "kind": "entity", "score": 50, "report": "word " * 500}], 60)
    assert packed[0]["truncated"] is True
    from llama_index_graphrag_suite.llm.usage import count_tokens
    assert count_tokens(context) <= 60


def test_filter_graph_scores_filters_and_answers():
    llm = _scripted()
    app = build_archrag_filter_graph(ITEMS, llm, token_budget=500, max_concurrency=2)
    out = app.invoke({"question": "Where was Ada Lorne born?"})
    assert out["answer"] == "Marlow"
    assert sorted((r["id"], r["score"]) for r in out["reports"]) == [("A", 80), ("B", 30), ("E", 0)]
    reasons = {d["id"]: d["reason"] for d in out["dropped"]}
    assert reasons["C"] == "unreadable_score"
    assert reasons["D"].startswith("llm_error: ConnectionError")
    # Zero score dropped, the rest sorted by score in the final prompt.
    final_prompt = [p for p in llm.prompts if "Reports:" in p][0]
    assert final_prompt.index("Ada Lorne was born in Marlow.") < final_prompt.index("painters in Dunmore")
    assert "unrelated river" not in final_prompt
    # 5 analysis calls (one failed) + the final answer.
    assert out["cost"]["calls"] == 6 and out["cost"]["failures"] == 1
    assert out["cost"]["reports_packed"] == 2 and out["cost"]["reports_zero_score"] == 1
    assert out["cost"]["prompt_tokens"] > 0 and set(out) >= {"answer", "reports", "dropped", "cost", "context"}


def test_filter_graph_with_langchain_model_and_checkpointer():
    model = FakeListChatModel(responses=['{"report": "first", "score": 50}', '{"report": "second", "score": 50}',
                                         "final answer"])
    app = build_archrag_filter_graph(lambda q: ITEMS[:2], model, max_concurrency=1, checkpointer=InMemorySaver())
    config = {"configurable": {"thread_id": "t-1"}}
    out = app.invoke({"question": "q?"}, config)
    assert out["answer"] == "final answer"
    assert sorted(r["report"] for r in out["reports"]) == ["first", "second"]
    saved = app.get_state(config)
    assert saved.values["answer"] == "final answer" and saved.next == ()


def test_filter_graph_without_items_still_answers():
    llm = ScriptedLLM(rules=[(r"no relevant information", "I do not know")])
    out = build_archrag_filter_graph(lambda q: [], llm).invoke({"question": "q?"})
    assert out["answer"] == "I do not know" and out["reports"] == [] and out["cost"]["calls"] == 1


def test_filter_graph_as_a_node_of_a_larger_graph():
    inner = build_archrag_filter_graph(ITEMS[:1], ScriptedLLM(rules=[(r"ITEM-A", '{"report": "r", "score": 60}'),
                                                                  (r"Reports:", "Marlow")]))

    class Outer(TypedDict, total=False):
        question: str
        answer: str
        reports: list[dict]
        dropped: list[dict]
        cost: dict
        context: str
        verdict: str

    outer = StateGraph(Outer)
    outer.add_node("archrag", inner)
    outer.add_node("judge", lambda s: {"verdict": f"{s['answer']} from {len(s['reports'])} report(s)"})
    outer.add_edge(START, "archrag")
    outer.add_edge("archrag", "judge")
    outer.add_edge("judge", END)
    out = outer.compile().invoke({"question": "Where was Ada born?"})
    assert out["verdict"] == "Marlow from 1 report(s)"


def test_filter_graph_rejects_bad_input():
    with pytest.raises(ValueError):
        build_archrag_filter_graph(ITEMS, None)
    with pytest.raises(TypeError):
        build_archrag_filter_graph(42, ScriptedLLM(responses=["x"]))
    with pytest.raises(ValueError):
        build_archrag_filter_graph(ITEMS, ScriptedLLM(responses=["x"])).invoke({"question": ""})
