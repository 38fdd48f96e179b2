"""A wrapper that makes any LlamaIndex LLM fit for long index builds.

An index build sends one request per chunk, thousands in total, to a self-hosted server that may be
restarting, overloaded (HTTP 429/503) or slow. :class:`RobustLLM` adds what such a run needs and what
the plain clients lack: a persistent response cache (re-runs are free), retries with exponential
backoff on transient errors only, a clear :class:`LLMUnavailableError` when the server is really
gone, usage counting, a context window that matches the served model, and an ``acomplete`` that does
not block the event loop (``VllmServer.acomplete`` is a synchronous call).

Time is bounded twice: ``timeout`` is the total of one call (every attempt and backoff included), and
an :func:`~.deadline.llm_budget` opened by a job (``build_timeout`` for index builds and loops) bounds
all its calls together. Retries use ``tenacity``: connection errors, timeouts, 408/429/5xx are
retried (bounded by ``max_retries`` and the deadline), a 4xx or a malformed answer never is. Only
non-empty answers that pass the caller's check (:func:`cache_only_if`) enter the cache, so a failed
or unparseable answer is never replayed once the server works again.
"""

from __future__ import annotations

import asyncio
import logging
import os
import random
import threading
import time
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any, Callable, Iterator, Literal, TypeVar

from llama_index.core.base.llms.base import BaseLLM
from llama_index.core.base.llms.types import (
    CompletionResponse,
    CompletionResponseGen,
    LLMMetadata,
)
from llama_index.core.bridge.pydantic import Field, PrivateAttr
from llama_index.core.llms.callbacks import llm_completion_callback
from llama_index.core.llms.custom import CustomLLM

from tenacity import RetryCallState, Retrying, retry_if_exception, stop_after_attempt

from .cache import ResponseCache
from .deadline import budget_deadline, publish_attempt_deadline
from .errors import LLMRequestError, LLMTimeoutError, LLMUnavailableError
from .transport import DeadlineExceeded, ResponseFormatError
from .usage import LLMUsage, count_tokens

__all__ = ["RobustLLM", "cache_only_if", "is_transient_error"]

# A check an answer must pass to be cached (set by callers that parse answers, e.g. extractors).
_CACHE_CHECK: ContextVar[Callable[[str], bool] | None] = ContextVar("llm_cache_check", default=None)


@contextmanager
def cache_only_if(check: Callable[[str], bool] | None) -> Iterator[None]:
    """Within the block, RobustLLM caches (and replays from its cache) only answers ``check`` accepts."""
    token = _CACHE_CHECK.set(check)
    try:
        yield
    finally:
        _CACHE_CHECK.reset(token)


def _cacheable(text: str | None) -> bool:
    if not text or not text.strip():
        return False
    check = _CACHE_CHECK.get()
    try:
        return check is None or bool(check(text))
    except Exception:  # noqa: BLE001 - a check that cannot read the answer rejects it
        return False

logger = logging.getLogger(__name__)
T = TypeVar("T")

# Exception class names of HTTP clients we do not import (openai, httpx) that mean "try again".
_TRANSIENT_NAMES = frozenset(
    {"APIConnectionError", "APITimeoutError", "TimeoutException", "ConnectError", "NetworkError", "RemoteProtocolError"}
)


def _status_code(exc: BaseException) -> int | None:
    """The HTTP status of an error raised by requests, httpx or openai, if it carries one."""
    for status in (getattr(exc, "status_code", None), getattr(getattr(exc, "response", None), "status_code", None)):
        if isinstance(status, int):
            return status
    return None


def is_transient_error(exc: BaseException) -> bool:
    """Whether retrying the same request may succeed: connection problems, timeouts, 408/429/5xx."""
    status = _status_code(exc)
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


