"""Run one method on one question: the ranked chunks, the method's evidence, and an answer with an LLM.

Shared by the HTTP server, ``graphrag-suite ask`` / ``query --llm`` and the MCP tool, so all of them
check a request the same way and return the same JSON. Errors a caller can fix raise
:class:`RequestError` with a message that says what to change.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

from ..methods.base import retrieve_nodes
from ..registry import UnknownMethodError, available_methods, get_retriever, method_info, parse_method

__all__ = ["MAX_TOP_K", "RequestError", "Retrieval", "answer", "node_json", "retrieve", "stream_answer"]

MAX_TOP_K = 100


class RequestError(ValueError):
    """A request that cannot run as asked (empty question, unknown method or setting)."""


class Retrieval:
    """What one retrieval returned: the JSON result, and the retriever and nodes an answer is built from."""

    def __init__(self, result: dict[str, Any], retriever: Any, nodes: list[Any]):
        self.result, self.retriever, self.nodes = result, retriever, nodes


def node_json(nws) -> dict[str, Any]:
    """One returned node as JSON: id, kind (chunk or evidence), score, text, document id and metadata (title, ...)."""
    meta = dict(nws.node.metadata)
    kind = meta.pop("kind", "chunk")
    return {"id": nws.node.node_id, "kind": kind, "score": nws.score, "text": nws.node.get_content(),
            "doc_id": meta.get("doc_id"), "metadata": meta}


def check_request(question: str, method: str, top_k: int, settings: dict[str, Any] | None) -> None:
    """Raise :class:`RequestError` for an empty question, an unknown method or variant, or a bad setting."""
    if not isinstance(question, str) or not question.strip():
        raise RequestError("the question is empty: send a non-empty 'question'")
    if top_k < 1:
        raise RequestError(f"top_k must be at least 1, got {top_k}")
    try:
        info = method_info(method)
        name, variant = parse_method(method)
        if variant:
            info.check_variant(variant)
    except UnknownMethodError as exc:
        raise RequestError(f"{exc} (methods: {', '.join(sorted(available_methods()))})") from None
    fields = info.config_class.model_fields
    unknown = sorted(set(settings or {}) - set(fields))
    if unknown:
        raise RequestError(f"method {name!r} has no setting {', '.join(map(repr, unknown))}; "
                           f"settings: {', '.join(sorted(fields)) or '(none)'}")
    try:
        info.config_class.resolve(variant=variant, **(settings or {}))
    except ValueError as exc:  # pydantic's ValidationError is a ValueError
        first = exc.errors()[0] if hasattr(exc, "errors") else {"msg": str(exc), "loc": ()}
        where = ".".join(str(x) for x in first.get("loc", ())) or "settings"
        raise RequestError(f"bad setting for {name}: {where}: {first['msg']}") from None


def retrieve(index: Any, question: str, method: str, top_k: int = 5,
             settings: dict[str, Any] | None = None) -> Retrieval:
    """Run ``method`` on ``question``; the result has ``nodes`` (chunks then evidence), ``evidence``, ``timing_ms``."""
    check_request(question, method, top_k, settings)
    retriever = get_retriever(index, method, top_k=top_k, **(settings or {}))
    start = time.perf_counter()
    nodes = retrieve_nodes(retriever, question)  # the chunks, then the evidence node the result shows
    elapsed = (time.perf_counter() - start) * 1000
    items = [node_json(n) for n in nodes]
    evidence = next((i["metadata"].get("evidence", {}) for i in items if i["kind"] == "evidence"), {})
    result = {"method": method, "question": question, "nodes": items, "evidence": evidence,
              "timing_ms": {"retrieve": round(elapsed, 2)}}
    return Retrieval(result, retriever, nodes)


def _engine_and_nodes(retrieval: Retrieval, llm: Any, streaming: bool):
    from llama_index.core.schema import QueryBundle

    engine = retrieval.retriever.as_query_engine(llm=llm, streaming=streaming)
    first = retrieval.retriever.evidence_placement == "first"  # what the engine's own postprocessor does
    nodes = sorted(retrieval.nodes, key=lambda n: (n.node.metadata.get("kind") == "evidence") != first)
    return engine, QueryBundle(retrieval.result["question"]), nodes


def answer(retrieval: Retrieval, llm: Any) -> str:
    """The method's answer prompt filled with the nodes already retrieved (no second retrieval)."""
    engine, bundle, nodes = _engine_and_nodes(retrieval, llm, streaming=False)
    return str(engine.synthesize(bundle, nodes)).strip()


def stream_answer(retrieval: Retrieval, llm: Any) -> Iterator[str]:
    """Like :func:`answer`, piece by piece as the LLM produces it."""
    engine, bundle, nodes = _engine_and_nodes(retrieval, llm, streaming=True)
    response = engine.synthesize(bundle, nodes)
    gen = getattr(response, "response_gen", None)
    if gen is None:  # a synthesizer that does not stream: one piece
        yield str(response)
        return
    yield from gen
