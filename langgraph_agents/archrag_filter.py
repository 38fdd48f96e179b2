"""ArchRAG's adaptive filtering-based generation (Section 3.2.2, Eq. 3-4) as a compiled LangGraph ``StateGraph``.

Eq. 3: for every retrieved item (entity, relation, or community summary of any layer) the LLM writes an
analysis report with a relevance score (``FILTER_ANALYSIS_PROMPT``; 0-100 as the authors' map prompt).
Eq. 4: reports with score 0 are dropped, the rest sorted by score, packed into a token budget (the
report that crosses the budget is truncated, the rest left out) and the LLM answers from them
(``FINAL_ANSWER_PROMPT``).

Graph::

    START -> retrieve --Send per item--> analyse (parallel branches) -> answer -> END
                     \\-- no items ----------------------------------> answer

* **State**: :class:`FilterState` (TypedDict). The branches write into ``reports`` / ``dropped`` /
  ``cost_parts`` through ``operator.add`` reducers, so parallel results merge without a race.
* **Bounded concurrency**: every ``analyse`` call holds a slot of a semaphore of ``max_concurrency``
  (8) slots, whatever the caller's config; LangGraph's own ``config={"max_concurrency": n}`` bounds the
  branches it runs at once on top of that.
* **Robust scores** (:func:`parse_score`): JSON ``{"score": 70}``, "Score: 70", "70/100", or words
  ("high", "irrelevant"). An answer with no readable score, or an LLM call that raises, drops the item
  and is counted in ``dropped`` (with the reason); the run goes on.
* **Cost**: each LLM call is counted in an :class:`~llama_index_graphrag_suite.llm.usage.LLMUsage` (via ``llm_adapter``); ``cost`` in the output is
  this run's total (the analysis calls plus the final answer).
* **Checkpointer**: pass one (e.g. ``InMemorySaver()``) and invoke with ``{"configurable": {"thread_id": ...}}``.
* **As a node**: the compiled graph's input is ``{"question": str}`` (``items`` optional: when given,
  retrieval is skipped) and its output ``{"answer", "reports", "dropped", "cost", "context", "citations"}``
  (``citations``: the reports the answer cites as ``[n]``, see ``citations.cite_passages``), so it can
  be added to a larger ``StateGraph`` that has those keys.
"""

from __future__ import annotations

import operator
import re
import threading
from typing import Annotated, Any, Callable, TypedDict

from langgraph.graph import END, START, StateGraph
from langgraph.types import Send

from llama_index_graphrag_suite.citations import cite_passages
from llama_index_graphrag_suite.llm.json_repair import parse_json_lenient
from llama_index_graphrag_suite.llm.usage import LLMUsage, count_tokens
from llama_index_graphrag_suite.methods.archrag.prompts import FILTER_ANALYSIS_PROMPT, FINAL_ANSWER_PROMPT

from .llm_adapter import TextLLM, as_text_llm

__all__ = ["FilterState", "FilterInput", "FilterOutput", "build_archrag_filter_graph", "parse_score", "pack_reports"]

# Qualitative scores some models answer with instead of a number.
SCORE_WORDS = {"irrelevant": 0, "none": 0, "zero": 0, "not relevant": 0, "very low": 10, "low": 25,
               "medium": 50, "moderate": 50, "somewhat relevant": 50, "high": 75, "relevant": 75,
               "very high": 90, "highly relevant": 90, "very relevant": 90}


class FilterInput(TypedDict, total=False):
    question: str
    items: list[dict]


class FilterOutput(TypedDict, total=False):
    answer: str
    reports: list[dict]
    dropped: list[dict]
    cost: dict
    context: str
    citations: dict


class FilterState(TypedDict, total=False):
    question: str
    items: list[dict]  # {"id", "kind", "layer", "title", "content", ...}
    reports: Annotated[list[dict], operator.add]  # {"id", "kind", "layer", "score", "report"}
    dropped: Annotated[list[dict], operator.add]  # {"id", "reason"}
    cost_parts: Annotated[list[dict], operator.add]
    context: str
    answer: str
    cost: dict


class ItemTask(TypedDict):
    question: str
    item: dict


