"""The A2RAG loop's time budget: one bound on a whole run (gate to verdict, every round and LLM call).

Each node of the loop is wrapped by :func:`timed_node`. It charges the node's wall time to the run's
``cost["seconds"]`` (kept in the graph state, so a run resumed from a checkpointer goes on counting
where it stopped, and time spent waiting for a human review is not counted), and runs the node inside
:func:`~llama_index_graphrag_suite.llm.deadline.llm_budget` with the time left. Within it every LLM call
and the retrieval end by the deadline: ``RobustLLM`` cuts its own requests; any other LLM or retriever
is abandoned at the deadline (``call_within_budget``), so the run is bounded whatever the LLM.

When the budget runs out the run ends with ``status == "fail"``, an ``error`` that starts with
``"time budget exhausted"``, ``cost["time_budget_exhausted"] = True``, and the best state reached so
far: the last round's ``documents``, ``evidence`` and ``facts`` (and its unverified ``draft``, if one
was written). It is not raised, as for other failures of the loop: an agent gets what was found.
"""

from __future__ import annotations

import math
import time
from typing import Any, Callable, Mapping

from llama_index_graphrag_suite.llm.deadline import llm_budget

__all__ = ["EXHAUSTED", "resolve_time_budget", "timed_node"]

EXHAUSTED = "time budget exhausted"


def resolve_time_budget(time_budget: Any, retriever: Any, llm: Any) -> float | None:
    """``time_budget`` when given ("auto": the retriever's ``config.time_budget``, else the LLM's
    ``build_timeout``, else None); checked to be a positive number or None."""
    if time_budget == "auto":
        config = getattr(retriever, "config", None)
        time_budget = getattr(config, "time_budget", None)
        if time_budget is None:
            time_budget = getattr(llm, "build_timeout", None)
    if time_budget is None:
        return None
    if isinstance(time_budget, bool) or not isinstance(time_budget, (int, float)) \
            or not math.isfinite(time_budget) or time_budget <= 0:
        raise ValueError(f"time_budget must be a positive number of seconds, None or 'auto', got {time_budget!r}")
    return float(time_budget)


def _exhausted(state: Mapping, node: str, seconds: float, spent: float, base: Mapping, cause: str | None) -> dict:
    error = f"{EXHAUSTED} ({spent:.2f}s of {seconds:g}s spent" + (f"; {node}: {cause})" if cause else f" before {node})")
    cost = {**base, "seconds": round(spent, 4), "time_budget_exhausted": True}
    return {"status": "fail", "error": error, "cost": cost, "trace": [{"node": node, "error": error}]}


def timed_node(name: str, fn: Callable[[Mapping], dict], seconds: float | None) -> Callable[[Mapping], dict]:
    """``fn`` charged to the run's clock and bounded by what is left of ``seconds`` (see the module docstring)."""
    opens_run = name == "gate"  # the gate starts a new run (and a new cost record)

    def node(state: Mapping) -> dict:
        spent = 0.0 if opens_run else float((state.get("cost") or {}).get("seconds") or 0.0)
        left = None if seconds is None else seconds - spent
        if left is not None and left <= 0 and not opens_run:
            return _exhausted(state, name, seconds, spent, state.get("cost") or {}, None)
        start = time.monotonic()
        with llm_budget(left):
            update = fn(state)
        spent += time.monotonic() - start
        base = update.get("cost") or state.get("cost") or {}
        if seconds is not None and spent >= seconds and update.get("status") == "fail":
            return _exhausted(state, name, seconds, spent, base, update.get("error"))
        return {**update, "cost": {**base, "seconds": round(spent, 4)}}

    node.__name__ = name
    return node
