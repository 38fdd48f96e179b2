"""The A2RAG adaptive control loop (Section III-B, Algorithm 1) as a compiled LangGraph ``StateGraph``.

::

    START → gate ─(Gate(q)=0)→ END: status "abstain"                      Eq. 1, Alg. 1 lines 3-4
             │
             └→ retrieve → [review] → generate → verify ─(TripleCheck=1)→ END: status "answered"
                   ▲                                 │                     Eq. 5, Alg. 1 lines 12-15
                   └──────────── rewrite ←───────────┤ first failed check, Eq. 6 (lines 18-19)
                                                     └─(I_max rounds spent)→ END: status "fail"

**What I_max counts.** ``max_iterations`` is the number of retrieval rounds (retrieve → generate →
verify), the first one included; a rewrite runs only when another round is left. The default 2 means
one try plus one retry: at most 2 retrieval calls and 1 rewrite. (Algorithm 1's loop
``for i ← 0 to I_max`` would allow I_max + 1 rounds; the text's "at most I_max iterations" is what
we count.) Bounds per run: ``max_iterations`` retrieval calls and at most ``5·max_iterations - 1``
LLM calls by the loop (answer, three checks, rewrite per round); ``token_budget`` can cap tokens too.

**Cost record** (``state["cost"]``, per run even when runs share the graph): the loop's LLM calls,
prompt and completion tokens (``as_text_llm`` counting) and failed calls; retrieval rounds; retries
(rewrites); the stage each round reached and the last one (A2RAGRetriever's ``stage_reached``); the
gate score; and the LLM calls the retriever reports having made itself (its sufficiency checks).

**Triple-Check** runs the validators in the paper's order (relevance, grounding, adequacy) and stops
at the first failure: that failure alone picks the rewrite (Eq. 6), so the later checks would be
spent for nothing; they are recorded as skipped. Validators are checked against the user's question
q, not the rewritten q^(i) the paper writes, so a rewrite that drifted cannot pass by changing the
question. Empty evidence fails relevance without an LLM call.

**Errors.** An exception from the LLM, a validator or the retriever ends the run with status
``"fail"`` and ``error`` set (also in the trace); it is not raised, so an agent calling this graph as
a tool gets an answer it can read. Bad input (no question) raises; a malformed human review
is asked again with the error in the interrupt's payload.

**Time budget** (``time_budget``, seconds per run; :mod:`.a2rag_clock`): every node, LLM call and
retrieval of a run ends by it; when it runs out the run ends with status ``"fail"``, ``error``
"time budget exhausted ..." and ``cost["time_budget_exhausted"]``, keeping the evidence gathered so far.

**Human in the loop** (``human_review=True``; resuming needs a checkpointer): before each answer a
``review`` node proposes the evidence triples with ``interrupt()``; ``Command(resume=...)`` accepts,
rejects or edits them (:data:`HUMAN_REVIEW_TEXT`). The paper proposes triples after verification, to update the
graph; proposing them before generation lets the reviewer's edits shape the answer as well.

**Async.** The nodes are sync functions; under ``ainvoke``/``astream`` LangGraph runs sync nodes in
an executor thread, so retrieval and blocking LLM clients never stall the event loop (tested).
"""

from __future__ import annotations

import math
import uuid
from typing import Annotated, Any, Callable, Literal, Mapping, TypedDict

from langchain_core.tools import StructuredTool
from langgraph.graph import END, START, StateGraph
from langgraph.pregel import Pregel
from langgraph.types import interrupt
from pydantic import BaseModel, Field

from langgraph_agents.a2rag_clock import resolve_time_budget, timed_node
from langgraph_agents.a2rag_validators import (CHECK_ORDER, MeteredLLM, Validator, apply_review,
                                               default_validators, evidence_facts, ledger, parse_rewrite,
                                               run_validator, split_nodes)
