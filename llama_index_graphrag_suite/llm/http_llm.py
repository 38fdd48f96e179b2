"""A LlamaIndex LLM for self-hosted servers whose every request has a hard deadline and a size cap.

It speaks the two protocols :func:`~.factory.build_llm` accepts: OpenAI-compatible
``POST <base>/chat/completions`` (vLLM, llama.cpp, LM Studio, Ollama) and vLLM's legacy
``POST /generate``. Unlike ``VllmServer`` (``requests`` with a per-read timeout only), a request here
cannot outlive its deadline (see :mod:`.transport`), a 200 answer that is HTML or not the protocol's
JSON is a :class:`~.transport.ResponseFormatError` instead of an empty answer, and the API key is
only ever sent in the Authorization header (it is excluded from ``repr`` and serialisation).

Against an OpenAI-compatible server it is a chat model with tool calling (LlamaIndex's
``FunctionCallingLLM``): ``chat`` keeps the roles, ``stream_chat``/``stream_complete`` really stream
(``stream: true``, server-sent events, each ``data:`` event one delta), ``chat_with_tools`` sends
``tools`` in OpenAI form and ``get_tool_calls_from_response`` reads the answer's ``tool_calls``.
Call keywords ``response_format``, ``tools``, ``tool_choice``, ``stop``, ``seed`` and ``top_p`` go
into the request as they are.

Why not ``llama-index-llms-openai-like`` (it installs here: it adds llama-index-llms-openai, openai
and jiter)? It is built on the ``openai`` client, whose ``timeout`` is httpx's per-operation timeout:
each socket read may take that long, so a server that trickles its answer (or a stream that sends one
token every few seconds) keeps a call alive indefinitely, and the client retries on its own below
:class:`~.robust.RobustLLM`'s retries. The hard total deadline of one call, which the index builds and
the A2RAG loop rely on (tests/faults/test_llm_server.py), cannot be kept there, so this client stays.
"""

from __future__ import annotations

import asyncio
from typing import Any, Callable, Iterator, Sequence

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
)
from llama_index.core.base.llms.generic_utils import (
    completion_response_to_chat_response,
    stream_completion_response_to_chat_response,
)
from llama_index.core.base.llms.generic_utils import messages_to_prompt as generic_messages_to_prompt
from llama_index.core.bridge.pydantic import Field, PrivateAttr
from llama_index.core.llms.callbacks import llm_chat_callback, llm_completion_callback
from llama_index.core.llms.function_calling import FunctionCallingLLM
from llama_index.core.llms.llm import ToolSelection

from .deadline import attempt_deadline
from .openai_wire import StreamAccumulator, answer_message, message_dicts, tool_selections
from .transport import DEFAULT_MAX_BYTES, HTTPStatusError, ResponseFormatError, request_json, snippet_of, stream_sse

__all__ = ["HTTPCompletionLLM", "iterate_in_threads"]

# Call keywords sent to an OpenAI-compatible server unchanged; LlamaIndex passes others we must not send.
_PASSTHROUGH = ("stop", "tools", "tool_choice", "response_format", "seed", "top_p", "presence_penalty",
                "frequency_penalty")


def _generate_text(data: Any) -> str:
    texts = data.get("text") if isinstance(data, dict) else None
    if isinstance(texts, str):
        return texts
    if not isinstance(texts, list) or not texts or not isinstance(texts[0], str):
        raise ResponseFormatError(f"the answer has no 'text' list: {snippet_of(repr(data))!r}")
    return texts[0]


