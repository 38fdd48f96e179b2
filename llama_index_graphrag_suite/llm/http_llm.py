"""A LlamaIndex LLM for self-hosted servers whose every request has a hard deadline and a size cap.

It speaks the two protocols :func:`~.factory.build_llm` accepts: OpenAI-compatible
``POST <base>/chat/completions`` (vLLM, llama.cpp, LM Studio, Ollama) and vLLM's legacy
``POST /generate``. Unlike ``VllmServer`` (``requests`` with a per-read timeout only), a request here
cannot outlive its deadline (see :mod:`.transport`), a 200 answer that is HTML or not the protocol's
JSON is a :class:`~.transport.ResponseFormatError` instead of an empty answer, and the API key is
only ever sent in the Authorization header (it is excluded from ``repr`` and serialisation).
"""

from __future__ import annotations

from typing import Any

from llama_index.core.base.llms.types import CompletionResponse, CompletionResponseGen, LLMMetadata
from llama_index.core.bridge.pydantic import Field
from llama_index.core.llms.callbacks import llm_completion_callback
from llama_index.core.llms.custom import CustomLLM

from .deadline import attempt_deadline
from .transport import DEFAULT_MAX_BYTES, ResponseFormatError, request_json, snippet_of

__all__ = ["HTTPCompletionLLM"]


def _openai_text(data: Any) -> str:
    choices = data.get("choices") if isinstance(data, dict) else None
    if not isinstance(choices, list) or not choices or not isinstance(choices[0], dict):
        raise ResponseFormatError(f"the answer has no 'choices': {snippet_of(repr(data))!r}")
    choice = choices[0]
    message = choice.get("message") or choice.get("delta")
    content = message.get("content") if isinstance(message, dict) else choice.get("text")
    if content is None and isinstance(message, dict) and "content" in message:
        content = ""  # an explicit null content (e.g. a refusal) is an empty answer
    if not isinstance(content, str):
        raise ResponseFormatError(f"the answer's first choice has no text: {snippet_of(repr(choice))!r}")
    return content


def _generate_text(data: Any) -> str:
    texts = data.get("text") if isinstance(data, dict) else None
    if isinstance(texts, str):
        return texts
    if not isinstance(texts, list) or not texts or not isinstance(texts[0], str):
        raise ResponseFormatError(f"the answer has no 'text' list: {snippet_of(repr(data))!r}")
    return texts[0]


class HTTPCompletionLLM(CustomLLM):
    """Completion client for an OpenAI-compatible (``kind="openai"``) or /generate (``"generate"``) server.

    ``timeout`` is the total time one request may take (connect, send, wait, read); a deadline
    published by :class:`~.robust.RobustLLM` or an :func:`~.deadline.llm_budget` overrides it when
    earlier. ``max_response_bytes`` bounds the answer's size.
    """

    model: str = Field(description="Model name sent with each request.")
    api_url: str = Field(description="Endpoint requests are posted to.")
    kind: str = Field(default="openai", description="'openai' (chat/completions) or 'generate' (vLLM legacy).")
    temperature: float = 0.0
    max_tokens: int = Field(default=1024, ge=1)
    timeout: float = Field(default=60.0, gt=0, description="Total seconds per request.")
    max_response_bytes: int = Field(default=DEFAULT_MAX_BYTES, ge=1024)
    context_window: int = 8192
    api_headers: dict[str, str] = Field(default_factory=dict, repr=False, exclude=True)

    @classmethod
    def class_name(cls) -> str:
        return "HTTPCompletionLLM"

    @property
    def metadata(self) -> LLMMetadata:
        return LLMMetadata(context_window=self.context_window, num_output=self.max_tokens, model_name=self.model)

    @property
    def models_url(self) -> str | None:
        """``GET`` here lists the models (and checks the API key); None for /generate servers."""
        return self.api_url.rsplit("/chat/completions", 1)[0] + "/models" if self.kind == "openai" else None

    def _payload(self, prompt: str, kwargs: dict[str, Any]) -> dict[str, Any]:
        temperature = kwargs.get("temperature", self.temperature)
        max_tokens = kwargs.get("max_tokens", kwargs.get("max_new_tokens", self.max_tokens))
        if self.kind == "openai":
            payload = {"model": self.model, "messages": [{"role": "user", "content": prompt}],
                       "temperature": temperature, "max_tokens": max_tokens, "stream": False}
        else:
            payload = {"prompt": prompt, "temperature": temperature, "max_tokens": max_tokens, "stream": False}
        if kwargs.get("stop"):
            payload["stop"] = kwargs["stop"]
        return payload

    def check_access(self) -> None:
        """``GET /models`` with the configured key: raises HTTPStatusError 401/403 if it is refused."""
        if self.models_url is not None:
            request_json("GET", self.models_url, headers=self.api_headers, deadline=attempt_deadline(self.timeout),
                         max_bytes=self.max_response_bytes)

    @llm_completion_callback()
    def complete(self, prompt: str, formatted: bool = False, **kwargs: Any) -> CompletionResponse:
        data = request_json("POST", self.api_url, self._payload(prompt, kwargs), headers=self.api_headers,
                            deadline=attempt_deadline(self.timeout), max_bytes=self.max_response_bytes)
        text = _openai_text(data) if self.kind == "openai" else _generate_text(data)
        return CompletionResponse(text=text, raw=data if isinstance(data, dict) else None)

    @llm_completion_callback()
    def stream_complete(self, prompt: str, formatted: bool = False, **kwargs: Any) -> CompletionResponseGen:
        """The whole answer as one chunk: it is fetched under the same deadline and size cap as
        :meth:`complete` (a token stream could not be cut off as cleanly)."""
        response = self.complete(prompt, formatted=formatted, **kwargs)

        def gen() -> CompletionResponseGen:
            yield CompletionResponse(text=response.text, delta=response.text)

        return gen()