from llama_index_graphrag_suite.llm.langchain_bridge import call_within_budget
from llama_index_graphrag_suite.citations import cite_passages
from llama_index_graphrag_suite.methods.a2rag.loop_prompts import A2RAG_ANSWER_PROMPT, HUMAN_REVIEW_TEXT, REWRITE_PROMPTS
from llama_index_graphrag_suite.methods.base import retrieve_nodes

__all__ = ["A2RAGState", "a2rag_tool", "build_a2rag_graph"]

def add_trace(left: list[dict] | None, right: list[dict] | None) -> list[dict]:
    """Append trace entries; the gate's entry opens a new run, so a thread can answer many questions
    (and an outer graph that shares the key does not get the subgraph's trace twice)."""
    if right and right[0].get("node") == "gate":
        return list(right)
    return (left or []) + (right or [])


class A2RAGState(TypedDict, total=False):
    question: str  # the user's question q^(0); the only input
    query: str  # q^(i): the query of the current round, rewritten after a failed check
    iteration: int  # retrieval rounds done so far
    documents: list[dict]  # provenance chunks of the current round: id, doc_id, title, text, score
    evidence: dict  # the retriever's evidence node metadata (stage, seeds, stages tried, graph evidence)
    facts: list[dict]  # graph triples of the evidence shown to the LLM (after review, if any)
    draft: str  # a^(i): the candidate answer of the current round
    answer: str | None  # the verified answer; set only when status == "answered"
    checks: list[dict]  # Triple-Check of the current round: check, passed (None = skipped), reason
    failure: str | None  # the first failed check of the current round (the failure type of Eq. 6)
    status: Literal["answered", "abstain", "fail"] | None  # None while running
    error: str | None
    trace: Annotated[list[dict], add_trace]
    cost: dict  # see _new_cost: this run's LLM calls and tokens, retrieval rounds, retries, stages reached


def _new_cost() -> dict:
    return {"llm_calls": 0, "prompt_tokens": 0, "completion_tokens": 0, "llm_failures": 0, "retrieval_rounds": 0,
            "retries": 0, "stage_reached": None, "stages": [], "gate_score": None, "retriever_llm_calls": 0,
            "seconds": 0.0, "time_budget_exhausted": False}


def _charged(state: Mapping, spent=None, **fields) -> dict:
    cost = {**state.get("cost", _new_cost()), **fields}
    if spent is not None:
        cost["llm_calls"] += spent.calls
        cost["prompt_tokens"] += spent.prompt_tokens
        cost["completion_tokens"] += spent.completion_tokens
        cost["llm_failures"] += spent.failures
    return cost


# -- prompt blocks ---------------------------------------------------------------------------------
def _fact_line(f: dict) -> str:
    return f"{f['subject']} | {f['predicate']} | {f['object']}"


def _evidence_texts(state: Mapping) -> list[str]:
    """E^(i) for the validators: the passages, numbered as in the answer prompt, then the graph facts."""
    texts = [d["text"] for d in state.get("documents", [])]
    if state.get("facts"):
        texts.append("Knowledge-graph facts:\n" + "\n".join(map(_fact_line, state["facts"])))
    return texts


def _passages_block(documents: list[dict], clip: int | None = None) -> str:
    lines = [f"[{i}] {d['title'] + ': ' if d['title'] else ''}{d['text'][:clip] if clip else d['text']}"
             for i, d in enumerate(documents, 1)]
    return "\n".join(lines) or "(none)"


