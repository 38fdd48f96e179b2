"""Counting what the LLM costs: requests, cache hits, tokens, failures and time.

The papers this project reimplements compare methods by LLM calls and tokens per index build and per
query, so these numbers must be attributable to a scope. ``usage.track()`` opens such a scope: every
call recorded while it is active *in the current context* also lands in the scope's own counter.
Contexts follow asyncio tasks and ``asyncio.to_thread``, so concurrent queries on one shared
:class:`LLMUsage` do not leak into each other's scopes. Work handed to a plain thread pool that does
not copy the context is counted in the totals only.
"""

from __future__ import annotations

import threading
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Iterator

__all__ = ["LLMUsage", "count_tokens"]

_FIELDS = ("calls", "cache_hits", "prompt_tokens", "completion_tokens", "failures", "seconds")

# (owner, scope) pairs of the track() blocks active in the current context.
_ACTIVE_SCOPES: ContextVar[tuple[tuple["LLMUsage", "LLMUsage"], ...]] = ContextVar("llm_usage_scopes", default=())


def count_tokens(text: str) -> int:
    """Token count with LlamaIndex's global tokenizer (tiktoken, bundled cache, works offline).

    Servers use their own tokenizers, so this is an estimate that is comparable across runs.
    """
    from llama_index.core.utils import get_tokenizer

    return len(get_tokenizer()(text)) if text else 0


class LLMUsage:
    """Thread-safe counters of LLM use.

    * ``calls``: requests sent to the model server, every retry attempt included;
    * ``cache_hits``: completions answered from the response cache without a request;
    * ``prompt_tokens`` / ``completion_tokens``: tokens of successful requests (see :func:`count_tokens`);
    * ``failures``: requests that raised;
    * ``seconds``: wall time spent waiting for the server, failed attempts and backoff included.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._counts: dict[str, float] = {}
        self.reset()

    def add(
        self,
        *,
        calls: int = 0,
        cache_hits: int = 0,
        prompt_tokens: int = 0,
        completion_tokens: int = 0,
        failures: int = 0,
        seconds: float = 0.0,
    ) -> None:
        """Record usage here and in every scope of this counter active in the current context."""
        delta = {
            "calls": calls,
            "cache_hits": cache_hits,
            "prompt_tokens": prompt_tokens,
            "completion_tokens": completion_tokens,
            "failures": failures,
            "seconds": seconds,
        }
        self._add(delta)
        for owner, scope in _ACTIVE_SCOPES.get():
            if owner is self:
                scope._add(delta)

    def record_call(self, prompt: str, completion: str | None, seconds: float = 0.0) -> None:
        """One request: its prompt, and its completion (``None`` when it failed), tokens counted here."""
        self.add(calls=1, prompt_tokens=count_tokens(prompt), seconds=seconds,
                 completion_tokens=count_tokens(completion) if completion is not None else 0,
                 failures=1 if completion is None else 0)

    def merge(self, other: "LLMUsage | dict[str, float]") -> None:
        """Add another counter's totals (or a :meth:`snapshot` of one) to this one."""
        values = other.snapshot() if isinstance(other, LLMUsage) else other
        self.add(**{k: v for k, v in values.items() if k in _FIELDS})

    def _add(self, delta: dict[str, float]) -> None:
        with self._lock:
            for name, value in delta.items():
                self._counts[name] += value

    def snapshot(self) -> dict[str, float]:
        """A consistent copy of all counters (ints, except ``seconds``)."""
        with self._lock:
            return dict(self._counts)

    def as_dict(self) -> dict[str, float]:
        """The counters as a plain dict (JSON-serialisable; what graph state and traces hold)."""
        return self.snapshot()

    def reset(self) -> None:
        with self._lock:
            self._counts = {name: 0.0 if name == "seconds" else 0 for name in _FIELDS}

    @contextmanager
    def track(self) -> Iterator["LLMUsage"]:
        """Count the usage of a block (one index build, one query) in a fresh :class:`LLMUsage`.

        Scopes nest: an outer ``track()`` also sees what an inner one counts.
        """
        scope = LLMUsage()
        token = _ACTIVE_SCOPES.set(_ACTIVE_SCOPES.get() + ((self, scope),))
        try:
            yield scope
        finally:
            _ACTIVE_SCOPES.reset(token)

    @property
    def calls(self) -> int:
        return int(self.snapshot()["calls"])

    @property
    def cache_hits(self) -> int:
        return int(self.snapshot()["cache_hits"])

    @property
    def prompt_tokens(self) -> int:
        return int(self.snapshot()["prompt_tokens"])

    @property
    def completion_tokens(self) -> int:
        return int(self.snapshot()["completion_tokens"])

    @property
    def failures(self) -> int:
        return int(self.snapshot()["failures"])

    @property
    def seconds(self) -> float:
        return float(self.snapshot()["seconds"])

    def __repr__(self) -> str:
        fields = ", ".join(f"{k}={v:.3f}" if k == "seconds" else f"{k}={v}" for k, v in self.snapshot().items())
        return f"LLMUsage({fields})"
