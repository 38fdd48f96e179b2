"""Time budgets for LLM work: one per call (set by :class:`~.robust.RobustLLM`) and one per job.

A job (an index build, one A2RAG loop) opens ``llm_budget(seconds)``; every LLM call made inside it,
in this thread, in asyncio tasks or in ``asyncio.to_thread`` workers (contexts are copied there),
must finish before the budget's end. The per-call deadline of the current attempt is published in
the same way, so the HTTP client (:mod:`.transport`) can cut a request off at the right moment
without the deadline travelling through LlamaIndex's call signatures.
"""

from __future__ import annotations

import contextvars
import threading
import time
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any, Callable, Iterator, TypeVar

from .errors import LLMTimeoutError

__all__ = ["attempt_deadline", "budget_deadline", "call_within_budget", "llm_budget", "publish_attempt_deadline"]

T = TypeVar("T")

_BUDGET: ContextVar[float | None] = ContextVar("llm_budget_deadline", default=None)
_ATTEMPT: ContextVar[float | None] = ContextVar("llm_attempt_deadline", default=None)


@contextmanager
def llm_budget(seconds: float | None) -> Iterator[float | None]:
    """Bound all LLM calls of the block to ``seconds`` in total (None: no bound). Budgets nest; the
    earlier end wins. Yields the monotonic end of the budget."""
    outer = _BUDGET.get()
    end = outer
    if seconds is not None:
        mine = time.monotonic() + max(0.0, float(seconds))
        end = mine if outer is None else min(outer, mine)
    token = _BUDGET.set(end)
    try:
        yield end
    finally:
        _BUDGET.reset(token)


def budget_deadline() -> float | None:
    """The monotonic end of the innermost active budget, or None."""
    return _BUDGET.get()


@contextmanager
def publish_attempt_deadline(deadline: float | None) -> Iterator[None]:
    token = _ATTEMPT.set(deadline)
    try:
        yield
    finally:
        _ATTEMPT.reset(token)


def attempt_deadline(default_seconds: float | None) -> float:
    """The deadline an HTTP request should use: the published one, else ``default_seconds`` from
    now (no deadline at all is never used: an hour is the fallback), capped by the budget."""
    published = _ATTEMPT.get()
    if published is None:
        published = time.monotonic() + (default_seconds if default_seconds is not None else 3600.0)
    budget = _BUDGET.get()
    return published if budget is None else min(published, budget)


def call_within_budget(fn: Callable[[], T], what: str = "LLM call") -> T:
    """``fn()``, bounded by the active ``llm_budget`` (see the module docstring); plain ``fn()`` without one.

    Here rather than in ``langchain_bridge`` so that A2RAG's retriever does not import LangChain (~0.6 s).
    """
    end = budget_deadline()
    if end is None:
        return fn()
    left = end - time.monotonic()
    if left <= 0:
        raise LLMTimeoutError(None, TimeoutError(f"the time budget ran out before the {what}"))
    done = threading.Event()
    box: dict[str, Any] = {}
    context = contextvars.copy_context()  # budget, ledgers and LangChain's run config follow the call

    def run() -> None:
        try:
            box["value"] = context.run(fn)
        except BaseException as exc:  # noqa: BLE001 - re-raised in the caller's thread
            box["error"] = exc
        finally:
            done.set()

    threading.Thread(target=run, name="graphrag-budgeted-call", daemon=True).start()
    if not done.wait(left):
        raise LLMTimeoutError(None, TimeoutError(f"the time budget ran out during the {what} ({left:.2f}s were left)"))
    if "error" in box:
        raise box["error"]
    return box["value"]