# -- the gate ---------------------------------------------------------------------------------------
def _gate_function(retriever: Any, gate: Any) -> Callable[[str], tuple[bool, float | None]]:
    """Gate(q) of Eq. 1 as ``query -> (passed, score)``; see :func:`build_a2rag_graph` for the rules."""
    score_of = getattr(retriever, "gate_score", None)
    if gate is None:
        decide = getattr(retriever, "gate", None)
        if decide is None and score_of is None:
            return lambda q: (True, None)  # a retriever without summaries: nothing to gate on
        return lambda q: (bool(decide(q)) if decide else True, float(score_of(q)) if score_of else None)
    if isinstance(gate, (int, float)) and not isinstance(gate, bool):
        if not (0.0 <= gate <= 1.0 and math.isfinite(gate)):
            raise ValueError(f"gate threshold tau_g must be in [0, 1], got {gate}")
        if score_of is None:
            raise ValueError("a gate threshold needs a retriever with gate_score(query); pass a callable gate instead")
        return lambda q: ((s := float(score_of(q))) >= gate, s)
    if callable(gate):
        return lambda q: (bool(gate(q)), None)
    raise TypeError(f"gate must be None, a threshold in [0, 1] or a callable query -> bool, got {type(gate).__name__}")


# -- the nodes --------------------------------------------------------------------------------------
class _Loop:
    def __init__(self, retriever, llm, max_iterations, validators, token_budget, gate):
        if not callable(getattr(retriever, "retrieve", None)):
            raise TypeError(f"retriever must have retrieve(query) -> list[NodeWithScore], "
                            f"got {type(retriever).__name__}")
        if not isinstance(max_iterations, int) or isinstance(max_iterations, bool) or max_iterations < 1:
            raise ValueError(f"max_iterations (retrieval rounds, I_max) must be an integer >= 1, "
                             f"got {max_iterations!r}")
        if token_budget is not None and (not isinstance(token_budget, int) or token_budget < 1):
            raise ValueError(f"token_budget must be a positive integer or None, got {token_budget!r}")
        unknown = set(validators or {}) - set(CHECK_ORDER)
        if unknown:
            raise ValueError(f"unknown validators {sorted(unknown)}; the checks are {list(CHECK_ORDER)}")
        self.retriever = retriever
        self.llm = MeteredLLM(llm)
        self.validators: dict[str, Validator] = {**default_validators(self.llm), **(validators or {})}
        self.max_iterations = max_iterations
        self.token_budget = token_budget
        self.gate_fn = _gate_function(retriever, gate)

    def _fail(self, state, node: str, error: str, spent=None) -> dict:
        return {"status": "fail", "error": f"{node}: {error}", "cost": _charged(state, spent),
                "trace": [{"node": node, "error": error}]}

    def _over_budget(self, state, node: str) -> dict | None:
        cost = state.get("cost", _new_cost())
        used = cost["prompt_tokens"] + cost["completion_tokens"]
        if self.token_budget is not None and used >= self.token_budget:
            return self._fail(state, node, f"token budget exhausted ({used} of {self.token_budget} tokens spent)")
        return None

    def gate(self, state: A2RAGState) -> dict:
        question = state.get("question")
        if not isinstance(question, str) or not question.strip():
            raise ValueError("the A2RAG loop needs a non-empty 'question' in its input")
        run = {"query": question, "iteration": 0, "documents": [], "evidence": {}, "facts": [], "draft": "",
               "answer": None, "checks": [], "failure": None, "status": None, "error": None, "cost": _new_cost()}
        try:
            passed, score = self.gate_fn(question)
        except Exception as exc:  # noqa: BLE001 - reported as FAIL, see the module docstring
            return {**run, "status": "fail", "error": f"gate: {type(exc).__name__}: {exc}",
                    "trace": [{"node": "gate", "error": f"{type(exc).__name__}: {exc}"}]}
        run["cost"]["gate_score"] = score
        return {**run, "status": None if passed else "abstain",
                "trace": [{"node": "gate", "passed": passed, "score": score}]}

    def retrieve(self, state: A2RAGState) -> dict:
        query, rounds = state["query"], state.get("iteration", 0) + 1
        try:
            documents, evidence = split_nodes(call_within_budget(lambda: retrieve_nodes(self.retriever, query), "retrieval"))
        except Exception as exc:  # noqa: BLE001
            return self._fail(state, "retrieve", f"{type(exc).__name__}: {exc}")
        stage = evidence.get("stage_reached", evidence.get("stage"))
        # The retriever's own LLM calls (A2RAGRetriever's sufficiency checks) are its to count; we add them up.
        retriever_calls = state["cost"]["retriever_llm_calls"] + int(evidence.get("llm_calls") or 0)
        cost = _charged(state, retrieval_rounds=rounds, stage_reached=stage, stages=[*state["cost"]["stages"], stage],
                        retriever_llm_calls=retriever_calls)
        return {"iteration": rounds, "documents": documents, "evidence": evidence, "facts": evidence_facts(evidence),
                "draft": "", "checks": [], "failure": None, "cost": cost,
                "trace": [{"node": "retrieve", "round": rounds, "query": query, "stage": stage,
                           "documents": [d["id"] for d in documents]}]}

    def review(self, state: A2RAGState) -> dict:
        # interrupt() pauses here; on resume the body runs again from the top and each interrupt() in turn
        # returns its resume value, so nothing here may have effects. A malformed decision is asked again
        # with the error (raising would leave the bad resume value stored in the thread for good).
        proposed = state.get("facts", [])
        request = {"question": state["question"], "query": state["query"], "round": state["iteration"],
                   "facts": proposed, "passages": [{"id": d["id"], "title": d["title"]} for d in state["documents"]],
                   "instructions": HUMAN_REVIEW_TEXT}
        while True:
            decision = interrupt(request)
            try:
                facts, how = apply_review(proposed, decision)
                break
            except ValueError as exc:
                request = {**request, "error": str(exc)}
        return {"facts": facts,
                "trace": [{"node": "review", "decision": how, "proposed": len(proposed), "kept": len(facts)}]}

    def generate(self, state: A2RAGState) -> dict:
        if stop := self._over_budget(state, "generate"):
            return stop
        if not state.get("documents") and not state.get("facts"):
            return {"draft": "", "trace": [{"node": "generate", "skipped": "no evidence"}]}
        refined = "" if state["query"] == state["question"] else f"The question was refined to: {state['query']}\n"
        prompt = A2RAG_ANSWER_PROMPT.format(question=state["question"], refined=refined,
                                            facts="\n".join(map(_fact_line, state.get("facts", []))) or "(none)",
                                            passages=_passages_block(state["documents"]))
        with ledger() as spent:
            try:
                draft = self.llm.complete(prompt).strip()
            except Exception as exc:  # noqa: BLE001
                return self._fail(state, "generate", f"{type(exc).__name__}: {exc}", spent)
        return {"draft": draft, "cost": _charged(state, spent), "trace": [{"node": "generate", "answer": draft}]}

    def verify(self, state: A2RAGState) -> dict:
        if stop := self._over_budget(state, "verify"):
            return stop
        evidence_texts, checks, failure = _evidence_texts(state), [], None
        with ledger() as spent:
            for name in CHECK_ORDER:
                if failure is not None:
                    checks.append({"check": name, "passed": None, "reason": "skipped after the first failure"})
                    continue
                if name == "relevance" and not evidence_texts:
                    passed, reason = False, "no evidence retrieved"
                else:
                    try:
                        passed, reason = run_validator(self.validators[name], state["question"], state["draft"],
                                                       evidence_texts)
                    except Exception as exc:  # noqa: BLE001
                        return self._fail(state, "verify", f"{name} check: {type(exc).__name__}: {exc}", spent)
                checks.append({"check": name, "passed": passed, "reason": reason})
                failure = None if passed else name
        update = {"checks": checks, "failure": failure, "cost": _charged(state, spent)}
        entry = {"node": "verify", "round": state["iteration"], "failure": failure,
                 "checks": {c["check"]: c["passed"] for c in checks}}
        if failure is None:
            update.update(status="answered", answer=state["draft"])
        elif state["iteration"] >= self.max_iterations:
            update.update(status="fail", error=f"retry budget exhausted: Triple-Check failed ({failure}) "
                                               f"after {state['iteration']} retrieval round(s)")
        return {**update, "trace": [entry]}

    def rewrite(self, state: A2RAGState) -> dict:
        if stop := self._over_budget(state, "rewrite"):
            return stop
        failure = state["failure"]
        reason = next((c["reason"] for c in state["checks"] if c["check"] == failure), "")
        facts = [_fact_line(f) for f in state.get("facts", [])[:5]]
        evidence = "\n".join(facts + [_passages_block(state["documents"], clip=200)])
        prompt = REWRITE_PROMPTS[failure].format(question=state["question"], query=state["query"],
                                                 answer=state.get("draft") or "(none)", reason=reason or "(none given)",
                                                 evidence=evidence)
        with ledger() as spent:
            try:
                reply = self.llm.complete(prompt)
            except Exception as exc:  # noqa: BLE001
                return self._fail(state, "rewrite", f"{type(exc).__name__}: {exc}", spent)
        new_query = parse_rewrite(reply)
        entry = {"node": "rewrite", "type": failure, "from": state["query"], "to": new_query or state["query"]}
        if new_query is None:
            entry["unparseable"] = True  # retry with the same query rather than with junk
        return {"query": new_query or state["query"], "trace": [entry],
                "cost": _charged(state, spent, retries=state["cost"]["retries"] + 1)}


