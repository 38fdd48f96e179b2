"""Time budgets for LLM work: one per call (set by :class:`~.robust.RobustLLM`) and one per job.

A job (an index build, one A2RAG loop) opens ``llm_budget(seconds)``; every LLM call made inside it,
in this thread, in asyncio tasks or in ``asyncio.to_thread`` workers (contexts are copied there),
must finish before the budget's end. The per-call deadline of the current attempt is published in
the same way, so the HTTP client (:mod:`.transport`) can cut a request off at the right moment
without the deadline travelling through LlamaIndex's call signatures.
"""

from __future__ import annotations

import time
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Iterator

__all__ = ["attempt_deadline", "budget_deadline", "llm_budget", "publish_attempt_deadline"]

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
