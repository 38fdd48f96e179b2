"""A wrapper that makes any LlamaIndex LLM fit for long index builds.

An index build sends one request per chunk, thousands in total, to a self-hosted server that may be
restarting, overloaded (HTTP 429/503) or slow. :class:`RobustLLM` adds what such a run needs and what
the plain clients lack: a persistent response cache (re-runs are free), retries with exponential
backoff on transient errors only, a clear :class:`LLMUnavailableError` when the server is really
gone, usage counting, a context window that matches the served model, and an ``acomplete`` that does
not block the event loop (``VllmServer.acomplete`` is a synchronous call).

Time is bounded twice: ``timeout`` is the total of one call (every attempt and backoff included), and
an :func:`~.deadline.llm_budget` opened by a job (``build_timeout`` for index builds and loops) bounds
all its calls together. Retries (:mod:`.retries`): connection errors, timeouts, 408/429/5xx are
retried, a 4xx or a malformed answer never is. Only non-empty answers that pass the caller's check
(:func:`cache_only_if`) enter the cache, so a failed or unparseable answer is never replayed once
the server works again.

The wrapper has the inner LLM's shape: over a chat model (``build_llm``'s OpenAI-compatible client)
it is a chat model too, with ``chat``/``stream_chat`` under the same retries, cache and counting,
and over a tool-calling model it is a ``FunctionCallingLLM`` (``chat_with_tools``, agents). A chat
of one user message is cached under the same key as ``complete`` of that text, so ``predict`` hits
the same cache entries whichever path LlamaIndex takes; chats with tools are never cached.
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import threading
import time
from typing import Any, Callable, Iterator, Literal, Sequence, TypeVar

from llama_index.core.base.llms.base import BaseLLM
from llama_index.core.base.llms.types import (
    ChatMessage,
    ChatResponse,
    ChatResponseAsyncGen,
    ChatResponseGen,
    CompletionResponse,
    CompletionResponseAsyncGen,
    CompletionResponseGen,
    LLMMetadata,
    MessageRole,
    TextBlock,
)
from llama_index.core.base.llms.generic_utils import (
    completion_response_to_chat_response,
    stream_completion_response_to_chat_response,
)
from llama_index.core.bridge.pydantic import Field, PrivateAttr
from llama_index.core.llms.callbacks import llm_chat_callback, llm_completion_callback
from llama_index.core.llms.function_calling import FunctionCallingLLM
from llama_index.core.llms.llm import ToolSelection

from .cache import ResponseCache, _cacheable, cache_only_if
from .errors import LLMRequestError, LLMUnavailableError
from .http_llm import iterate_in_threads
from .retries import is_transient_error, with_retries
from .transport import ResponseFormatError
from .usage import LLMUsage, count_tokens, server_usage

__all__ = ["RobustLLM", "cache_only_if", "is_transient_error"]

logger = logging.getLogger(__name__)
T = TypeVar("T")


class RobustLLM(FunctionCallingLLM):
    """Wrap ``llm`` with caching, retries, deadlines, usage counting and a configurable context window.

    ``cache`` may be a :class:`ResponseCache` or a path for one. Cache keys combine the endpoint
    ``url``, the model name, the prompt, ``cache_params`` (sampling settings of the inner LLM, which
    cannot be read from an arbitrary LLM) and the per-call keyword arguments; never the API key.
    Before the first answer is served from the cache, an inner LLM with ``check_access()`` (the
    HTTP client of :func:`~.factory.build_llm`) is asked once whether the server accepts its key, so a
    refused key cannot ride on answers cached under another one.

    ``on_error``, ``max_consecutive_failures`` and ``build_timeout`` are the policy of the jobs that
    use this LLM (read by :class:`~.failure_policy.FailurePolicy` and the A2RAG loop);
    ``structured_output`` is read by :func:`~.structured.predict_json`.
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

    structured_output: Literal["json_schema", "json_object"] | None = Field(
        default=None, description="Where our code wants JSON, ask the server for it with response_format "
        "(json_schema: the answer's schema; json_object: any JSON). Servers that refuse the field are asked without."
    )

    _cache: ResponseCache | None = PrivateAttr(default=None)
    _usage: LLMUsage = PrivateAttr(default_factory=LLMUsage)
    _access_checked: bool = PrivateAttr(default=False)
    _access_lock: threading.Lock = PrivateAttr(default_factory=threading.Lock)
    _skipped: int = PrivateAttr(default=0)
    _response_format_refused: bool = PrivateAttr(default=False)  # see structured.py

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
            # The wrapper has the inner LLM's shape (see the module docstring).
            is_chat_model=inner.is_chat_model,
            is_function_calling_model=inner.is_function_calling_model and isinstance(self.llm, FunctionCallingLLM),
            model_name=inner.model_name,
            system_role=inner.system_role,
        )

    # -- completion -------------------------------------------------------------------------------
    @llm_completion_callback()
    def complete(self, prompt: str, formatted: bool = False, **kwargs: Any) -> CompletionResponse:
        return self._complete(prompt, formatted, kwargs)

    @llm_completion_callback()
    async def acomplete(self, prompt: str, formatted: bool = False, **kwargs: Any) -> CompletionResponse:
        # The wrapped clients are synchronous; a worker thread keeps the loop free.
        return await asyncio.to_thread(self._complete, prompt, formatted, kwargs)

    @llm_completion_callback()
    def stream_complete(self, prompt: str, formatted: bool = False, **kwargs: Any) -> CompletionResponseGen:
        return self._stream_complete(prompt, formatted, kwargs)

    @llm_completion_callback()
    async def astream_complete(self, prompt: str, formatted: bool = False, **kwargs: Any) -> CompletionResponseAsyncGen:
        return iterate_in_threads(lambda: self._stream_complete(prompt, formatted, kwargs))

    def _complete(self, prompt: str, formatted: bool, kwargs: dict[str, Any]) -> CompletionResponse:
        key = self._cache_key(prompt, formatted, kwargs)
        text, response = self._answer(key, prompt, lambda: self.llm.complete(prompt, formatted=formatted, **kwargs),
                                      lambda r: r.text or "")
        if response is None:
            return CompletionResponse(text=text)
        return CompletionResponse(text=text, raw=response.raw, additional_kwargs=response.additional_kwargs)

    def _stream_complete(self, prompt: str, formatted: bool, kwargs: dict[str, Any]) -> CompletionResponseGen:
        return self._stream(self._cache_key(prompt, formatted, kwargs), prompt,
                            lambda: self.llm.stream_complete(prompt, formatted=formatted, **kwargs),
                            lambda text: CompletionResponse(text=text, delta=text), chat=False)

    # -- chat ---------------------------------------------------------------------------------------
    # Over a completion-only LLM, chat is derived from completion (as CustomLLM does).
    @llm_chat_callback()
    def chat(self, messages: Sequence[ChatMessage], **kwargs: Any) -> ChatResponse:
        return self._chat(messages, kwargs)

    @llm_chat_callback()
    async def achat(self, messages: Sequence[ChatMessage], **kwargs: Any) -> ChatResponse:
        return await asyncio.to_thread(self._chat, messages, kwargs)

    @llm_chat_callback()
    def stream_chat(self, messages: Sequence[ChatMessage], **kwargs: Any) -> ChatResponseGen:
        return self._stream_chat(messages, kwargs)

    @llm_chat_callback()
    async def astream_chat(self, messages: Sequence[ChatMessage], **kwargs: Any) -> ChatResponseAsyncGen:
        return iterate_in_threads(lambda: self._stream_chat(messages, kwargs))

    def _chat(self, messages: Sequence[ChatMessage], kwargs: dict[str, Any]) -> ChatResponse:
        if not self.llm.metadata.is_chat_model:
            return completion_response_to_chat_response(self._complete(self.messages_to_prompt(messages), True, kwargs))
        text, response = self._answer(self._chat_key(messages, kwargs), _transcript(messages),
                                      lambda: self.llm.chat(messages, **kwargs), lambda r: r.message.content or "")
        if response is None:
            return ChatResponse(message=ChatMessage(role=MessageRole.ASSISTANT, content=text))
        return response  # a chat model's answer as it is: tool calls and raw included

    def _stream_chat(self, messages: Sequence[ChatMessage], kwargs: dict[str, Any]) -> ChatResponseGen:
        if not self.llm.metadata.is_chat_model:
            prompt = self.messages_to_prompt(messages)
            return stream_completion_response_to_chat_response(self._stream_complete(prompt, True, kwargs))
        return self._stream(self._chat_key(messages, kwargs), _transcript(messages),
                            lambda: self.llm.stream_chat(messages, **kwargs),
                            lambda text: ChatResponse(message=ChatMessage(role=MessageRole.ASSISTANT, content=text),
                                                      delta=text), chat=True)

    def _chat_key(self, messages: Sequence[ChatMessage], kwargs: dict[str, Any]) -> str | None:
        """Plain-text chats only (no tools, images or tool turns). One user message has the key of
        ``complete(text, formatted=True)``, the call ``predict`` makes on a completion model."""
        if self._cache is None or kwargs.get("tools"):
            return None
        if any(m.additional_kwargs or not all(isinstance(b, TextBlock) for b in m.blocks) for m in messages):
            return None
        if len(messages) == 1 and messages[0].role == MessageRole.USER:
            return self._cache_key(messages[0].content or "", True, kwargs)
        turns = json.dumps([[m.role.value, m.content or ""] for m in messages], ensure_ascii=False)
        return self._cache_key(turns, True, {**kwargs, "chat": True})

    # -- tool calling (delegated to the inner LLM, which knows its wire format) --------------------
    def _tool_llm(self) -> FunctionCallingLLM:
        if not isinstance(self.llm, FunctionCallingLLM) or not self.llm.metadata.is_function_calling_model:
            raise ValueError(f"{self.llm.class_name()} ({self.llm.metadata.model_name}) does not call tools; "
                             "build_llm() gives an OpenAI-compatible client that does")
        return self.llm

    def _prepare_chat_with_tools(self, tools: Sequence[Any], user_msg: str | ChatMessage | None = None,
                                 chat_history: list[ChatMessage] | None = None, verbose: bool = False,
                                 allow_parallel_tool_calls: bool = False, tool_required: bool = False,
                                 **kwargs: Any) -> dict[str, Any]:
        return self._tool_llm()._prepare_chat_with_tools_compat(
            tools, user_msg=user_msg, chat_history=chat_history, verbose=verbose,
            allow_parallel_tool_calls=allow_parallel_tool_calls, tool_required=tool_required, **kwargs)

    def _validate_chat_with_tools_response(self, response: ChatResponse, tools: Sequence[Any],
                                           allow_parallel_tool_calls: bool = False, **kwargs: Any) -> ChatResponse:
        return self._tool_llm()._validate_chat_with_tools_response(
            response, tools, allow_parallel_tool_calls=allow_parallel_tool_calls, **kwargs)

    def get_tool_calls_from_response(self, response: ChatResponse, error_on_no_tool_call: bool = True,
                                     **kwargs: Any) -> list[ToolSelection]:
        return self._tool_llm().get_tool_calls_from_response(response, error_on_no_tool_call=error_on_no_tool_call,
                                                             **kwargs)

    # -- one answer, and one stream -----------------------------------------------------------------
    def _stream(self, key: str | None, prompt: str, open_stream: Callable[[], Any], replay: Callable[[str], Any],
                chat: bool) -> Iterator[Any]:
        """The cached answer as one chunk (``replay``), or the inner stream opened under retries and relayed."""
        cached = self._cached(key)
        if cached is not None:
            return _once(replay(cached))

        def start() -> tuple[Any, Any]:
            # Connection errors may only surface at the first chunk; both are inside the retry.
            stream = iter(open_stream())
            return stream, next(stream, None)

        (stream, first), seconds = self._with_retries(start)
        return self._relay(prompt, key, stream, first, seconds, chat=chat)

    def _answer(self, key: str | None, prompt: str, request: Callable[[], Any], text_of: Callable[[Any], str]
                ) -> tuple[str, Any]:
        """The cached answer (and None), or ``request()`` under retries (and its response), counted
        (tokens exact when the server reported them) and cached."""
        cached = self._cached(key)
        if cached is not None:
            return cached, None
        response, seconds = self._with_retries(request)
        text = self._clean(prompt, text_of(response))
        self._usage.record_call(prompt, text, seconds, reported=server_usage(getattr(response, "raw", None)))
        self._store(key, text)
        return text, response

    def _relay(self, prompt: str, key: str | None, stream: Any, first: Any, seconds: float, chat: bool) -> Iterator[Any]:
        """Yield the inner stream (completions with the prompt echo removed); count usage and cache when done.

        Retrying is impossible once text was yielded, so a transient error mid-stream becomes an
        :class:`LLMUnavailableError` right away. The server's usage, if any, arrives with the last event.
        """
        raw, emitted, finished, reported = "", "", False, None
        started = time.perf_counter()
        try:
            chunk = first
            while chunk is not None:
                reported = server_usage(chunk.raw) or reported
                if chat:
                    emitted = chunk.message.content or ""
                    if chunk.delta or chunk.message.additional_kwargs.get("tool_calls"):
                        yield chunk
                else:
                    raw = chunk.text if chunk.text else raw + (chunk.delta or "")
                    text = self._clean(prompt, raw)
                    delta = text[len(emitted) :] if text.startswith(emitted) else (chunk.delta or "")
                    emitted = text
                    if delta:
                        yield CompletionResponse(text=text, delta=delta, raw=chunk.raw)
                chunk = next(stream, None)
            finished = True
        except Exception as exc:
            self._usage.add(failures=1)
            if is_transient_error(exc):
                raise LLMUnavailableError(self.url, exc) from exc
            if isinstance(exc, ResponseFormatError):  # a broken event or the size cap, mid-stream
                raise LLMRequestError(self.url, exc, None) from exc
            raise
        finally:
            spent = seconds + time.perf_counter() - started
            if finished:
                self._usage.record_call(prompt, emitted, spent, reported=reported)
            else:  # failed or abandoned: a call, its tokens so far, neither exact nor a full estimate
                self._usage.add(calls=1, prompt_tokens=count_tokens(prompt), completion_tokens=count_tokens(emitted),
                                seconds=spent)
            if finished:
                self._store(key, emitted)

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

    def _store(self, key: str | None, text: str) -> None:
        """Cache an answer that passes the checks (non-empty, the caller's :func:`cache_only_if`)."""
        if self._cache is not None and key and _cacheable(text):
            self._cache.put(key, text)

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
        """``request`` under this LLM's retry policy (see :func:`~.retries.with_retries`)."""
        return with_retries(request, url=self.url, usage=self._usage, timeout=self.timeout,
                            max_retries=self.max_retries if max_retries is None else max_retries,
                            base_delay=self.base_delay, max_delay=self.max_delay)


def _transcript(messages: Sequence[ChatMessage]) -> str:
    """The text of a chat, for token estimates."""
    return "\n".join(m.content or "" for m in messages)


def _once(item: Any) -> Iterator[Any]:
    yield item  # a generator, not a list iterator: LlamaIndex's callbacks tell streams by that
