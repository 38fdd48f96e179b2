"""A2RAG control loop (Section III-B, Algorithm 1) as a LangGraph state machine, driven by scripted LLMs."""

from __future__ import annotations

import asyncio
import operator
import threading
from typing import Annotated, TypedDict

import pytest
from langchain_core.language_models.fake_chat_models import FakeListChatModel
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import END, START, StateGraph
from langgraph.types import Command
from llama_index.core.schema import NodeWithScore, TextNode

from langgraph_agents.a2rag_loop import a2rag_tool, build_a2rag_graph
from langgraph_agents.a2rag_validators import evidence_facts, parse_rewrite, parse_yes_no
from langgraph_agents.llm_adapter import as_text_llm
from llama_index_graphrag_suite.llm import ScriptedLLM

QUESTION = "Where was Ada Lorne born?"
ANSWER_TASK = "Task: answer a question"
CHECK_TASKS = {"relevance": "Task: check evidence relevance",
               "grounding": "Task: check that an answer is grounded",
               "adequacy": "Task: check that an answer resolves"}
REWRITE_TASKS = {"relevance": "whose evidence was off-topic",
                 "grounding": "whose answer was not grounded",
                 "adequacy": "whose answer was incomplete"}


class FakeA2RAGRetriever:
    """Stands in for A2RAGRetriever: chunk nodes + one evidence node, a gate on the word 'Ada'."""

    def __init__(self, fail: bool = False):
        self.queries: list[str] = []
        self.threads: list[int] = []
        self.fail = fail

    def retrieve(self, query: str) -> list[NodeWithScore]:
        self.queries.append(query)
        self.threads.append(threading.get_ident())
        if self.fail:
            raise RuntimeError("index unavailable")
        chunk = TextNode(id_="p-ada#0", text="Ada Lorne was a painter born in Marlow.",
                         metadata={"kind": "chunk", "chunk_id": "p-ada#0", "doc_id": "p-ada", "title": "Ada Lorne"})
        stage = ["bridge", "local"][len(self.queries) % 2]  # as A2RAGRetriever's evidence metadata names it
        evidence = TextNode(id_="ev", text="Ada Lorne | born in | Marlow", metadata={"kind": "evidence", "evidence": {
            "stage_reached": stage, "seeds": [{"mention": "Ada Lorne"}], "stages_tried": [{"stage": "local"}],
            "llm_calls": 1, "graph_evidence": {"edges": [
                {"kind": "relation", "subject": "Ada Lorne", "predicate": "born in", "object": "Marlow", "fact_id": "f-1"},
                {"kind": "contains", "u": "p-ada#0", "v": "ada lorne"}]}}})
        return [NodeWithScore(node=chunk, score=0.9), NodeWithScore(node=evidence)]

    def gate_score(self, query: str) -> float:
        return 0.8 if "Ada" in query else 0.1

    def gate(self, query: str) -> bool:
        return self.gate_score(query) >= 0.5


def script(fail: dict[str, list[str]] | None = None, answer: str = "Ada Lorne was born in Marlow [1].",
           rewrite: str = "New query: Ada Lorne birthplace") -> ScriptedLLM:
    """An LLM that answers by task; ``fail[check]`` lists that check's replies in order ("yes" after)."""
    queue = {check: list(replies) for check, replies in (fail or {}).items()}

    def respond(prompt: str) -> str:
        if prompt.startswith(ANSWER_TASK):
            return answer
        if prompt.startswith("Task: rewrite"):
            return rewrite
        check = next(c for c, task in CHECK_TASKS.items() if prompt.startswith(task))
        return queue[check].pop(0) if queue.get(check) else "yes"

    return ScriptedLLM(responder=respond)


def nodes_run(graph, inputs, config=None) -> list[str]:
    return [node for update in graph.stream(inputs, config, stream_mode="updates") for node in update]


