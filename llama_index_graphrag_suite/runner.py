"""Run one request: the ranked chunks, the method's evidence, and an answer with an LLM.

The one query path of the CLI (``query``, ``ask``, ``demo``), the HTTP server, the MCP tool and the bench:

    request = Request.make(question, "agrag", top_k=5, settings={"fact_top_k": 3})   # checked once
    run = run_request(index, request)        # Retrieval: .result (JSON), .retriever, .nodes
    text = answer(run, llm)                  # the method's answer prompt over the same nodes

``retrieve(index, question, method, top_k, settings)`` is the same in one call. Errors a caller can
fix raise :class:`~llama_index_graphrag_suite.request.RequestError`.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

from .request import MethodSpec, Request, RequestError

__all__ = ["Request", "RequestError", "Retrieval", "answer", "node_json", "retrieve", "run_request", "stream_answer"]


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


def run_request(index: Any, request: Request, retriever: Any = None) -> Retrieval:
    """Run ``request`` on ``index``; the result has ``nodes`` (chunks then evidence), ``evidence``, ``timing_ms``.

    ``retriever``: one already built for this request's method (the bench reuses one per method).
    """
    from .methods.base import retrieve_nodes

    if retriever is None:
        retriever = request.spec.retriever(index, top_k=request.top_k)
    start = time.perf_counter()
    nodes = retrieve_nodes(retriever, request.question)  # the chunks, then the evidence node the result shows
    elapsed = (time.perf_counter() - start) * 1000
    items = [node_json(n) for n in nodes]
    evidence = next((i["metadata"].get("evidence", {}) for i in items if i["kind"] == "evidence"), {})
    result = {"method": request.spec.label, "question": request.question, "nodes": items, "evidence": evidence,
              "timing_ms": {"retrieve": round(elapsed, 2)}}
    return Retrieval(result, retriever, nodes)


def retrieve(index: Any, question: str, method: str | MethodSpec, top_k: int = 5,
             settings: dict[str, Any] | None = None) -> Retrieval:
    """:func:`run_request` of ``Request.make(question, method, top_k, settings)``."""
    return run_request(index, Request.make(question, method, top_k, settings))


def _engine_and_nodes(retrieval: Retrieval, llm: Any, streaming: bool):
    from llama_index.core.schema import QueryBundle

    engine = retrieval.retriever.as_query_engine(llm=llm, streaming=streaming)
    first = retrieval.retriever.evidence_placement == "first"  # what the engine's own postprocessor does
    nodes = sorted(retrieval.nodes, key=lambda n: (n.node.metadata.get("kind") == "evidence") != first)
    return engine, QueryBundle(retrieval.result["question"]), nodes


def answer(retrieval: Retrieval, llm: Any) -> str:
    """The method's answer prompt filled with the nodes already retrieved (no second retrieval).

    What the answer cites goes to ``retrieval.result["citations"]`` (see :mod:`.citations`)."""
    engine, bundle, nodes = _engine_and_nodes(retrieval, llm, streaming=False)
    response = engine.synthesize(bundle, nodes)
    retrieval.result["citations"] = (response.metadata or {}).get("citations")
    return str(response).strip()


def stream_answer(retrieval: Retrieval, llm: Any) -> Iterator[str]:
    """Like :func:`answer`, piece by piece as the LLM produces it; the citations are recorded after the last piece."""
    engine, bundle, nodes = _engine_and_nodes(retrieval, llm, streaming=True)
    response = engine.synthesize(bundle, nodes)
    gen = getattr(response, "response_gen", None)
    if gen is None:  # a synthesizer that does not stream: one piece
        yield str(response)
    else:
        yield from gen
    retrieval.result["citations"] = (response.metadata or {}).get("citations")  # known once the stream has ended