def parse_score(text: str) -> tuple[str, int] | None:
    """(report, score 0-100) from an analysis answer, or None when no score can be read."""
    if not text or not text.strip():
        return None
    parsed = parse_json_lenient(text).value
    if isinstance(parsed, list) and parsed and isinstance(parsed[0], dict):
        parsed = parsed[0]
    if isinstance(parsed, dict):
        raw = parsed.get("score", parsed.get("relevance", parsed.get("rating")))
        report = parsed.get("report", parsed.get("analysis", parsed.get("description", "")))
        score = _score_value(raw)
        if score is not None:
            return str(report or "").strip(), score
    match = re.search(r"(?i)(?:score|relevance|rating)\s*[:=]?\s*\**\s*(\d{1,3}(?:\.\d+)?)", text) or \
        re.search(r"\b(\d{1,3}(?:\.\d+)?)\s*/\s*100\b", text)
    if match:
        report = (text[: match.start()] + text[match.end():]).strip()
        return report, _clamp(float(match.group(1)))
    words = re.search(r"(?i)(?:score|relevance|rating)\s*[:=]?\s*\**\s*([a-z][a-z ]{1,20}?)\s*(?:[.,;\n*]|$)", text)
    if words and words.group(1).strip().lower() in SCORE_WORDS:
        return (text[: words.start()] + text[words.end():]).strip(), SCORE_WORDS[words.group(1).strip().lower()]
    return None


def _score_value(raw: Any) -> int | None:
    if isinstance(raw, bool) or raw is None:
        return None
    if isinstance(raw, (int, float)):
        return _clamp(float(raw))
    if isinstance(raw, str):
        number = re.search(r"\d{1,3}(?:\.\d+)?", raw)
        if number:
            return _clamp(float(number.group(0)))
        return SCORE_WORDS.get(raw.strip().lower())
    return None


def _clamp(x: float) -> int:
    return int(round(min(100.0, max(0.0, x))))


def _truncate_to_tokens(text: str, budget: int) -> str:
    words = text.split()
    lo, hi = 0, len(words)
    while lo < hi:  # the longest word prefix within the budget
        mid = (lo + hi + 1) // 2
        if count_tokens(" ".join(words[:mid])) <= budget:
            lo = mid
        else:
            hi = mid - 1
    return " ".join(words[:lo])


def pack_reports(reports: list[dict], token_budget: int) -> tuple[str, list[dict]]:
    """Eq. 4: drop zero scores, sort by score (ties: input order), pack into ``token_budget`` tokens."""
    kept = sorted((r for r in reports if r["score"] > 0), key=lambda r: -r["score"])
    blocks, used, packed = [], 0, []
    for i, r in enumerate(kept, 1):
        block = f"---- Report {i} (relevance {r['score']}, {r['kind']} {r['id']}) ----\n{r['report']}"
        tokens = count_tokens(block) + 1
        if used + tokens > token_budget:
            room = token_budget - used
            if room > 20:  # truncate the report that crosses the budget; leave out the rest
                blocks.append(_truncate_to_tokens(block, room - 1))
                packed.append({**r, "truncated": True})
            break
        blocks.append(block)
        packed.append(r)
        used += tokens
    return "\n\n".join(blocks), packed


def _items_source(source: Any) -> Callable[[str], list[dict]]:
    if hasattr(source, "retrieve_items"):  # an ArchRAGRetriever
        return source.retrieve_items
    if callable(source):
        return source
    if isinstance(source, list):
        return lambda question: source
    raise TypeError("source must be an ArchRAGRetriever, a function question -> items, or a list of items")


def _prompts_of(source: Any) -> tuple[Any, Any]:
    """The analysis and answer templates: the retriever's current ones (``update_prompts`` applies), else the defaults."""
    if hasattr(source, "retrieve_items") and hasattr(source, "prompt"):
        return source.prompt("filter_analysis"), source.prompt("final_answer")
    return FILTER_ANALYSIS_PROMPT, FINAL_ANSWER_PROMPT