# -- gate, first-round success ----------------------------------------------------------------------
def test_gate_abstains_out_of_scope_without_retrieval_or_llm():
    retriever, llm = FakeA2RAGRetriever(), script()
    out = build_a2rag_graph(retriever, llm).invoke({"question": "Who won the 1990 World Cup?"})
    assert out["status"] == "abstain" and out["answer"] is None
    assert retriever.queries == [] and llm.call_count == 0
    assert out["cost"]["gate_score"] == 0.1 and out["cost"]["llm_calls"] == 0
    assert [e["node"] for e in out["trace"]] == ["gate"]


def test_gate_threshold_and_callable_override_the_retriever():
    retriever = FakeA2RAGRetriever()
    assert build_a2rag_graph(retriever, script(), gate=0.05).invoke({"question": "World Cup?"})["status"] == "answered"
    assert build_a2rag_graph(retriever, script(), gate=0.9).invoke({"question": QUESTION})["status"] == "abstain"
    by_rule = build_a2rag_graph(retriever, script(), gate=lambda q: "Cup" in q)
    assert by_rule.invoke({"question": QUESTION})["status"] == "abstain"
    with pytest.raises(ValueError, match=r"\[0, 1\]"):
        build_a2rag_graph(retriever, script(), gate=1.5)


def test_a_retriever_without_a_gate_always_passes_and_threshold_needs_gate_score():
    class Plain:  # any LlamaIndex-style retriever: no summaries, no evidence node
        def retrieve(self, query):
            return [NodeWithScore(node=TextNode(id_="x", text="Marlow is a town."), score=1.0)]

    out = build_a2rag_graph(Plain(), script()).invoke({"question": "Anything at all?"})
    assert out["status"] == "answered" and out["documents"][0]["id"] == "x" and out["facts"] == []
    with pytest.raises(ValueError, match="gate_score"):
        build_a2rag_graph(Plain(), script(), gate=0.5)


def test_empty_retrieval_fails_relevance_without_spending_llm_calls():
    class Empty:
        def __init__(self):
            self.calls = 0

        def retrieve(self, query):
            self.calls += 1
            return []

    retriever, llm = Empty(), script()
    out = build_a2rag_graph(retriever, llm).invoke({"question": QUESTION})
    assert out["status"] == "fail" and retriever.calls == 2
    assert out["checks"][0] == {"check": "relevance", "passed": False, "reason": "no evidence retrieved"}
    assert [p.splitlines()[0] for p in llm.prompts] == ["Task: rewrite a search query whose evidence was off-topic."]


def test_verified_on_the_first_round_with_a_cost_record():
    retriever, llm = FakeA2RAGRetriever(), script()
    graph = build_a2rag_graph(retriever, llm)
    out = graph.invoke({"question": QUESTION})
    assert out["status"] == "answered" and out["answer"] == "Ada Lorne was born in Marlow [1]."
    assert retriever.queries == [QUESTION]
    expected = [ANSWER_TASK, *CHECK_TASKS.values()]  # answer, then relevance, grounding, adequacy
    assert len(llm.prompts) == 4 and all(p.startswith(t) for p, t in zip(llm.prompts, expected))
    assert [c["passed"] for c in out["checks"]] == [True, True, True]
    assert out["documents"][0]["id"] == "p-ada#0" and out["evidence"]["stage_reached"] == "local"
    assert out["facts"] == [{"subject": "Ada Lorne", "predicate": "born in", "object": "Marlow", "fact_id": "f-1"}]
    cost = out["cost"]
    assert (cost["llm_calls"], cost["retrieval_rounds"], cost["retries"], cost["stage_reached"]) == (4, 1, 0, "local")
    assert cost["retriever_llm_calls"] == 1  # reported by the retriever's evidence, not made by the loop
    assert cost["prompt_tokens"] > 0 and cost["completion_tokens"] > 0
    # The answer prompt carries the graph fact and the numbered passage.
    assert "Ada Lorne | born in | Marlow" in llm.prompts[0] and "[1] Ada Lorne: Ada Lorne was a painter" in llm.prompts[0]