def _unless_done(target: str) -> Callable[[Mapping], str]:
    return lambda state: END if state.get("status") else target


def build_a2rag_graph(retriever, llm, *, max_iterations: int = 2, validators: Mapping[str, Validator] | None = None,
                      human_review: bool = False, checkpointer=None, token_budget: int | None = None,
                      gate: float | Callable[[str], bool] | None = None, name: str = "a2rag",
                      time_budget: float | str | None = "auto"):
    """Compile the A2RAG control loop (see the module docstring) over any LlamaIndex retriever.

    Args:
        retriever: ``retrieve(query) -> list[NodeWithScore]``; an :class:`A2RAGRetriever` adds the
            evidence node (stage, seeds, graph evidence) and the gate (``gate_score``/``gate``).
        llm: a LlamaIndex LLM, a LangChain chat model or a function ``str -> str`` (``as_text_llm``).
        max_iterations: I_max, retrieval rounds including the first (default 2: the paper's
            "typically small, e.g. 2-3", at the low end because each round costs up to 5 LLM calls).
        validators: replaces any of ``relevance``, ``grounding``, ``adequacy`` (others stay LLM validators).
        human_review: pause before each answer for a review of the evidence facts. Resuming needs a
            checkpointer: this graph's, or the parent's when the loop is a node of a larger graph.
        checkpointer: e.g. ``InMemorySaver()``; runs are then resumable by ``thread_id``.
        token_budget: total prompt + completion tokens per run, checked before each LLM step (default
            None: ``max_iterations`` already bounds the calls; set it where tokens are priced).
        gate: None uses the retriever's ``gate`` (Eq. 1 with its tau_g) and passes when it has none; a
            float is tau_g over ``retriever.gate_score``; a callable ``query -> bool`` decides alone.
        time_budget: seconds one run may take in all (module docstring, "Time budget"); "auto" (the
            default) takes the retriever's ``config.time_budget``, else the LLM's ``build_timeout``
            (``RobustLLM``), else None: no bound beyond ``max_iterations`` and the LLM's own timeouts.
    Input ``{"question": str}``; the final state has ``status``, ``answer``, ``documents``, ``evidence``,
    ``checks``, ``trace`` and ``cost`` (:class:`A2RAGState`).
    """
    loop = _Loop(retriever, llm, max_iterations, validators, token_budget, gate)
    seconds = resolve_time_budget(time_budget, retriever, llm)
    after_retrieve = "review" if human_review else "generate"
    graph = StateGraph(A2RAGState)
    for node in ("gate", "retrieve", *(["review"] if human_review else []), "generate", "verify", "rewrite"):
        graph.add_node(node, timed_node(node, getattr(loop, node), seconds))
    if human_review:
        graph.add_edge("review", "generate")
    graph.add_edge(START, "gate")
    for node, target in (("gate", "retrieve"), ("retrieve", after_retrieve), ("generate", "verify"),
                         ("verify", "rewrite"), ("rewrite", "retrieve")):
        graph.add_conditional_edges(node, _unless_done(target), [target, END])
    return graph.compile(checkpointer=checkpointer, name=name)


