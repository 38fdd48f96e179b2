"""The LangGraph graphs' LLM seam accepts LlamaIndex LLMs, LangChain chat models and functions alike."""

import asyncio

import pytest
from langchain_core.language_models.fake_chat_models import FakeListChatModel

from langgraph_agents.llm_adapter import as_text_llm
from llama_index_graphrag_suite.llm import ScriptedLLM


@pytest.mark.parametrize("make", [
    lambda: ScriptedLLM(responses=["yes"]),
    lambda: FakeListChatModel(responses=["yes"]),
    lambda: (lambda prompt: "yes"),
])
def test_every_llm_kind_answers_text_and_is_counted(make):
    llm = as_text_llm(make())
    assert llm.complete("Is the sky blue?") == "yes"
    assert llm.cost.calls == 1 and llm.cost.prompt_tokens > 0 and llm.cost.completion_tokens == 1


def test_async_and_failures_are_counted():
    llm = as_text_llm(ScriptedLLM(responses=["a"], fail_on={2}))
    assert asyncio.run(llm.acomplete("q")) == "a"
    with pytest.raises(ConnectionError):
        llm.complete("q")
    assert llm.cost.calls == 2 and llm.cost.failures == 1


def test_missing_or_wrong_llm_is_a_clear_error():
    with pytest.raises(ValueError, match="needs an LLM"):
        as_text_llm(None)
    with pytest.raises(TypeError, match="LlamaIndex LLM"):
        as_text_llm(42)
