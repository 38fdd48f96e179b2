"""One way for our LangGraph graphs to ask an LLM for text, whichever framework the LLM comes from.

The graphs in this package take ``llm=`` as any of:

* a LlamaIndex ``LLM`` (what :func:`llama_index_graphrag_suite.llm.build_llm` returns, or ``ScriptedLLM``);
* a LangChain chat model or any LangChain ``Runnable`` that accepts a string (``invoke`` returns a
  message or a string);
* a plain function ``str -> str``.

:class:`TextLLM` hides the difference and counts calls and tokens for the graph's cost record.

Every call goes through a LangChain runnable (a LlamaIndex LLM or a function is wrapped in
:class:`~llama_index_graphrag_suite.llm.langchain_bridge.LangChainTextLLM`), so LangChain callbacks and
LangSmith tracing passed in the graph's ``config`` see each call, nested under its node. Inside an
``llm_budget`` a call returns or raises ``LLMTimeoutError`` by the budget's end (``RobustLLM`` cuts its
own HTTP requests; a call still running at the deadline is abandoned). Tokens are counted with LlamaIndex's tokenizer on our side of the wire (see ``llm.usage.count_tokens``), so the
numbers are comparable across LLM kinds.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable

from llama_index_graphrag_suite.llm.langchain_bridge import LangChainTextLLM, call_within_budget
from llama_index_graphrag_suite.llm.langchain_bridge import message_text as _message_text
from llama_index_graphrag_suite.llm.usage import LLMUsage

__all__ = ["TextLLM", "as_text_llm"]


@dataclass
class TextLLM:
    """``complete(prompt) -> str`` over a LlamaIndex LLM, a LangChain model/runnable or a function."""

    llm: Any
    cost: LLMUsage = field(default_factory=LLMUsage)  # the project's one usage counter (thread-safe)
    _runnable: Any = field(default=None, repr=False, compare=False)

    def _kind(self) -> str:
        if hasattr(self.llm, "complete") and hasattr(self.llm, "metadata"):
            return "llama_index"
        if hasattr(self.llm, "invoke"):
            return "langchain"
        if callable(self.llm):
            return "function"
        raise TypeError(f"llm must be a LlamaIndex LLM, a LangChain runnable or a function, got {type(self.llm).__name__}")

    def runnable(self) -> Any:
        """The LangChain runnable the calls go through (built once; the LLM itself when it is one)."""
        if self._kind() == "langchain":
            return self.llm
        if self._runnable is None:
            self._runnable = LangChainTextLLM(target=self.llm)
        return self._runnable

    def complete(self, prompt: str) -> str:
        runnable = self.runnable()
        call = lambda: _message_text(runnable.invoke(prompt))  # noqa: E731 - config comes from the context
        try:
            text = call_within_budget(call)  # RobustLLM cuts its own requests; this bounds any other LLM too
        except Exception:
            self.cost.record_call(prompt, None)
            raise
        self.cost.record_call(prompt, text)
        return text

    async def acomplete(self, prompt: str) -> str:
        try:
            text = _message_text(await self.runnable().ainvoke(prompt))
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