# -- as a LangChain tool ----------------------------------------------------------------------------
class _ToolInput(BaseModel):
    question: str = Field(description="A self-contained question about the indexed documents.")


def _tool_output(result: Mapping, config: dict | None) -> tuple[str, dict]:
    sources = [{k: d.get(k) for k in ("id", "doc_id", "title", "score")} for d in result.get("documents", [])]
    artifact = {"status": result.get("status"), "answer": result.get("answer"), "query": result.get("query"),
                "sources": sources, "error": result.get("error"), "cost": result.get("cost")}
    if result.get("answer"):  # which sources the answer cites as [n], and numbers no source has
        artifact["citations"] = cite_passages(result["answer"], [
            {"chunk_id": s["id"], "doc_id": s.get("doc_id"), "title": s.get("title")} for s in sources]).to_json()
    if result.get("__interrupt__"):
        thread = (config or {}).get("configurable", {}).get("thread_id")
        artifact.update(status="interrupted", thread_id=thread)
        return (f"A2RAG paused for human review of its evidence; resume thread {thread!r} of the graph with "
                "Command(resume=...).", artifact)
    status = result.get("status")
    if status == "answered":
        cited = "\n".join(f"[{i}] {s['title'] or s['id']} ({s['id']})" for i, s in enumerate(sources, 1))
        return f"{result['answer']}\n\nSources:\n{cited}", artifact
    if status == "abstain":
        return "ABSTAIN: the question is outside the indexed documents, so nothing was retrieved.", artifact
    found = "; ".join(f"[{i}] {s['title'] or s['id']}" for i, s in enumerate(sources, 1))
    return f"FAIL: no verified answer ({result.get('error')})." + (f" Evidence found: {found}" if found else ""), artifact


