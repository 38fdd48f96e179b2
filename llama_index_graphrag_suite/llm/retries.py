"""Which LLM errors are worth retrying, and the retry loop :class:`~.robust.RobustLLM` runs every request in.

Retries use ``tenacity``: connection errors, timeouts, 408/429/5xx are retried (bounded by
``max_retries`` and the deadline), a 4xx or a malformed answer never is. The loop ends by raising
one of the layer's errors (:mod:`.errors`), so callers only ever see those for server trouble.
"""

from __future__ import annotations

import logging
import random
import time
from typing import Callable, TypeVar

from tenacity import RetryCallState, Retrying, retry_if_exception, stop_after_attempt

from .deadline import budget_deadline, publish_attempt_deadline
from .errors import LLMRequestError, LLMTimeoutError, LLMUnavailableError
from .transport import DeadlineExceeded, ResponseFormatError
from .usage import LLMUsage

__all__ = ["is_transient_error", "with_retries"]

logger = logging.getLogger(__name__)
T = TypeVar("T")

# Exception class names of HTTP clients we do not import (openai, httpx) that mean "try again".
_TRANSIENT_NAMES = frozenset(
    {"APIConnectionError", "APITimeoutError", "TimeoutException", "ConnectError", "NetworkError", "RemoteProtocolError"}
)


def status_code(exc: BaseException) -> int | None:
    """The HTTP status of an error raised by requests, httpx or openai, if it carries one."""
    for status in (getattr(exc, "status_code", None), getattr(getattr(exc, "response", None), "status_code", None)):
        if isinstance(status, int):
            return status
    return None


def is_transient_error(exc: BaseException) -> bool:
    """Whether retrying the same request may succeed: connection problems, timeouts, 408/429/5xx."""
    status = status_code(exc)
    if status is not None:
        return status in (408, 429) or status >= 500
    if isinstance(exc, (ConnectionError, TimeoutError)):
        return True
    try:
        import requests
    except ImportError:  # pragma: no cover - requests ships with llama-index-core
        pass
    else:
        if isinstance(exc, (requests.ConnectionError, requests.Timeout, requests.exceptions.ChunkedEncodingError)):
            return True
    return any(cls.__name__ in _TRANSIENT_NAMES for cls in type(exc).__mro__)


def _retry_after(exc: BaseException) -> float | None:
    headers = getattr(getattr(exc, "response", None), "headers", None) or {}
    try:
        return float(headers.get("Retry-After"))
    except (TypeError, ValueError):
        return None


def with_retries(
    request: Callable[[], T],
    *,
    url: str | None,
    usage: LLMUsage,
    timeout: float | None,
    max_retries: int,
    base_delay: float,
    max_delay: float,
) -> tuple[T, float]:
    """Run ``request`` until it succeeds; return its result and the seconds the last attempt took.

    Transient errors are retried (``max_retries`` times, jittered exponential backoff, longer if the
    server sent Retry-After) while the call's deadline (``timeout`` from now, or the job's
    :func:`~.deadline.llm_budget` if earlier) allows. A 4xx other than 408/429 or a malformed answer
    raises :class:`LLMRequestError` at once, a missed deadline :class:`LLMTimeoutError`, other
    non-transient errors propagate unchanged (they are bugs). Failed attempts are counted in ``usage``.
    """
    now = time.monotonic()
    own_end = now + timeout if timeout is not None else None
    budget = budget_deadline()
    ends = [e for e in (own_end, budget) if e is not None]
    end = min(ends) if ends else None
    attempts = 0

    def attempt() -> tuple[T, float]:
        nonlocal attempts
        attempts += 1
        started = time.perf_counter()
        try:
            if end is not None and time.monotonic() >= end:
                raise DeadlineExceeded("no time was left for another attempt")
            with publish_attempt_deadline(end):
                return request(), time.perf_counter() - started
        except Exception:
            usage.add(calls=1, failures=1, seconds=time.perf_counter() - started)
            raise

    def out_of_time(state: RetryCallState) -> bool:
        return end is not None and time.monotonic() + (state.upcoming_sleep or 0.0) >= end

    def wait(state: RetryCallState) -> float:
        n = state.attempt_number
        delay = min(max_delay, base_delay * 2 ** (n - 1)) * random.uniform(0.5, 1.0)
        retry_after = _retry_after(state.outcome.exception()) if state.outcome else None
        if retry_after is not None:
            delay = max(delay, min(retry_after, max_delay))
        return delay if end is None else max(0.0, min(delay, end - time.monotonic()))

    def before_sleep(state: RetryCallState) -> None:
        exc = state.outcome.exception() if state.outcome else None
        logger.warning(
            "LLM request to %s failed (%s: %s); retry %d/%d in %.2fs",
            url, type(exc).__name__, exc, state.attempt_number, max_retries, state.upcoming_sleep,
        )
        usage.add(seconds=state.upcoming_sleep or 0.0)

    retrying = Retrying(
        stop=stop_after_attempt(max_retries + 1) | out_of_time,
        wait=wait,
        retry=retry_if_exception(is_transient_error),
        before_sleep=before_sleep,
        reraise=True,
    )
    try:
        return retrying(attempt)
    except Exception as exc:
        if isinstance(exc, TimeoutError) or (end is not None and time.monotonic() >= end and is_transient_error(exc)):
            seconds = timeout if own_end is not None and (budget is None or own_end <= budget) else None
            raise LLMTimeoutError(url, exc, attempts, seconds) from exc
        if isinstance(exc, ResponseFormatError):
            raise LLMRequestError(url, exc, None) from exc
        if not is_transient_error(exc):
            status = status_code(exc)
            if status is not None:
                raise LLMRequestError(url, exc, status) from exc
            raise
        raise LLMUnavailableError(url, exc, attempts) from exc
