"""langgraph.json: every graph it names imports without an index, and builds and runs from the environment."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import pytest
from langgraph.pregel import Pregel

ROOT = Path(__file__).resolve().parent.parent


def load_target(target: str):
    """What ``langgraph dev`` does with ``./path/to/file.py:name``: import the file by its path, take ``name``."""
    path, _, name = target.partition(":")
    assert path.startswith("./") and name, target
    spec = importlib.util.spec_from_file_location(f"_deploy_{name}", ROOT / path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module, getattr(module, name)


@pytest.fixture(scope="module")
def persisted(tmp_path_factory):
    from llama_index_graphrag_suite import GraphRAGIndex, load_documents

    folder = tmp_path_factory.mktemp("index")
    GraphRAGIndex.from_documents(load_documents(ROOT / "examples" / "data" / "corpus.jsonl"),
                                 embed_model="hash").persist(folder)
    return folder


def test_langgraph_json_names_existing_graphs():
    spec = json.loads((ROOT / "langgraph.json").read_text())
    assert spec["dependencies"] == ["."] and set(spec["graphs"]) == {"a2rag", "archrag_filter"}
    for target in spec["graphs"].values():
        _, factory = load_target(target)  # importing loads no index: nothing is configured here
        assert callable(factory)


def test_factories_build_and_run_each_graph(persisted, monkeypatch):
    from llama_index_graphrag_suite.llm import ScriptedLLM

    monkeypatch.setenv("GRAPHRAG_INDEX_DIR", str(persisted))
    llm = ScriptedLLM(rules=[(r"yes or no", "yes"), (r'"score"', '{"report": "about the theatre", "score": 60}')],
                      responder=lambda prompt: "Cassia Dunmore-Reyes.")
    spec = json.loads((ROOT / "langgraph.json").read_text())
    for name, target in spec["graphs"].items():
        module, factory = load_target(target)
        monkeypatch.setattr(module, "llm_from_env", lambda: llm)
        graph = factory({"configurable": {"top_k": 3, "time_budget": 60}})
        assert isinstance(graph, Pregel) and graph.get_graph().nodes
        out = graph.invoke({"question": "Who designed the Orrin Theatre?"})
        assert out["answer"] == "Cassia Dunmore-Reyes.", name


def test_missing_environment_is_a_clear_error(monkeypatch):
    monkeypatch.delenv("GRAPHRAG_INDEX_DIR", raising=False)
    monkeypatch.delenv("GRAPHRAG_LLM_URL", raising=False)
    module, factory = load_target("./langgraph_agents/deploy.py:make_a2rag_graph")
    with pytest.raises(RuntimeError, match="GRAPHRAG_LLM_URL"):
        factory(None)
    monkeypatch.setattr(module, "llm_from_env", lambda: (lambda prompt: "x"))
    with pytest.raises(RuntimeError, match="GRAPHRAG_INDEX_DIR"):
        factory(None)
