"""langgraph.json's factories build their graphs while the LLM server is down; the first LLM call contacts it."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest
from langgraph.pregel import Pregel

ROOT = Path(__file__).resolve().parents[2]
QUESTION = "Who designed the Orrin Theatre?"


@pytest.fixture
def deploy(demo_index, monkeypatch):
    spec = importlib.util.spec_from_file_location("_deploy_offline", ROOT / "langgraph_agents" / "deploy.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    monkeypatch.setenv("GRAPHRAG_INDEX_DIR", str(demo_index))
    monkeypatch.setenv("GRAPHRAG_LLM_URL", "http://127.0.0.1:9/v1")  # nothing listens there
    monkeypatch.delenv("GRAPHRAG_LLM_MODEL", raising=False)
    return module


@pytest.mark.parametrize("factory", ["make_a2rag_graph", "make_archrag_filter_graph"])
def test_graphs_build_without_a_live_llm_server(deploy, factory, monkeypatch):
    from llama_index_graphrag_suite.llm import factory as llm_factory

    def no_network(*args, **kwargs):
        raise AssertionError("building a graph contacted the LLM server")

    monkeypatch.setattr(llm_factory, "_first_model_id", no_network)
    graph = getattr(deploy, factory)({"configurable": {"top_k": 3}})
    assert isinstance(graph, Pregel) and graph.get_graph().nodes
    assert "llm" not in deploy._BUILT


def test_the_first_call_builds_the_server_llm_once(deploy, monkeypatch):
    from llama_index_graphrag_suite.llm import ScriptedLLM

    built = []

    def build_llm(url, **kwargs):
        built.append((url, kwargs.get("model")))
        return ScriptedLLM(rules=[(r"yes or no", "yes")], responder=lambda prompt: "Cassia Dunmore-Reyes.")

    import llama_index_graphrag_suite.llm as llm_package

    monkeypatch.setattr(llm_package, "build_llm", build_llm)
    monkeypatch.setenv("GRAPHRAG_LLM_MODEL", "served-model")
    graph = deploy.make_a2rag_graph({"configurable": {"top_k": 3, "time_budget": 60}})
    assert built == []
    out = graph.invoke({"question": QUESTION})
    assert out["answer"] == "Cassia Dunmore-Reyes." and built == [("http://127.0.0.1:9/v1", "served-model")]
    graph.invoke({"question": QUESTION})
    assert len(built) == 1
