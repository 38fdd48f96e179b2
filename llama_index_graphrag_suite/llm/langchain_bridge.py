"""Bridges between our LlamaIndex LLMs and LangChain, and a hard time bound for calls that cannot be cut.

* :class:`LangChainTextLLM` - a LangChain ``LLM`` over a LlamaIndex LLM (``build_llm``, ``RobustLLM``,
  ``ScriptedLLM``) or a function ``str -> str``. The LangGraph graphs call every LLM through it, so
  LangChain callbacks and LangSmith tracing see each call (``on_llm_start`` / ``on_llm_end``, nested
  under the graph node that made it).
* :class:`LlamaIndexChatModel` / :func:`as_llama_index_llm` - the other way: any LangChain chat model
  (or runnable taking a string) as a LlamaIndex LLM, for the retrievers and extractors
  (``A2RAGRetriever(index, llm=as_llama_index_llm(ChatOpenAI(...)))``).
* :func:`call_within_budget` - run a call so that it returns or raises :class:`LLMTimeoutError` by
  the end of the active :func:`~.deadline.llm_budget`. ``RobustLLM`` honours the budget itself; for
  other LLMs (or a slow retriever) the call runs in a daemon thread that is abandoned at the deadline
  (its late answer is discarded).

langchain-core is imported here only, so ``llm`` stays usable without it.
"""

from __future__ import annotations

import asyncio
from typing import Any

from langchain_core.callbacks import AsyncCallbackManagerForLLMRun, CallbackManagerForLLMRun
from langchain_core.language_models.llms import LLM as LangChainLLM
from llama_index.core.base.llms.types import CompletionResponse, CompletionResponseGen, LLMMetadata
from llama_index.core.bridge.pydantic import Field
from llama_index.core.llms.callbacks import llm_completion_callback
from llama_index.core.llms.custom import CustomLLM

from .deadline import call_within_budget  # noqa: F401 - its old home; it lives in deadline.py

__all__ = ["LangChainTextLLM", "LlamaIndexChatModel", "as_llama_index_llm", "call_within_budget", "message_text"]


def message_text(out: Any) -> str:
    """The text of whatever an LLM call returned: a string, a LangChain message, a LlamaIndex response."""
    if isinstance(out, str):
        return out
    content = getattr(out, "content", None)  # LangChain AIMessage
    if content is not None:
        if isinstance(content, list):  # content blocks
            return "".join(b.get("text", "") if isinstance(b, dict) else str(b) for b in content)
        return str(content)
    text = getattr(out, "text", None)  # LlamaIndex CompletionResponse
    if text is not None:
        return str(text)
    raise TypeError(f"cannot read text from an LLM result of type {type(out).__name__}")


class LangChainTextLLM(LangChainLLM):
    """A LangChain ``LLM`` over a LlamaIndex LLM or a function ``str -> str`` (see the module docstring)."""

    target: Any = Field(description="A LlamaIndex LLM (complete/acomplete) or a function str -> str.", exclude=True)
    cache: bool | None = False  # never LangChain's global cache: RobustLLM has its own, with its own rules

    @property
    def _llm_type(self) -> str:
        return "llama_index" if hasattr(self.target, "complete") else "function"

    @property
    def _identifying_params(self) -> dict[str, Any]:
        meta = getattr(self.target, "metadata", None)
        return {"model_name": getattr(meta, "model_name", None) or getattr(self.target, "__name__", "function")}

    def _call(self, prompt: str, stop: list[str] | None = None,
              run_manager: CallbackManagerForLLMRun | None = None, **kwargs: Any) -> str:
        if hasattr(self.target, "complete"):
            return message_text(self.target.complete(prompt))
        return message_text(self.target(prompt))

    async def _acall(self, prompt: str, stop: list[str] | None = None,
                     run_manager: AsyncCallbackManagerForLLMRun | None = None, **kwargs: Any) -> str:
        if hasattr(self.target, "acomplete"):
            return message_text(await self.target.acomplete(prompt))
        return message_text(await asyncio.to_thread(self.target, prompt))  # a plain function may block


class LlamaIndexChatModel(CustomLLM):
    """A LangChain chat model (or runnable taking a string) as a LlamaIndex completion LLM."""

    model: Any = Field(description="The LangChain chat model or runnable.", exclude=True)
    context_window: int = Field(default=8192, description="Tokens the model accepts (LangChain does not say).")
    num_output: int = Field(default=512, description="Tokens the model writes at most.")

    @classmethod
    def class_name(cls) -> str:
        return "LlamaIndexChatModel"

    @property
    def metadata(self) -> LLMMetadata:
        name = getattr(self.model, "model_name", None) or getattr(self.model, "model", None) or type(self.model).__name__
        return LLMMetadata(context_window=self.context_window, num_output=self.num_output, model_name=str(name))

    @llm_completion_callback()
    def complete(self, prompt: str, formatted: bool = False, **kwargs: Any) -> CompletionResponse:
        out = self.model.invoke(prompt)
        return CompletionResponse(text=message_text(out), raw=_usage_raw(out))

    @llm_completion_callback()
    async def acomplete(self, prompt: str, formatted: bool = False, **kwargs: Any) -> CompletionResponse:
        out = await self.model.ainvoke(prompt)
        return CompletionResponse(text=message_text(out), raw=_usage_raw(out))

    @llm_completion_callback()
    def stream_complete(self, prompt: str, formatted: bool = False, **kwargs: Any) -> CompletionResponseGen:
        """The model's own stream (every runnable has one; a model that cannot stream yields once)."""

        def gen() -> CompletionResponseGen:
            text = ""
            for chunk in self.model.stream(prompt):
                delta = message_text(chunk)
                text += delta
                yield CompletionResponse(text=text, delta=delta, raw=_usage_raw(chunk))

        return gen()


def _usage_raw(out: Any) -> dict[str, Any] | None:
    """A LangChain message's token counts (``usage_metadata``) in OpenAI's ``usage`` form, which
    :class:`~.robust.RobustLLM` records as exact (see :func:`~.usage.server_usage`)."""
    usage = getattr(out, "usage_metadata", None)
    if not usage or "input_tokens" not in usage:
        return None
    return {"usage": {"prompt_tokens": usage["input_tokens"], "completion_tokens": usage.get("output_tokens", 0)}}


def as_llama_index_llm(llm: Any) -> Any:
    """A LlamaIndex LLM as is; a LangChain chat model / runnable wrapped in :class:`LlamaIndexChatModel`."""
    if hasattr(llm, "complete") and hasattr(llm, "metadata"):
        return llm
    if hasattr(llm, "invoke"):
        return LlamaIndexChatModel(model=llm)
    raise TypeError(f"expected a LlamaIndex LLM or a LangChain chat model, got {type(llm).__name__}")