class HTTPCompletionLLM(FunctionCallingLLM):
    """Client for an OpenAI-compatible (``kind="openai"``) or /generate (``"generate"``) server.

    ``timeout`` is the total time one request may take (connect, send, wait, read every streamed
    event); a deadline published by :class:`~.robust.RobustLLM` or an :func:`~.deadline.llm_budget`
    overrides it when earlier. ``max_response_bytes`` bounds the answer's size, streamed or not.
    """

    model: str = Field(description="Model name sent with each request.")
    api_url: str = Field(description="Endpoint requests are posted to.")
    kind: str = Field(default="openai", description="'openai' (chat/completions) or 'generate' (vLLM legacy).")
    temperature: float = 0.0
    max_tokens: int = Field(default=1024, ge=1)
    timeout: float = Field(default=60.0, gt=0, description="Total seconds per request.")
    max_response_bytes: int = Field(default=DEFAULT_MAX_BYTES, ge=1024)
    context_window: int = 8192
    function_calling: bool = Field(
        default=True, description="Report tool calling (OpenAI servers only). vLLM needs --enable-auto-tool-choice "
        "and a --tool-call-parser for it; set False for a server without them, so agents say so up front."
    )
    stream_usage: bool = Field(
        default=True, description="Ask streams for a final usage event (stream_options.include_usage); "
        "dropped for the rest of the session if the server refuses the field with HTTP 400."
    )
    api_headers: dict[str, str] = Field(default_factory=dict, repr=False, exclude=True)

    _stream_options_refused: bool = PrivateAttr(default=False)

    @classmethod
    def class_name(cls) -> str:
        return "HTTPCompletionLLM"

    @property
    def metadata(self) -> LLMMetadata:
        chat = self.kind == "openai"
        return LLMMetadata(context_window=self.context_window, num_output=self.max_tokens, model_name=self.model,
                           is_chat_model=chat, is_function_calling_model=chat and self.function_calling)

    @property
    def models_url(self) -> str | None:
        """``GET`` here lists the models (and checks the API key); None for /generate servers."""
        return self.api_url.rsplit("/chat/completions", 1)[0] + "/models" if self.kind == "openai" else None

    def check_access(self) -> None:
        """``GET /models`` with the configured key: raises HTTPStatusError 401/403 if it is refused."""
        if self.models_url is not None:
            request_json("GET", self.models_url, headers=self.api_headers, deadline=attempt_deadline(self.timeout),
                         max_bytes=self.max_response_bytes)

    # -- requests ---------------------------------------------------------------------------------
    def _payload(self, prompt: Sequence[ChatMessage] | str, kwargs: dict[str, Any], stream: bool) -> dict:
        """The request body: a chat of ``prompt`` (a text is one user message), or /generate's prompt."""
        temperature = kwargs.get("temperature", self.temperature)
        max_tokens = kwargs.get("max_tokens", kwargs.get("max_new_tokens", self.max_tokens))
        if self.kind != "openai":
            payload = {"prompt": prompt, "temperature": temperature, "max_tokens": max_tokens, "stream": False}
            if kwargs.get("stop"):
                payload["stop"] = kwargs["stop"]
            return payload
        messages = [ChatMessage(role=MessageRole.USER, content=prompt)] if isinstance(prompt, str) else prompt
        payload = {"model": self.model, "messages": message_dicts(messages), "temperature": temperature,
                   "max_tokens": max_tokens, "stream": stream}
        if stream and self.stream_usage and not self._stream_options_refused:
            payload["stream_options"] = {"include_usage": True}
        payload.update({key: kwargs[key] for key in _PASSTHROUGH if kwargs.get(key) is not None})
        if not payload.get("tools"):
            payload.pop("tools", None)
            payload.pop("tool_choice", None)  # a tool_choice without tools is a 400 on vLLM
        return payload

    def _post(self, payload: dict) -> Any:
        return request_json("POST", self.api_url, payload, headers=self.api_headers,
                            deadline=attempt_deadline(self.timeout), max_bytes=self.max_response_bytes)

    def _events(self, payload: dict) -> Iterator[Any]:
        """The streamed events of one request; one deadline for all of them, fixed at the first ``next``."""
        deadline = attempt_deadline(self.timeout)

        def open_stream(body: dict) -> tuple[Iterator[Any], Any]:
            events = stream_sse(self.api_url, body, headers=self.api_headers, deadline=deadline,
                                max_bytes=self.max_response_bytes)
            return events, next(events, None)

        try:
            events, first = open_stream(payload)
        except HTTPStatusError as exc:
            if exc.status_code != 400 or "stream_options" not in payload:
                raise
            # Some OpenAI-compatible servers reject the (newer) stream_options field: stream without usage.
            self._stream_options_refused = True
            events, first = open_stream({k: v for k, v in payload.items() if k != "stream_options"})
        if first is None:
            return
        yield first
        yield from events

    def _chat(self, messages: Sequence[ChatMessage], kwargs: dict[str, Any]) -> ChatResponse:
        if self.kind != "openai":
            self._no_tools(kwargs)
            return completion_response_to_chat_response(self._complete(generic_messages_to_prompt(messages), kwargs))
        data = self._post(self._payload(messages, kwargs, stream=False))
        return ChatResponse(message=answer_message(data), raw=data)

    def _complete(self, prompt: str, kwargs: dict[str, Any]) -> CompletionResponse:
        data = self._post(self._payload(prompt, kwargs, stream=False))
        if self.kind == "openai":
            message = answer_message(data)
            return CompletionResponse(text=message.content or "", raw=data,
                                      additional_kwargs=dict(message.additional_kwargs))
        return CompletionResponse(text=_generate_text(data), raw=data if isinstance(data, dict) else None)

    def _stream_chat(self, messages: Sequence[ChatMessage], kwargs: dict[str, Any]) -> ChatResponseGen:
        if self.kind != "openai":
            self._no_tools(kwargs)
            yield from stream_completion_response_to_chat_response(
                self._stream_complete(generic_messages_to_prompt(messages), kwargs))
            return
        answer = StreamAccumulator()
        for event in self._events(self._payload(messages, kwargs, stream=True)):
            delta = answer.add(event)
            yield ChatResponse(message=answer.message(), delta=delta, raw=event)

    def _stream_complete(self, prompt: str, kwargs: dict[str, Any]) -> CompletionResponseGen:
        if self.kind != "openai":
            # vLLM's /generate streams cumulative NUL-separated JSON; one fetch under the same deadline
            # and cap gives the same text, so the whole answer is one chunk there.
            response = self._complete(prompt, kwargs)
            yield CompletionResponse(text=response.text, delta=response.text, raw=response.raw)
            return
        for chunk in self._stream_chat([ChatMessage(role=MessageRole.USER, content=prompt)], kwargs):
            yield CompletionResponse(text=chunk.message.content or "", delta=chunk.delta, raw=chunk.raw,
                                     additional_kwargs=dict(chunk.message.additional_kwargs))

    @staticmethod
    def _no_tools(kwargs: dict[str, Any]) -> None:
        if kwargs.get("tools"):
            raise ValueError("tool calling needs an OpenAI-compatible server (/v1/chat/completions), not /generate")

    # -- the LlamaIndex LLM surface ---------------------------------------------------------------
    @llm_chat_callback()
    def chat(self, messages: Sequence[ChatMessage], **kwargs: Any) -> ChatResponse:
        return self._chat(messages, kwargs)

    @llm_completion_callback()
    def complete(self, prompt: str, formatted: bool = False, **kwargs: Any) -> CompletionResponse:
        return self._complete(prompt, kwargs)

    @llm_chat_callback()
    def stream_chat(self, messages: Sequence[ChatMessage], **kwargs: Any) -> ChatResponseGen:
        return self._stream_chat(messages, kwargs)

    @llm_completion_callback()
    def stream_complete(self, prompt: str, formatted: bool = False, **kwargs: Any) -> CompletionResponseGen:
        return self._stream_complete(prompt, kwargs)

    # The transport is synchronous; worker threads keep the event loop free (contexts, and with them
    # the deadlines of :mod:`.deadline`, are copied into them).
    @llm_chat_callback()
    async def achat(self, messages: Sequence[ChatMessage], **kwargs: Any) -> ChatResponse:
        return await asyncio.to_thread(self._chat, messages, kwargs)

    @llm_completion_callback()
    async def acomplete(self, prompt: str, formatted: bool = False, **kwargs: Any) -> CompletionResponse:
        return await asyncio.to_thread(self._complete, prompt, kwargs)

    @llm_chat_callback()
    async def astream_chat(self, messages: Sequence[ChatMessage], **kwargs: Any) -> ChatResponseAsyncGen:
        return iterate_in_threads(lambda: self._stream_chat(messages, kwargs))

    @llm_completion_callback()
    async def astream_complete(self, prompt: str, formatted: bool = False, **kwargs: Any) -> CompletionResponseAsyncGen:
        return iterate_in_threads(lambda: self._stream_complete(prompt, kwargs))

    # -- tool calling -----------------------------------------------------------------------------
    def _prepare_chat_with_tools(
        self,
        tools: Sequence[Any],
        user_msg: str | ChatMessage | None = None,
        chat_history: list[ChatMessage] | None = None,
        verbose: bool = False,
        allow_parallel_tool_calls: bool = False,
        tool_required: bool = False,
        **kwargs: Any,
    ) -> dict[str, Any]:
        messages = list(chat_history or [])
        if user_msg is not None:
            messages.append(ChatMessage(role=MessageRole.USER, content=user_msg) if isinstance(user_msg, str)
                            else user_msg)
        specs = [tool.metadata.to_openai_tool(skip_length_check=True) for tool in tools]
        return {"messages": messages, "tools": specs or None,
                "tool_choice": ("required" if tool_required else "auto") if specs else None, **kwargs}

    def _validate_chat_with_tools_response(self, response: ChatResponse, tools: Sequence[Any],
                                           allow_parallel_tool_calls: bool = False, **kwargs: Any) -> ChatResponse:
        """Keep only the first tool call unless parallel calls were allowed (LlamaIndex's OpenAI does so too)."""
        calls = response.message.additional_kwargs.get("tool_calls")
        if not allow_parallel_tool_calls and calls and len(calls) > 1:
            response.message.additional_kwargs["tool_calls"] = calls[:1]
        return response

    def get_tool_calls_from_response(self, response: ChatResponse, error_on_no_tool_call: bool = True,
                                     **kwargs: Any) -> list[ToolSelection]:
        selections = tool_selections(response.message)
        if not selections and error_on_no_tool_call:
            raise ValueError(f"Expected at least one tool call, but got 0 tool calls "
                             f"(answer: {snippet_of(response.message.content or '')!r})")
        return selections


_END = object()


def iterate_in_threads(make: Callable[[], Iterator[Any]]):
    """An async generator over a blocking one: each ``next`` runs in a worker thread."""

    async def gen():
        iterator = await asyncio.to_thread(make)
        try:
            while (item := await asyncio.to_thread(next, iterator, _END)) is not _END:
                yield item
        finally:
            close = getattr(iterator, "close", None)
            if close is not None:
                close()  # an abandoned stream closes its connection

    return gen()