def test_concurrent_runs_keep_separate_cost_records():
    text_llm = as_text_llm(script(fail={"adequacy": ["no"]}))  # one run of three needs a retry
    graph = build_a2rag_graph(FakeA2RAGRetriever(), text_llm)
    outs = graph.batch([{"question": QUESTION}] * 3)
    assert sorted(o["cost"]["llm_calls"] for o in outs) == [4, 4, 9]  # 4 + (4 + rewrite + 4)
    assert text_llm.cost.calls == 17  # the wrapper the caller holds keeps the running total


def test_langchain_chat_model_drives_the_loop():
    model = FakeListChatModel(responses=["Marlow [1].", "yes", "Yes.", "yes, it does"])
    out = build_a2rag_graph(FakeA2RAGRetriever(), model).invoke({"question": QUESTION})
    assert out["status"] == "answered" and out["answer"] == "Marlow [1]." and out["cost"]["llm_calls"] == 4


# -- failure-aware rewrite and the retry bound -------------------------------------------------------
@pytest.mark.parametrize("check", ["relevance", "grounding", "adequacy"])
def test_each_failure_type_triggers_its_own_rewrite(check):
    retriever, llm = FakeA2RAGRetriever(), script(fail={check: [f"no, {check} is lacking"]})
    out = build_a2rag_graph(retriever, llm).invoke({"question": QUESTION})
    assert out["status"] == "answered"
    rewrites = [p for p in llm.prompts if p.startswith("Task: rewrite")]
    assert len(rewrites) == 1 and REWRITE_TASKS[check] in rewrites[0]
    assert f"Why the check failed: {check} is lacking" in rewrites[0]
    assert retriever.queries == [QUESTION, "Ada Lorne birthplace"]  # the rewrite drives the second retrieval
    first_verify = next(e for e in out["trace"] if e["node"] == "verify")
    order = ["relevance", "grounding", "adequacy"]
    failed_at = order.index(check)
    # Checks after the first failure are skipped (None): they could not change the rewrite.
    assert first_verify["failure"] == check
    assert [first_verify["checks"][c] for c in order] == [True] * failed_at + [False] + [None] * (2 - failed_at)
    rewrite = next(e for e in out["trace"] if e["node"] == "rewrite")
    assert rewrite == {"node": "rewrite", "type": check, "from": QUESTION, "to": "Ada Lorne birthplace"}
    assert (out["cost"]["retries"], out["cost"]["retrieval_rounds"], out["cost"]["stages"]) == (1, 2, ["local", "bridge"])
    assert "The question was refined to: Ada Lorne birthplace" in [p for p in llm.prompts if p.startswith(ANSWER_TASK)][1]


@pytest.mark.parametrize("max_iterations", [1, 2, 3])
def test_retry_bound_fails_after_exactly_max_iterations_retrievals(max_iterations):
    retriever, llm = FakeA2RAGRetriever(), script(fail={"adequacy": ["no"] * 10})
    out = build_a2rag_graph(retriever, llm, max_iterations=max_iterations).invoke({"question": QUESTION})
    assert out["status"] == "fail" and out["answer"] is None and "retry budget exhausted" in out["error"]
    assert len(retriever.queries) == max_iterations
    rewrites = sum(p.startswith("Task: rewrite") for p in llm.prompts)
    assert rewrites == max_iterations - 1 == out["cost"]["retries"]
    # per round: answer + three checks; plus the rewrites between rounds
    assert llm.call_count == out["cost"]["llm_calls"] == 4 * max_iterations + max_iterations - 1
    assert out["draft"] == "Ada Lorne was born in Marlow [1]."  # the last unverified candidate stays visible


