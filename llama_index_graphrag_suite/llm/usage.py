"""Counting what the LLM costs: requests, cache hits, tokens, failures and time.

The papers this project reimplements compare methods by LLM calls and tokens per index build and per
query, so these numbers must be attributable to a scope. ``usage.track()`` opens such a scope: every
call recorded while it is active *in the current context* also lands in the scope's own counter.
Contexts follow asyncio tasks and ``asyncio.to_thread``, so concurrent queries on one shared
:class:`LLMUsage` do not leak into each other's scopes. Work handed to a plain thread pool that does
not copy the context is counted in the totals only.

Tokens are *exact* when the server reported them (the ``usage`` field of an OpenAI-compatible
answer, or the last event of a stream asked for with ``stream_options.include_usage``) and
*estimated* with tiktoken otherwise; ``exact_calls`` and ``estimated_calls`` say how many successful
requests each kind covers, and :meth:`LLMUsage.cost` gives the whole record with that verdict.
"""

from __future__ import annotations

import threading
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import asdict, dataclass
from typing import Any, Iterator

__all__ = ["LLMCost", "LLMUsage", "count_tokens", "server_usage"]

_FIELDS = ("calls", "cache_hits", "prompt_tokens", "completion_tokens", "failures", "seconds", "exact_calls",
           "estimated_calls")

# (owner, scope) pairs of the track() blocks active in the current context.
_ACTIVE_SCOPES: ContextVar[tuple[tuple["LLMUsage", "LLMUsage"], ...]] = ContextVar("llm_usage_scopes", default=())


def count_tokens(text: str) -> int:
    """Token count with LlamaIndex's global tokenizer (tiktoken, bundled cache, works offline).

    Servers use their own tokenizers, so this is an estimate that is comparable across runs.
    """
    from llama_index.core.utils import get_tokenizer

    return len(get_tokenizer()(text)) if text else 0


def server_usage(raw: Any) -> tuple[int, int] | None:
    """``(prompt_tokens, completion_tokens)`` from an answer's ``usage`` field, if the server sent one."""
    usage = raw.get("usage") if isinstance(raw, dict) else None
    if not isinstance(usage, dict):
        return None
    prompt, completion = usage.get("prompt_tokens"), usage.get("completion_tokens")
    if not isinstance(prompt, int) or isinstance(prompt, bool) or prompt < 0:
        return None
    if not isinstance(completion, int) or isinstance(completion, bool) or completion < 0:
        completion = 0
    return prompt, completion


@dataclass(frozen=True)
class LLMCost:
    """What LLM work cost: the one record the CLI, the bench and index ``build_info`` report.

    ``tokens`` says how the token counts were obtained: ``"exact"`` (every successful request's
    counts came from the server), ``"estimated"`` (none did: tiktoken on our side), ``"mixed"``, or
    ``"none"`` (no successful request).
    """

    calls: int
    cache_hits: int
    failures: int
    prompt_tokens: int
    completion_tokens: int
    exact_calls: int
    estimated_calls: int
    seconds: float

    @property
    def tokens(self) -> str:
        if self.exact_calls and self.estimated_calls:
            return "mixed"
        return "exact" if self.exact_calls else "estimated" if self.estimated_calls else "none"

    def as_dict(self) -> dict[str, Any]:
        return {**asdict(self), "tokens": self.tokens}

    def __str__(self) -> str:
        extra = [f"{n} {what}" for n, what in ((self.failures, "failed"), (self.cache_hits, "cached")) if n]
        calls = f"{self.calls} LLM calls" + (f" ({', '.join(extra)})" if extra else "")
        how = {"mixed": f"exact for {self.exact_calls}, estimated for {self.estimated_calls} calls"}.get(
            self.tokens, self.tokens)
        return (f"{calls}, {self.prompt_tokens} prompt + {self.completion_tokens} completion tokens ({how}), "
                f"{self.seconds:.1f}s")


class LLMUsage:
    """Thread-safe counters of LLM use.

    * ``calls``: requests sent to the model server, every retry attempt included;
    * ``cache_hits``: completions answered from the response cache without a request;
    * ``prompt_tokens`` / ``completion_tokens``: tokens of successful requests, as the server reported
      them or else estimated (see :func:`count_tokens`); ``exact_calls`` / ``estimated_calls`` count
      the successful requests of each kind;
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
        exact_calls: int = 0,
        estimated_calls: int = 0,
    ) -> None:
        """Record usage here and in every scope of this counter active in the current context."""
        delta = {
            "calls": calls,
            "cache_hits": cache_hits,
            "prompt_tokens": prompt_tokens,
            "completion_tokens": completion_tokens,
            "failures": failures,
            "seconds": seconds,
            "exact_calls": exact_calls,
            "estimated_calls": estimated_calls,
        }
        self._add(delta)
        for owner, scope in _ACTIVE_SCOPES.get():
            if owner is self:
                scope._add(delta)

    def record_call(self, prompt: str, completion: str | None, seconds: float = 0.0, *,
                    reported: tuple[int, int] | None = None) -> None:
        """One request: its prompt, and its completion (``None`` when it failed).

        ``reported`` is the server's ``(prompt_tokens, completion_tokens)`` (see :func:`server_usage`);
        without it the tokens are estimated here.
        """
        if completion is None:
            self.add(calls=1, failures=1, prompt_tokens=count_tokens(prompt), seconds=seconds)
        elif reported is not None:
            self.add(calls=1, prompt_tokens=reported[0], completion_tokens=reported[1], exact_calls=1, seconds=seconds)
        else:
            self.add(calls=1, prompt_tokens=count_tokens(prompt), completion_tokens=count_tokens(completion),
                     estimated_calls=1, seconds=seconds)

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

    def cost(self) -> LLMCost:
        """The counters as one :class:`LLMCost` record (with whether the tokens are exact)."""
        values = self.snapshot()
        return LLMCost(seconds=float(values.pop("seconds")), **{k: int(v) for k, v in values.items()})

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