def build_archrag_filter_graph(source: Any, llm: Any, token_budget: int = 4000, max_concurrency: int = 8,
                               checkpointer=None):
    """Compile the adaptive-filtering graph (see the module docstring).

    ``source``: an :class:`ArchRAGRetriever` (its ``retrieve_items``, and its ``filter_analysis`` /
    ``final_answer`` prompts as they are when the graph is compiled), a function ``question -> items`` or
    a fixed list of items (default prompts). ``llm``: anything :func:`as_text_llm` accepts. ``token_budget``: tokens of
    reports given to the final answer (4000, the authors' reduce budget). ``max_concurrency``: analysis
    calls in flight at once (8).
    """
    if token_budget < 1 or max_concurrency < 1:
        raise ValueError("token_budget and max_concurrency must be at least 1")
    retrieve_items = _items_source(source)
    analysis_prompt, answer_prompt = _prompts_of(source)
    shared = as_text_llm(llm)
    base, runnable = shared.llm, shared.runnable()
    slots = threading.BoundedSemaphore(max_concurrency)

    def retrieve(state: FilterState) -> dict:
        if not state.get("question"):
            raise ValueError("the ArchRAG filter graph needs a non-empty 'question'")
        if state.get("items") is not None:
            return {}
        return {"items": [{k: v for k, v in it.items() if k != "chunks"} for it in retrieve_items(state["question"])]}

    def fan_out(state: FilterState):
        items = state.get("items") or []
        if not items:
            return "answer"
        return [Send("analyse", {"question": state["question"], "item": it}) for it in items]

    def analyse(task: ItemTask) -> dict:
        item = task["item"]
        text_llm = TextLLM(base, _runnable=runnable)  # its own cost record: branches never share a counter
        prompt = analysis_prompt.format(
            question=task["question"], kind=item.get("kind", "item"), layer=item.get("layer", 0),
            content=f"{item.get('title', '')}\n{item.get('content', '')}".strip())
        ident = str(item.get("id", "?"))
        with slots:
            try:
                answer = text_llm.complete(prompt)
            except Exception as exc:  # one failing branch must not sink the run
                return {"dropped": [{"id": ident, "reason": f"llm_error: {type(exc).__name__}: {exc}"[:300]}],
                        "cost_parts": [text_llm.cost.as_dict()]}
        parsed = parse_score(answer)
        if parsed is None:
            return {"dropped": [{"id": ident, "reason": "unreadable_score", "answer": answer[:300]}],
                    "cost_parts": [text_llm.cost.as_dict()]}
        report, score = parsed
        return {"reports": [{"id": ident, "kind": item.get("kind", "item"), "layer": item.get("layer", 0),
                             "score": score, "report": report or str(item.get("content", ""))}],
                "cost_parts": [text_llm.cost.as_dict()]}

    def answer(state: FilterState) -> dict:
        context, packed = pack_reports(state.get("reports") or [], token_budget)
        text_llm = TextLLM(base, _runnable=runnable)
        prompt = answer_prompt.format(
            question=state["question"], reports=context or "(no relevant information was found; say so, and answer "
                                                            "from general knowledge only if you are sure)")
        out: dict[str, Any] = {"context": context}
        try:
            out["answer"] = text_llm.complete(prompt).strip()
            # the answer cites "Report n" as [n]: which retrieved items it rests on, and numbers no report has
            out["citations"] = cite_passages(out["answer"], [
                {"item_id": r["id"], "kind": r["kind"], "layer": r.get("layer", 0)} for r in packed]).to_json()
        except Exception as exc:
            out["answer"] = ""
            out["dropped"] = [{"id": "final_answer", "reason": f"llm_error: {type(exc).__name__}: {exc}"[:300]}]
        total = LLMUsage()
        for part in (state.get("cost_parts") or []) + [text_llm.cost.as_dict()]:
            total.merge(part)
        out["cost"] = {**total.as_dict(), "reports_packed": len(packed),
                       "reports_zero_score": sum(1 for r in state.get("reports") or [] if r["score"] == 0)}
        return out

    graph = StateGraph(FilterState, input_schema=FilterInput, output_schema=FilterOutput)
    graph.add_node("retrieve", retrieve)
    graph.add_node("analyse", analyse)
    graph.add_node("answer", answer)
    graph.add_edge(START, "retrieve")
    graph.add_conditional_edges("retrieve", fan_out, ["analyse", "answer"])
    graph.add_edge("analyse", "answer")
    graph.add_edge("answer", END)
    return graph.compile(checkpointer=checkpointer, name="archrag_filter")