def test_bad_options_are_clear_errors():
    with pytest.raises(ValueError, match="max_iterations"):
        build_a2rag_graph(FakeA2RAGRetriever(), script(), max_iterations=0)
    with pytest.raises(ValueError, match="unknown validators"):
        build_a2rag_graph(FakeA2RAGRetriever(), script(), validators={"fluency": lambda q, a, e: (True, "")})
    with pytest.raises(TypeError, match="retrieve"):
        build_a2rag_graph(object(), script())
    with pytest.raises(ValueError, match="needs an LLM"):
        build_a2rag_graph(FakeA2RAGRetriever(), None)
    with pytest.raises(ValueError, match="question"):
        build_a2rag_graph(FakeA2RAGRetriever(), script()).invoke({"question": "  "})


# -- robustness --------------------------------------------------------------------------------------
def test_malformed_llm_answers_do_not_crash_and_never_pass():
    llm = script(fail={"relevance": ["Well, it depends.", "{}", ""]}, rewrite="   \n")
    retriever = FakeA2RAGRetriever()
    out = build_a2rag_graph(retriever, llm, max_iterations=3).invoke({"question": QUESTION})
    assert out["status"] == "fail"
    verifies = [e for e in out["trace"] if e["node"] == "verify"]
    assert [v["failure"] for v in verifies] == ["relevance"] * 3
    assert out["checks"][0] == {"check": "relevance", "passed": False, "reason": "unparseable"}
    rewrites = [e for e in out["trace"] if e["node"] == "rewrite"]
    assert all(r["unparseable"] and r["to"] == QUESTION for r in rewrites) and len(rewrites) == 2
    assert retriever.queries == [QUESTION] * 3  # an empty rewrite keeps the query rather than searching for ""


def test_parse_yes_no():
    assert parse_yes_no("Yes, the passage names Marlow.") == (True, "the passage names Marlow")
    assert parse_yes_no("**Grounded:** no\nThe date is invented.") == (False, "The date is invented.")
    assert parse_yes_no("Answer: NO") == (False, "")
    for junk in ("", "   ", "Maybe yes", "I cannot tell", "{}"):
        assert parse_yes_no(junk) == (None, "unparseable")


def test_parse_rewrite():
    assert parse_rewrite('\n**New query:** "Ada Lorne birthplace"\nbecause ...') == "Ada Lorne birthplace"
    assert parse_rewrite("Rewritten query: Kell Academy founder") == "Kell Academy founder"
    assert parse_rewrite("  \n ") is None and parse_rewrite("x" * 1001) is None


def test_llm_error_ends_in_fail_with_the_error_in_the_trace():
    llm = ScriptedLLM(responses=["Marlow [1]."], fail_on={2})  # the relevance check's call raises
    out = build_a2rag_graph(FakeA2RAGRetriever(), llm).invoke({"question": QUESTION})
    assert out["status"] == "fail" and "ConnectionError" in out["error"] and out["error"].startswith("verify:")
    assert out["trace"][-1]["node"] == "verify" and "simulated server failure" in out["trace"][-1]["error"]
    assert out["cost"]["llm_calls"] == 2 and out["cost"]["llm_failures"] == 1


def test_retriever_error_and_token_budget_end_in_fail():
    out = build_a2rag_graph(FakeA2RAGRetriever(fail=True), script()).invoke({"question": QUESTION})
    assert out["status"] == "fail" and "index unavailable" in out["error"]
    llm = script(fail={"adequacy": ["no"]})
    out = build_a2rag_graph(FakeA2RAGRetriever(), llm, token_budget=50).invoke({"question": QUESTION})
    assert out["status"] == "fail" and "token budget exhausted" in out["error"]
    assert llm.call_count == 1  # the answer prompt alone passes 50 tokens; no check is started after it


def test_pluggable_validators_replace_the_llm_checks():
    seen = []

    def grounded_if_marlow(question, answer, evidence_texts):
        seen.append((question, answer, evidence_texts))
        return ("Marlow" in answer and any("Marlow" in t for t in evidence_texts)), "string match"

    llm = script()
    validators = {"grounding": grounded_if_marlow, "adequacy": lambda q, a, e: "junk"}
    out = build_a2rag_graph(FakeA2RAGRetriever(), llm, validators=validators).invoke({"question": QUESTION})
    assert seen[0][0] == QUESTION and seen[0][2][0].startswith("Ada Lorne was a painter")
    assert "Knowledge-graph facts:\nAda Lorne | born in | Marlow" == seen[0][2][-1]
    assert out["status"] == "fail" and out["checks"][2] == {"check": "adequacy", "passed": False, "reason": "unparseable"}
    assert not any(p.startswith(CHECK_TASKS["grounding"]) for p in llm.prompts)


