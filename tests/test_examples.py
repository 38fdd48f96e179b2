"""Examples are run by the tests so they never rot."""

import importlib.util
from pathlib import Path

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"


def load(name):
    spec = importlib.util.spec_from_file_location(name, EXAMPLES / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_quickstart_finds_the_theatre(capsys):
    top = load("quickstart").main(embed="hash")
    assert top[1] == top[2] == "doc-08"  # BM25 and hybrid put the Orrin Theatre first
    assert "index:" in capsys.readouterr().out


def _answering_llm():
    from llama_index_graphrag_suite.llm import ScriptedLLM

    return ScriptedLLM(responder=lambda prompt: "Cassia Dunmore-Reyes designed it.")


def test_llamaindex_dropin_answers_and_streams(capsys):
    answer, streamed = load("llamaindex_dropin").main(llm=_answering_llm(), embed="hash")
    assert answer == streamed == "Cassia Dunmore-Reyes designed it."
    assert "evidence" in capsys.readouterr().out  # the AGRAG reasoning graph is among the sources


def test_llamaindex_dropin_without_a_server_says_what_to_set(monkeypatch):
    import pytest

    monkeypatch.delenv("GRAPHRAG_LLM_URL", raising=False)
    with pytest.raises(SystemExit, match="GRAPHRAG_LLM_URL"):
        load("llamaindex_dropin").main(embed="hash")


def test_property_graph_example_serves_every_method_and_combines():
    top, combined = load("property_graph_extractors").main(embed="hash")
    assert set(top) == {"agrag", "hipporag", "hybrid"} and all(top.values())
    assert any(n.node.metadata.get("kind") == "chunk" for n in combined)
    assert any("->" in n.node.get_content() for n in combined)  # VectorContextRetriever's triplets


def test_langgraph_agent_example_calls_the_tool():
    module = load("langgraph_agent_tool")
    out = module.main(module.scripted_chat_model(module.QUESTION), embed="hash")
    from langchain_core.messages import ToolMessage

    tool_messages = [m for m in out["messages"] if isinstance(m, ToolMessage)]
    assert len(tool_messages) == 1 and "Graph evidence (agrag)" in tool_messages[0].content


def test_router_example_routes_both_ways():
    routed = load("langgraph_router").main(embed="hash")
    assert {m for m, _ in routed} == {"a2rag", "hybrid"}
    assert routed[-1][0] == "hybrid" and routed[-1][1] == 1  # the single look-up finds its page


def test_a2rag_loop_example_answers_with_a_scripted_server():
    from llama_index_graphrag_suite.llm import ScriptedLLM

    llm = ScriptedLLM(rules=[(r"yes or no", "yes\nThe evidence supports it.")],
                      responder=lambda prompt: "The Esk River.")
    final = load("a2rag_loop").main(llm=llm, embed="hash")
    assert final["status"] == "answered" and final["answer"] == "The Esk River."
    assert final["documents"] and final["cost"]["llm_calls"] >= 4  # answer + the three checks


def test_a2rag_loop_example_without_a_server_says_what_to_set(monkeypatch):
    import pytest

    monkeypatch.delenv("GRAPHRAG_LLM_URL", raising=False)
    with pytest.raises(SystemExit, match="GRAPHRAG_LLM_URL"):
        load("a2rag_loop").main(embed="hash")
