"""A wrapper that makes any LlamaIndex LLM fit for long index builds.

An index build sends one request per chunk, thousands in total, to a self-hosted server that may be
restarting, overloaded (HTTP 429/503) or slow. :class:`RobustLLM` adds what such a run needs and what
the plain clients lack: a persistent response cache (re-runs are free), retries with exponential
backoff on transient errors only, a clear :class:`LLMUnavailableError` when the server is really
gone, usage counting, a context window that matches the served model, and an ``acomplete`` that does
not block the event loop (``VllmServer.acomplete`` is a synchronous call).
"""

from __future__ import annotations

import asyncio
import logging
import os
import random
import time
from typing import Any, Callable, TypeVar

from llama_index.core.base.llms.base import BaseLLM
from llama_index.core.base.llms.types import (
    CompletionResponse,
    CompletionResponseGen,
    LLMMetadata,
)
from llama_index.core.bridge.pydantic import Field, PrivateAttr
from llama_index.core.llms.callbacks import llm_completion_callback
from llama_index.core.llms.custom import CustomLLM

from .cache import ResponseCache
from .errors import LLMRequestError, LLMUnavailableError
from .usage import LLMUsage, count_tokens

__all__ = ["RobustLLM", "is_transient_error"]

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
    """Wrap ``llm`` with caching, retries, usage counting and a configurable context window.

    ``cache`` may be a :class:`ResponseCache` or a path for one. Cache keys combine the model name,
    the prompt, ``cache_params`` (sampling settings of the inner LLM, which cannot be read from an
    arbitrary LLM) and the per-call keyword arguments.
    """

    # repr=False: the inner client's repr can show auth headers (VllmServer.api_headers).
    llm: BaseLLM = Field(description="The wrapped LlamaIndex LLM.", repr=False)
    max_retries: int = Field(default=3, ge=0, description="Retries after the first attempt.")
    base_delay: float = Field(default=0.5, ge=0, description="Backoff before the first retry, doubled per retry.")
    max_delay: float = Field(default=8.0, ge=0, description="Upper bound of one backoff sleep.")
    timeout: float | None = Field(
        default=None, description="Per-request timeout, applied to the inner LLM when it has a `timeout` field."
    )
    context_window: int | None = Field(default=None, description="Overrides the inner LLM's context window.")
    num_output: int | None = Field(default=None, description="Overrides the inner LLM's num_output.")
    strip_prompt_echo: bool = Field(
        default=False, description="Remove the prompt from the start of answers (vLLM's legacy /generate echoes it)."
    )
    url: str | None = Field(default=None, description="Endpoint named in error messages (default: the inner LLM's).")
    cache_params: dict[str, Any] = Field(default_factory=dict, description="Extra cache-key material.")

    _cache: ResponseCache | None = PrivateAttr(default=None)
    _usage: LLMUsage = PrivateAttr(default_factory=LLMUsage)

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
        # The wrapped clients are synchronous (requests); a worker thread keeps the loop free.
        text = await asyncio.to_thread(self._complete_text, prompt, formatted, kwargs)
        return CompletionResponse(text=text)

    @llm_completion_callback()
    def stream_complete(self, prompt: str, formatted: bool = False, **kwargs: Any) -> CompletionResponseGen:
        key = self._cache_key(prompt, formatted, kwargs)
        cached = self._cache.get(key) if self._cache is not None and key else None
        if cached is not None:
            self._usage.add(cache_hits=1)

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
            if finished and self._cache is not None and key:
                self._cache.put(key, emitted)

    def _complete_text(self, prompt: str, formatted: bool, kwargs: dict[str, Any]) -> str:
        key = self._cache_key(prompt, formatted, kwargs)
        if self._cache is not None and key:
            cached = self._cache.get(key)
            if cached is not None:
                self._usage.add(cache_hits=1)
                return cached
        response, seconds = self._with_retries(lambda: self.llm.complete(prompt, formatted=formatted, **kwargs))
        text = self._clean(prompt, response.text or "")
        self._usage.add(
            calls=1, prompt_tokens=count_tokens(prompt), completion_tokens=count_tokens(text), seconds=seconds
        )
        if self._cache is not None and key:
            self._cache.put(key, text)
        return text

    # -- helpers ----------------------------------------------------------------------------------
    def _cache_key(self, prompt: str, formatted: bool, kwargs: dict[str, Any]) -> str | None:
        if self._cache is None:
            return None
        params = {"llm": self.llm.class_name(), "formatted": formatted, **self.cache_params, "call_kwargs": kwargs}
        return ResponseCache.make_key(self.llm.metadata.model_name, prompt, params)

    def _clean(self, prompt: str, text: str) -> str:
        """Drop the echoed prompt; a text that is still a prefix of the prompt has no answer yet."""
        if not self.strip_prompt_echo:
            return text
        if text.startswith(prompt):
            return text[len(prompt) :]
        return "" if prompt.startswith(text) else text

    def _with_retries(self, request: Callable[[], T]) -> tuple[T, float]:
        """Run ``request`` until it succeeds; return its result and the seconds the last attempt took.

        Transient errors are retried ``max_retries`` times with jittered exponential backoff (longer if
        the server sent Retry-After). A 4xx other than 408/429 raises :class:`LLMRequestError` at once,
        other non-transient errors propagate unchanged (they are bugs, not outages).
        """
        attempt = 0
        while True:
            attempt += 1
            started = time.perf_counter()
            try:
                return request(), time.perf_counter() - started
            except Exception as exc:
                self._usage.add(calls=1, failures=1, seconds=time.perf_counter() - started)
                if not is_transient_error(exc):
                    status = _status_code(exc)
                    if status is not None:
                        raise LLMRequestError(self.url, exc, status) from exc
                    raise
                if attempt > self.max_retries:
                    raise LLMUnavailableError(self.url, exc, attempt) from exc
                delay = min(self.max_delay, self.base_delay * 2 ** (attempt - 1)) * random.uniform(0.5, 1.0)
                retry_after = _retry_after(exc)
                if retry_after is not None:
                    delay = max(delay, min(retry_after, self.max_delay))
                logger.warning(
                    "LLM request to %s failed (%s: %s); retry %d/%d in %.2fs",
                    self.url, type(exc).__name__, exc, attempt, self.max_retries, delay,
                )
                time.sleep(delay)
                self._usage.add(seconds=delay)