def test_evidence_facts_finds_triples_anywhere_and_deduplicates():
    evidence = {"stage": 2, "seeds": ["a", "b", "c"],
                "paths": [[{"head": "A", "relation": "r", "tail": "B"}], [{"head": "A", "relation": "r", "tail": "B"}]],
                "triples": [["B", "s", "C"]], "edges": [{"u": "x", "v": "y", "kind": "contains"}]}
    assert evidence_facts(evidence) == [{"subject": "A", "predicate": "r", "object": "B"},
                                        {"subject": "B", "predicate": "s", "object": "C"}]


# -- LangGraph features ------------------------------------------------------------------------------
def test_stream_updates_show_each_node_in_order():
    graph = build_a2rag_graph(FakeA2RAGRetriever(), script(fail={"grounding": ["no"]}))
    assert nodes_run(graph, {"question": QUESTION}) == [
        "gate", "retrieve", "generate", "verify", "rewrite", "retrieve", "generate", "verify"]


def test_checkpointer_resumes_a_run_by_thread_id():
    retriever, llm = FakeA2RAGRetriever(), script()
    graph = build_a2rag_graph(retriever, llm, checkpointer=InMemorySaver())
    config = {"configurable": {"thread_id": "t-1"}}
    paused = graph.invoke({"question": QUESTION}, config, interrupt_before=["verify"])
    assert paused.get("status") is None and graph.get_state(config).next == ("verify",)
    assert llm.call_count == 1
    done = graph.invoke(None, config)  # resume the same thread where it stopped
    assert done["status"] == "answered" and retriever.queries == [QUESTION] and llm.call_count == 4
    assert [e["node"] for e in done["trace"]] == ["gate", "retrieve", "generate", "verify"]
    # A new question on the same thread starts a new run and a new trace.
    again = graph.invoke({"question": "Who won the World Cup?"}, config)
    assert again["status"] == "abstain" and [e["node"] for e in again["trace"]] == ["gate"] and again["documents"] == []


def test_human_review_interrupts_and_resumes_with_edited_facts():
    llm = script()
    graph = build_a2rag_graph(FakeA2RAGRetriever(), llm, human_review=True, checkpointer=InMemorySaver())
    config = {"configurable": {"thread_id": "review-1"}}
    paused = graph.invoke({"question": QUESTION}, config)
    proposal = paused["__interrupt__"][0].value
    assert proposal["facts"][0]["subject"] == "Ada Lorne"
    assert proposal["passages"] == [{"id": "p-ada#0", "title": "Ada Lorne"}]
    assert graph.get_state(config).next == ("review",) and llm.call_count == 0
    asked_again = graph.invoke(Command(resume=[["only two", "items"]]), config)  # malformed: asked again
    assert "a reviewed fact must be" in asked_again["__interrupt__"][0].value["error"]
    done = graph.invoke(Command(resume=[["Ada Lorne", "born in", "Marlow, Esk River"]]), config)
    assert done["status"] == "answered"
    assert "Ada Lorne | born in | Marlow, Esk River" in llm.prompts[0]
    assert next(e for e in done["trace"] if e["node"] == "review") == {
        "node": "review", "decision": "edited", "proposed": 1, "kept": 1}


def test_human_review_reject_answers_from_passages_only():
    llm = script()
    graph = build_a2rag_graph(FakeA2RAGRetriever(), llm, human_review=True, checkpointer=InMemorySaver())
    config = {"configurable": {"thread_id": "review-2"}}
    graph.invoke({"question": QUESTION}, config)
    done = graph.invoke(Command(resume="reject"), config)
    assert done["status"] == "answered" and done["facts"] == []
    assert "Evidence facts:\n(none)" in llm.prompts[0]