class RobustLLM(CustomLLM):
    """Wrap ``llm`` with caching, retries, deadlines, usage counting and a configurable context window.

    ``cache`` may be a :class:`ResponseCache` or a path for one. Cache keys combine the endpoint
    ``url``, the model name, the prompt, ``cache_params`` (sampling settings of the inner LLM, which
    cannot be read from an arbitrary LLM) and the per-call keyword arguments; never the API key.
    Before the first answer is served from the cache, an inner LLM with ``check_access()`` (the
    HTTP client of :func:`~.factory.build_llm`) is asked once whether the server accepts its key, so a
    refused key cannot ride on answers cached under another one.

    ``on_error``, ``max_consecutive_failures`` and ``build_timeout`` are the policy of the jobs that
    use this LLM (read by :class:`~..extractors.llm_relations.LLMRelationExtractor` and the A2RAG loop).
    """

    # repr=False: the inner client's repr can show auth headers (VllmServer.api_headers).
    llm: BaseLLM = Field(description="The wrapped LlamaIndex LLM.", repr=False)
    max_retries: int = Field(default=3, ge=0, description="Retries after the first attempt.")
    base_delay: float = Field(default=0.5, ge=0, description="Backoff before the first retry, doubled per retry.")
    max_delay: float = Field(default=8.0, ge=0, description="Upper bound of one backoff sleep.")
    timeout: float | None = Field(
        default=None, gt=0, description="Total seconds of one call, every attempt and backoff included; also "
        "set on the inner LLM when it has a `timeout` field."
    )
    context_window: int | None = Field(default=None, description="Overrides the inner LLM's context window.")
    num_output: int | None = Field(default=None, description="Overrides the inner LLM's num_output.")
    strip_prompt_echo: bool = Field(
        default=False, description="Remove the prompt from the start of answers (vLLM's legacy /generate echoes it)."
    )
    url: str | None = Field(default=None, description="Endpoint named in error messages (default: the inner LLM's).")
    cache_params: dict[str, Any] = Field(default_factory=dict, description="Extra cache-key material.")
    on_error: Literal["abort", "skip"] = Field(
        default="abort", description="Jobs using this LLM: abort after `max_consecutive_failures` consecutive "
        "auth/protocol refusals (abort), or skip the failing items and go on (skip)."
    )
    max_consecutive_failures: int = Field(default=3, ge=1, description="Refusals in a row that abort a job.")
    build_timeout: float | None = Field(
        default=None, gt=0, description="Seconds all LLM calls of one job (index build, A2RAG loop) may take."
    )

    _cache: ResponseCache | None = PrivateAttr(default=None)
    _usage: LLMUsage = PrivateAttr(default_factory=LLMUsage)
    _access_checked: bool = PrivateAttr(default=False)
    _access_lock: threading.Lock = PrivateAttr(default_factory=threading.Lock)
    _skipped: int = PrivateAttr(default=0)

    def __init__(
        self,
        llm: BaseLLM,
        *,
        cache: ResponseCache | str | os.PathLike | None = None,
        usage: LLMUsage | None = None,
        **kwargs: Any,
    ) -> None:
        kwargs.setdefault("url", getattr(llm, "api_url", None) or getattr(llm, "api_base", None) or llm.class_name())
        super().__init__(llm=llm, **kwargs)
        if cache is not None and not isinstance(cache, ResponseCache):
            cache = ResponseCache(cache)
        self._cache = cache
        self._usage = usage if usage is not None else LLMUsage()
        if self.timeout is not None and hasattr(llm, "timeout"):
            llm.timeout = self.timeout

    @classmethod
    def class_name(cls) -> str:
        return "RobustLLM"

    @property
    def usage(self) -> LLMUsage:
        return self._usage

    @property
    def cache(self) -> ResponseCache | None:
        return self._cache

    @property
    def skipped_items(self) -> int:
        """Items (chunks) that jobs skipped under ``on_error="skip"``; see :meth:`record_skipped`."""
        return self._skipped

    def record_skipped(self, count: int = 1) -> None:
        with self._access_lock:
            self._skipped += count

    def mark_access_checked(self) -> None:
        """The server already accepted this client's key (e.g. while listing its models)."""
        self._access_checked = True

    @property
    def metadata(self) -> LLMMetadata:
        inner = self.llm.metadata
        return LLMMetadata(
            context_window=self.context_window or inner.context_window,
            num_output=self.num_output or inner.num_output,
            # Only the completion path is wrapped; chat() is derived from it by CustomLLM.
            is_chat_model=False,
            is_function_calling_model=False,
            model_name=inner.model_name,
            system_role=inner.system_role,
        )

    # -- completion -------------------------------------------------------------------------------
    @llm_completion_callback()
    def complete(self, prompt: str, formatted: bool = False, **kwargs: Any) -> CompletionResponse:
        return CompletionResponse(text=self._complete_text(prompt, formatted, kwargs))

    @llm_completion_callback()
    async def acomplete(self, prompt: str, formatted: bool = False, **kwargs: Any) -> CompletionResponse:
        # The wrapped clients are synchronous; a worker thread keeps the loop free.
        text = await asyncio.to_thread(self._complete_text, prompt, formatted, kwargs)
        return CompletionResponse(text=text)

    @llm_completion_callback()
    def stream_complete(self, prompt: str, formatted: bool = False, **kwargs: Any) -> CompletionResponseGen:
        key = self._cache_key(prompt, formatted, kwargs)
        cached = self._cached(key)
        if cached is not None:

            def replay() -> CompletionResponseGen:
                yield CompletionResponse(text=cached, delta=cached)

            return replay()

        def start() -> tuple[Any, CompletionResponse | None]:
            # Connection errors may only surface at the first chunk; both are inside the retry.
            stream = iter(self.llm.stream_complete(prompt, formatted=formatted, **kwargs))
            return stream, next(stream, None)

        (stream, first), seconds = self._with_retries(start)
        return self._relay(prompt, key, stream, first, seconds)

    def _relay(
        self, prompt: str, key: str | None, stream: Any, first: CompletionResponse | None, seconds: float
    ) -> CompletionResponseGen:
        """Yield the inner stream with the prompt echo removed; count usage and cache when done.

        Retrying is impossible once text was yielded, so a transient error mid-stream becomes an
        :class:`LLMUnavailableError` right away.
        """
        raw, emitted, finished = "", "", False
        started = time.perf_counter()
        try:
            chunk = first
            while chunk is not None:
                raw = chunk.text if chunk.text else raw + (chunk.delta or "")
                text = self._clean(prompt, raw)
                delta = text[len(emitted) :] if text.startswith(emitted) else (chunk.delta or "")
                emitted = text
                if delta:
                    yield CompletionResponse(text=text, delta=delta)
                chunk = next(stream, None)
            finished = True
        except Exception as exc:
            self._usage.add(failures=1)
            if is_transient_error(exc):
                raise LLMUnavailableError(self.url, exc) from exc
            raise
        finally:
            self._usage.add(
                calls=1,
                prompt_tokens=count_tokens(prompt),
                completion_tokens=count_tokens(emitted),
                seconds=seconds + time.perf_counter() - started,
            )
            if finished and self._cache is not None and key and _cacheable(emitted):
                self._cache.put(key, emitted)

    def _complete_text(self, prompt: str, formatted: bool, kwargs: dict[str, Any]) -> str:
        key = self._cache_key(prompt, formatted, kwargs)
        cached = self._cached(key)
        if cached is not None:
            return cached
        response, seconds = self._with_retries(lambda: self.llm.complete(prompt, formatted=formatted, **kwargs))
        text = self._clean(prompt, response.text or "")
        self._usage.add(
            calls=1, prompt_tokens=count_tokens(prompt), completion_tokens=count_tokens(text), seconds=seconds
        )
        if self._cache is not None and key and _cacheable(text):
            self._cache.put(key, text)
        return text

    # -- helpers ----------------------------------------------------------------------------------
    def _cache_key(self, prompt: str, formatted: bool, kwargs: dict[str, Any]) -> str | None:
        if self._cache is None:
            return None
        params = {"llm": self.llm.class_name(), "endpoint": self.url, "formatted": formatted, **self.cache_params,
                  "call_kwargs": kwargs}
        return ResponseCache.make_key(self.llm.metadata.model_name, prompt, params)

    def _cached(self, key: str | None) -> str | None:
        """A usable cached answer (empty or rejected ones are ignored), after the access check."""
        if self._cache is None or not key:
            return None
        text = self._cache.get(key)
        if text is None or not _cacheable(text):
            return None
        self._check_access()
        self._usage.add(cache_hits=1)
        return text

    def _check_access(self) -> None:
        """Once per client: ask the server whether it accepts our key before replaying answers."""
        check = getattr(self.llm, "check_access", None)
        if self._access_checked or check is None:
            return
        with self._access_lock:
            if self._access_checked:
                return
            try:
                self._with_retries(check, max_retries=0)
            except LLMRequestError as exc:
                if exc.kind == "auth":
                    raise
            except LLMUnavailableError:
                pass  # a server that is down does not stop answers from the cache
            self._access_checked = True

    def _clean(self, prompt: str, text: str) -> str:
        """Drop the echoed prompt; a text that is still a prefix of the prompt has no answer yet."""
        if not self.strip_prompt_echo:
            return text
        if text.startswith(prompt):
            return text[len(prompt) :]
        return "" if prompt.startswith(text) else text

    def _with_retries(self, request: Callable[[], T], max_retries: int | None = None) -> tuple[T, float]:
        """Run ``request`` until it succeeds; return its result and the seconds the last attempt took.

        Transient errors are retried (``max_retries`` times, jittered exponential backoff, longer if
        the server sent Retry-After) while the call's deadline allows. A 4xx other than 408/429 or a
        malformed answer raises :class:`LLMRequestError` at once, a missed deadline
        :class:`LLMTimeoutError`, other non-transient errors propagate unchanged (they are bugs).
        """
        now = time.monotonic()
        own_end = now + self.timeout if self.timeout is not None else None
        budget = budget_deadline()
        ends = [e for e in (own_end, budget) if e is not None]
        end = min(ends) if ends else None
        attempts = 0
        retries = self.max_retries if max_retries is None else max_retries

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
                self._usage.add(calls=1, failures=1, seconds=time.perf_counter() - started)
                raise

        def out_of_time(state: RetryCallState) -> bool:
            return end is not None and time.monotonic() + (state.upcoming_sleep or 0.0) >= end

        def wait(state: RetryCallState) -> float:
            n = state.attempt_number
            delay = min(self.max_delay, self.base_delay * 2 ** (n - 1)) * random.uniform(0.5, 1.0)
            retry_after = _retry_after(state.outcome.exception()) if state.outcome else None
            if retry_after is not None:
                delay = max(delay, min(retry_after, self.max_delay))
            return delay if end is None else max(0.0, min(delay, end - time.monotonic()))

        def before_sleep(state: RetryCallState) -> None:
            exc = state.outcome.exception() if state.outcome else None
            logger.warning(
                "LLM request to %s failed (%s: %s); retry %d/%d in %.2fs",
                self.url, type(exc).__name__, exc, state.attempt_number, retries, state.upcoming_sleep,
            )
            self._usage.add(seconds=state.upcoming_sleep or 0.0)

        retrying = Retrying(
            stop=stop_after_attempt(retries + 1) | out_of_time,
            wait=wait,
            retry=retry_if_exception(is_transient_error),
            before_sleep=before_sleep,
            reraise=True,
        )
        try:
            return retrying(attempt)
        except Exception as exc:
            if isinstance(exc, TimeoutError) or (end is not None and time.monotonic() >= end and is_transient_error(exc)):
                seconds = self.timeout if own_end is not None and (budget is None or own_end <= budget) else None
                raise LLMTimeoutError(self.url, exc, attempts, seconds) from exc
            if isinstance(exc, ResponseFormatError):
                raise LLMRequestError(self.url, exc, None) from exc
            if not is_transient_error(exc):
                status = _status_code(exc)
                if status is not None:
                    raise LLMRequestError(self.url, exc, status) from exc
                raise
            raise LLMUnavailableError(self.url, exc, attempts) from exc
