"""One way for our LangGraph graphs to ask an LLM for text, whichever framework the LLM comes from.

The graphs in this package take ``llm=`` as any of:

* a LlamaIndex ``LLM`` (what :func:`llama_index_graphrag_suite.llm.build_llm` returns, or ``ScriptedLLM``);
* a LangChain chat model or any LangChain ``Runnable`` that accepts a string (``invoke`` returns a
  message or a string);
* a plain function ``str -> str``.

:class:`TextLLM` hides the difference and counts calls and tokens for the graph's cost record. Tokens
are counted with LlamaIndex's tokenizer on our side of the wire (see ``llm.usage.count_tokens``), so the
numbers are comparable across LLM kinds.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from typing import Any, Callable

from llama_index_graphrag_suite.llm.usage import LLMUsage

__all__ = ["TextLLM", "as_text_llm"]


def _message_text(out: Any) -> str:
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


@dataclass
class TextLLM:
    """``complete(prompt) -> str`` over a LlamaIndex LLM, a LangChain model/runnable or a function."""

    llm: Any
    cost: LLMUsage = field(default_factory=LLMUsage)  # the project's one usage counter (thread-safe)

    def _kind(self) -> str:
        if hasattr(self.llm, "complete") and hasattr(self.llm, "metadata"):
            return "llama_index"
        if hasattr(self.llm, "invoke"):
            return "langchain"
        if callable(self.llm):
            return "function"
        raise TypeError(f"llm must be a LlamaIndex LLM, a LangChain runnable or a function, got {type(self.llm).__name__}")

    def complete(self, prompt: str) -> str:
        kind = self._kind()
        try:
            if kind == "llama_index":
                text = _message_text(self.llm.complete(prompt))
            elif kind == "langchain":
                text = _message_text(self.llm.invoke(prompt))
            else:
                text = _message_text(self.llm(prompt))
        except Exception:
            self.cost.record_call(prompt, None)
            raise
        self.cost.record_call(prompt, text)
        return text

    async def acomplete(self, prompt: str) -> str:
        kind = self._kind()
        try:
            if kind == "llama_index":
                text = _message_text(await self.llm.acomplete(prompt))
            elif kind == "langchain":
                text = _message_text(await self.llm.ainvoke(prompt))
            else:  # a plain function may block: keep it off the event loop
                text = _message_text(await asyncio.to_thread(self.llm, prompt))
        except Exception:
            self.cost.record_call(prompt, None)
            raise
        self.cost.record_call(prompt, text)
        return text


def as_text_llm(llm: Any | Callable[[str], str]) -> TextLLM:
    """Wrap ``llm`` (see the module docstring); a :class:`TextLLM` is returned as is."""
    if isinstance(llm, TextLLM):
        return llm
    if llm is None:
        raise ValueError("this graph needs an LLM: pass llm= (a LlamaIndex LLM, a LangChain chat model or a function)")
    wrapped = TextLLM(llm)
    wrapped._kind()  # fail now, not at the first call
    return wrapped