def test_the_loop_is_a_node_of_a_larger_graph():
    class Outer(TypedDict, total=False):
        question: str
        answer: str | None
        status: str
        log: Annotated[list[str], operator.add]

    loop = build_a2rag_graph(FakeA2RAGRetriever(), script())
    outer = StateGraph(Outer)
    outer.add_node("normalise", lambda s: {"question": s["question"].strip(), "log": ["normalised"]})
    outer.add_node("a2rag", loop)
    outer.add_node("report", lambda s: {"log": [f"{s['status']}: {s['answer']}"]})
    outer.add_edge(START, "normalise")
    outer.add_edge("normalise", "a2rag")
    outer.add_edge("a2rag", "report")
    outer.add_edge("report", END)
    out = outer.compile().invoke({"question": f"  {QUESTION}  ", "log": []})
    assert out["log"] == ["normalised", "answered: Ada Lorne was born in Marlow [1]."]


def test_human_review_inside_a_larger_graph_uses_the_parents_checkpointer():
    class Outer(TypedDict, total=False):
        question: str
        answer: str | None
        status: str

    outer = StateGraph(Outer)
    outer.add_node("a2rag", build_a2rag_graph(FakeA2RAGRetriever(), script(), human_review=True))
    outer.add_edge(START, "a2rag")
    outer.add_edge("a2rag", END)
    app = outer.compile(checkpointer=InMemorySaver())
    config = {"configurable": {"thread_id": "outer-1"}}
    paused = app.invoke({"question": QUESTION}, config)
    assert paused["__interrupt__"][0].value["facts"][0]["object"] == "Marlow"
    assert app.invoke(Command(resume="accept"), config) == {
        "question": QUESTION, "answer": "Ada Lorne was born in Marlow [1].", "status": "answered"}


def test_tool_returns_answer_with_sources_and_an_artifact():
    retriever = FakeA2RAGRetriever()
    tool = a2rag_tool(retriever, script())
    assert tool.name == "a2rag_answer" and set(tool.args) == {"question"}
    content = tool.invoke({"question": QUESTION})
    assert content == "Ada Lorne was born in Marlow [1].\n\nSources:\n[1] Ada Lorne (p-ada#0)"
    message = tool.invoke({"type": "tool_call", "id": "call-1", "name": tool.name, "args": {"question": QUESTION}})
    assert message.artifact["status"] == "answered" and message.artifact["sources"][0]["doc_id"] == "p-ada"
    assert message.artifact["citations"]["cited_chunk_ids"] == ["p-ada#0"] and message.artifact["citations"]["invalid"] == []
    assert tool.invoke({"question": "Who won the World Cup?"}).startswith("ABSTAIN")
    # a compiled graph with a checkpointer works too: each call gets its own thread
    graph = build_a2rag_graph(retriever, script(fail={"adequacy": ["no"] * 4}), checkpointer=InMemorySaver())
    assert a2rag_tool(graph).invoke({"question": QUESTION}).startswith("FAIL: no verified answer (retry budget")
    with pytest.raises(ValueError, match="not both"):
        a2rag_tool(graph, script())
    # with human review the tool reports the paused thread, which the caller can resume
    saver = InMemorySaver()
    reviewed = build_a2rag_graph(retriever, script(), human_review=True, checkpointer=saver)
    paused = a2rag_tool(reviewed).invoke({"type": "tool_call", "id": "call-2", "name": "a2rag_answer",
                                          "args": {"question": QUESTION}})
    thread = paused.artifact["thread_id"]
    assert paused.artifact["status"] == "interrupted" and thread in paused.content
    resumed = reviewed.invoke(Command(resume="accept"), {"configurable": {"thread_id": thread}})
    assert resumed["status"] == "answered"


