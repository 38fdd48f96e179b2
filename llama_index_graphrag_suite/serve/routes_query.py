"""``POST /retrieve`` and ``POST /query``: a question through the one runner, with the evidence as a graph, and
(``/query``) the LLM's answer, whole or as server-sent events (retrieval, token..., done)."""

from __future__ import annotations

import json
import time
from typing import Any

from fastapi import APIRouter, BackgroundTasks, HTTPException
from fastapi.responses import StreamingResponse

from ..text import hide_credentials
from .evidence import evidence_graph
from .runner import answer, require_documents, retrieve, stream_answer
from .schemas import QueryRequest, RetrieveRequest, RetrieveResponse

__all__ = ["query_router"]


def _llm_errors() -> tuple[type[BaseException], ...]:
    from ..llm.errors import LLMError

    return (LLMError, ConnectionError, TimeoutError)


def _sse(event: str, data: Any) -> str:
    return f"event: {event}\ndata: {json.dumps(data, ensure_ascii=False)}\n\n"


def query_router(server: Any) -> APIRouter:
    """The question routes over ``server`` (``app.Server``)."""
    router = APIRouter(dependencies=server.guarded, tags=["questions"])
    index = server.index

    def _retrieve(req: RetrieveRequest) -> tuple[dict[str, Any], Any]:
        require_documents(index)
        run = retrieve(index, req.question, req.method, req.top_k, req.settings)
        if req.graph:
            start = time.perf_counter()
            run.result["graph"] = evidence_graph(index, run.result)
            run.result["timing_ms"]["graph"] = round((time.perf_counter() - start) * 1000, 2)
        return run.result, run

    @router.post("/retrieve", response_model=RetrieveResponse)
    def post_retrieve(req: RetrieveRequest, after: BackgroundTasks) -> dict[str, Any]:
        after.add_task(server.after_question)  # once the answer is sent
        return _retrieve(req)[0]

    @router.post("/query", response_model=RetrieveResponse, responses={200: {"content": {"text/event-stream": {}}}})
    def post_query(req: QueryRequest, after: BackgroundTasks):
        llm = server.llm
        if llm is None:
            raise HTTPException(503, "this server has no LLM: start it with --llm URL (or GRAPHRAG_LLM_URL) to answer; "
                                     "POST /retrieve works without one")
        result, run = _retrieve(req)
        after.add_task(server.after_question)  # once the answer is sent (a stream: once it ends)
        if not req.stream:
            start = time.perf_counter()
            try:
                result["answer"] = answer(run, llm)
            except _llm_errors() as exc:
                raise HTTPException(502, f"the LLM failed: {hide_credentials(str(exc))}") from None
            result["timing_ms"]["answer"] = round((time.perf_counter() - start) * 1000, 2)
            return result

        def events():
            yield _sse("retrieval", result)
            start, parts = time.perf_counter(), []
            try:
                for delta in stream_answer(run, llm):
                    parts.append(delta)
                    yield _sse("token", {"delta": delta})
            except Exception as exc:  # noqa: BLE001 - the stream has started: report in-band
                yield _sse("error", {"detail": f"the LLM failed: {hide_credentials(str(exc))}"})
                return
            yield _sse("done", {"answer": "".join(parts).strip(), "citations": run.result.get("citations"),
                                "timing_ms": {"answer": round((time.perf_counter() - start) * 1000, 2)}})

        return StreamingResponse(events(), media_type="text/event-stream", headers={"Cache-Control": "no-cache"})

    return router