def a2rag_tool(graph_or_retriever, llm=None, *, name: str = "a2rag_answer", description: str | None = None,
               **graph_kwargs) -> StructuredTool:
    """The control loop as a LangChain tool: ``question -> answer + sources`` (or ABSTAIN / FAIL).

    Pass a compiled graph from :func:`build_a2rag_graph`, or a retriever plus ``llm`` and any
    ``build_a2rag_graph`` keyword. The tool returns ``(content, artifact)``: the readable text for the
    agent and a dict with status, answer, sources and cost (a ``ToolMessage.artifact``). When the graph
    has a checkpointer, each call runs in a fresh thread (named in the artifact when a review pauses it).
    """
    if isinstance(graph_or_retriever, Pregel):
        if llm is not None or graph_kwargs:
            raise ValueError("pass either a compiled graph, or a retriever with llm= and graph options, not both")
        graph = graph_or_retriever
    else:
        graph = build_a2rag_graph(graph_or_retriever, llm, **graph_kwargs)

    def new_thread() -> dict | None:
        return {"configurable": {"thread_id": f"a2rag-tool-{uuid.uuid4().hex}"}} if graph.checkpointer else None

    def run(question: str) -> tuple[str, dict]:
        config = new_thread()
        return _tool_output(graph.invoke({"question": question}, config), config)

    async def arun(question: str) -> tuple[str, dict]:
        config = new_thread()
        return _tool_output(await graph.ainvoke({"question": question}, config), config)

    return StructuredTool.from_function(
        func=run, coroutine=arun, name=name, args_schema=_ToolInput, response_format="content_and_artifact",
        description=description or ("Answer a question from the indexed documents with graph retrieval, verify the "
                                     "answer against its sources and retry with a rewritten query if needed. Returns "
                                     "the answer with its sources, or ABSTAIN (out of scope) or FAIL (not verified)."))