def test_ainvoke_runs_retrieval_off_the_event_loop():
    retriever, llm = FakeA2RAGRetriever(), script(fail={"relevance": ["no"]})
    graph = build_a2rag_graph(retriever, llm)

    async def main():
        loop_thread = threading.get_ident()
        out = await graph.ainvoke({"question": QUESTION})
        tool_content = await a2rag_tool(graph).ainvoke({"question": QUESTION})
        return loop_thread, out, tool_content

    loop_thread, out, tool_content = asyncio.run(main())
    assert out["status"] == "answered" and len(retriever.queries) == 3
    assert retriever.threads and all(t != loop_thread for t in retriever.threads)
    assert tool_content.startswith("Ada Lorne was born in Marlow")


# -- with the real A2RAGRetriever on the shared test corpus -------------------------------------------
@pytest.fixture(scope="module")
def a2rag_retriever():
    from conftest import CORPUS

    from llama_index_graphrag_suite import GraphRAGIndex, IndexConfig
    from llama_index_graphrag_suite.documents import make_document
    from llama_index_graphrag_suite.embeddings import HashEmbedding
    from llama_index_graphrag_suite.methods.a2rag import A2RAGRetriever

    docs = [make_document(i, text, title) for i, title, text in CORPUS]
    index = GraphRAGIndex.from_documents(docs, embed_model=HashEmbedding(dim=256), config=IndexConfig(entities="statistical", entity_threshold=0.3))
    return A2RAGRetriever(index, top_k=3)


def test_real_retriever_gate_abstains_and_answers_with_provenance(a2rag_retriever):
    llm = script(answer="Ada Lorne was born in Marlow [1].")
    graph = build_a2rag_graph(a2rag_retriever, llm)
    off_topic = graph.invoke({"question": "quantum chromodynamics lattice gauge"})
    assert off_topic["status"] == "abstain" and llm.call_count == 0
    assert off_topic["cost"]["gate_score"] < a2rag_retriever.config.tau_g

    out = graph.invoke({"question": QUESTION})
    assert out["status"] == "answered" and out["documents"][0]["id"] == "p-ada#0"
    assert out["cost"]["stage_reached"] == out["evidence"]["stage_reached"] == "local"
    assert out["cost"]["gate_score"] >= a2rag_retriever.config.tau_g
    assert "Ada Lorne was a painter born in Marlow" in llm.prompts[0]  # the provenance chunk reached the answer prompt


def test_real_retriever_rewrite_drives_a_second_retrieval(a2rag_retriever):
    llm = script(fail={"relevance": ["no: nothing about a birthplace"]}, rewrite="Ada Lorne Marlow birthplace")
    out = build_a2rag_graph(a2rag_retriever, llm).invoke({"question": "Where was the painter of The Grey Harbour born?"})
    retrievals = [e for e in out["trace"] if e["node"] == "retrieve"]
    assert [r["query"] for r in retrievals] == [
        "Where was the painter of The Grey Harbour born?", "Ada Lorne Marlow birthplace"]
    assert out["status"] == "answered" and "p-ada#0" in retrievals[1]["documents"]
    assert out["cost"]["retries"] == 1 and len(out["cost"]["stages"]) == 2


def test_real_retriever_human_review_keeps_a_subset_of_the_proposed_facts(a2rag_retriever):
    llm = script(answer="The Vant Gallery [2].")
    graph = build_a2rag_graph(a2rag_retriever, llm, human_review=True, checkpointer=InMemorySaver())
    config = {"configurable": {"thread_id": "real-review"}}
    paused = graph.invoke({"question": "Which gallery does The Grey Harbour hang in?"}, config)
    facts = paused["__interrupt__"][0].value["facts"]
    assert [(f["subject"], f["predicate"], f["object"]) for f in facts] == [("grey harbour", "hangs in the", "vant gallery")]
    assert facts[0]["fact_id"].startswith("f-")  # the source pointer into the index's facts
    done = graph.invoke(Command(resume={"keep": [0]}), config)
    assert done["status"] == "answered" and "grey harbour | hangs in the | vant gallery" in llm.prompts[0]
