"""A deterministic LLM for tests and offline demos.

LlamaIndex's ``MockLLM`` echoes the prompt, so an extractor run against it parses the prompt's own
worked example and fills the graph with junk. :class:`ScriptedLLM` answers exactly what the test says,
records every prompt, and can simulate a failing server.
"""

from __future__ import annotations

import re
import threading
from typing import Any, Callable

from llama_index.core.base.llms.types import CompletionResponse, CompletionResponseGen, LLMMetadata
from llama_index.core.bridge.pydantic import Field, PrivateAttr
from llama_index.core.llms.callbacks import llm_completion_callback
from llama_index.core.llms.custom import CustomLLM

__all__ = ["ScriptedLLM"]


def _default_error(call_number: int) -> BaseException:
    # ConnectionError is what a dead server looks like, so RobustLLM treats it as transient.
    return ConnectionError(f"ScriptedLLM: simulated server failure on call {call_number}")


class ScriptedLLM(CustomLLM):
    """Answer prompts from a script.

    For each call, in this order: the first ``rules`` entry ``(regex, response)`` whose regex matches
    the prompt (``re.search``, DOTALL); else the next unused entry of ``responses`` (from the start
    again when ``cycle``); else ``responder(prompt)``; else ``RuntimeError``.

    Calls are numbered from 1. Call N raises ``error(N)`` instead of answering when N is in
    ``fail_on`` or ``fail_from`` is set and N >= ``fail_from``; a failed call consumes no response.
    Every prompt, failed calls included, is appended to ``prompts``.
    """

    responses: list[str] = Field(default_factory=list)
    rules: list[tuple[Any, str]] = Field(default_factory=list)
    responder: Callable[[str], str] | None = Field(default=None, exclude=True)
    cycle: bool = False
    fail_on: set[int] = Field(default_factory=set)
    fail_from: int | None = None
    error: Callable[[int], BaseException] = Field(default=_default_error, exclude=True)
    context_window: int = 8192
    num_output: int = 256
    model_name: str = "scripted"
    prompts: list[str] = Field(default_factory=list)

    _lock: threading.Lock = PrivateAttr(default_factory=threading.Lock)
    _next: int = PrivateAttr(default=0)

    @classmethod
    def class_name(cls) -> str:
        return "ScriptedLLM"

    @property
    def metadata(self) -> LLMMetadata:
        return LLMMetadata(context_window=self.context_window, num_output=self.num_output, model_name=self.model_name)

    @property
    def call_count(self) -> int:
        return len(self.prompts)

    def _answer(self, prompt: str) -> str:
        with self._lock:
            self.prompts.append(prompt)
            number = len(self.prompts)
            if number in self.fail_on or (self.fail_from is not None and number >= self.fail_from):
                raise self.error(number)
            for pattern, response in self.rules:
                if re.search(pattern, prompt, re.DOTALL):
                    return response
            if self.responses and (self.cycle or self._next < len(self.responses)):
                response = self.responses[self._next % len(self.responses)]
                self._next += 1
                return response
        if self.responder is not None:
            return self.responder(prompt)
        raise RuntimeError(f"ScriptedLLM has no response left for call {number}: {prompt[:200]!r}")

    @llm_completion_callback()
    def complete(self, prompt: str, formatted: bool = False, **kwargs: Any) -> CompletionResponse:
        return CompletionResponse(text=self._answer(prompt))

    @llm_completion_callback()
    async def acomplete(self, prompt: str, formatted: bool = False, **kwargs: Any) -> CompletionResponse:
        # Overridden so callbacks fire once (CustomLLM's version calls the decorated complete()).
        return CompletionResponse(text=self._answer(prompt))

    @llm_completion_callback()
    def stream_complete(self, prompt: str, formatted: bool = False, **kwargs: Any) -> CompletionResponseGen:
        text = self._answer(prompt)

        def gen() -> CompletionResponseGen:
            so_far = ""
            for piece in re.findall(r"\S+\s*|\s+", text):
                so_far += piece
                yield CompletionResponse(text=so_far, delta=piece)

        return gen()
