"""Export (GraphML, JSON, HTML, around an entity), `ask`, `query --llm --stream`, `--version`, the MCP tool."""

from __future__ import annotations

import io
import json

import anyio
import networkx as nx
import pytest

from llama_index_graphrag_suite.cli import llm as cli_llm
from llama_index_graphrag_suite.cli import main
from llama_index_graphrag_suite.export import as_networkx, write_export
from llama_index_graphrag_suite.llm import ScriptedLLM

from .conftest import QUESTION


def test_as_networkx_counts_every_table(index):
    g = as_networkx(index)
    kinds = nx.get_node_attributes(g, "kind")
    assert sum(k == "entity" for k in kinds.values()) == len(index.entities)
    assert sum(k == "chunk" for k in kinds.values()) == len(index.chunks)
    assert g.number_of_edges() == len(index.facts) + sum(len(c.entities) for c in index.chunks.values()) + len(index.synonyms)
    assert index.as_networkx().number_of_nodes() == g.number_of_nodes()


def test_graphml_reads_back_with_the_same_counts(index, tmp_path):
    g = write_export(index, tmp_path / "g.graphml", "graphml")
    back = nx.read_graphml(tmp_path / "g.graphml")
    assert back.number_of_nodes() == g.number_of_nodes() and back.number_of_edges() == g.number_of_edges()
    assert back.nodes["kovalen"]["label"] == "Kovalen"


def test_json_and_html_exports(index, tmp_path):
    write_export(index, tmp_path / "g.json", "json", around="Kovalen", hops=1)
    data = json.loads((tmp_path / "g.json").read_text())
    ids = {n["id"] for n in data["nodes"]}
    assert "kovalen" in ids and all(e["source"] in ids and e["target"] in ids for e in data["edges"])
    g = write_export(index, tmp_path / "g.html", "html", around="kovalen", hops=2)
    page = (tmp_path / "g.html").read_text()
    assert "graphology" in page and "Sigma" in page and "/static/" not in page and "<script src" not in page  # self-contained
    assert page.count("</script>") == 4 and f"{g.number_of_nodes():,} nodes" in page  # libraries, data, page script
    with pytest.raises(KeyError, match="no entity"):
        write_export(index, tmp_path / "x.json", "json", around="Nobody")


def test_export_cli(index_dir, tmp_path, capsys):
    out = tmp_path / "g.graphml"
    assert main(["export", str(index_dir), "--format", "graphml", "--out", str(out), "--embed", "hash", "--quiet"]) == 0
    assert "nodes" in capsys.readouterr().out and nx.read_graphml(out).number_of_nodes() > 40
    assert main(["export", str(index_dir), "--format", "html", "--around", "Nobody", "--out", str(tmp_path / "g.html"),
                 "--embed", "hash", "--quiet"]) == 2
    assert "no entity 'Nobody'" in capsys.readouterr().err


def test_version_flag(capsys):
    with pytest.raises(SystemExit) as exc:
        main(["--version"])
    assert exc.value.code == 0 and capsys.readouterr().out.startswith("graphrag-suite 0.")


def test_ask_reads_questions_until_eof(index_dir, monkeypatch, capsys):
    monkeypatch.setattr("sys.stdin", io.StringIO(f"{QUESTION}\n\n   \nWhich company founded the Greywater Prize?\n"))
    assert main(["ask", str(index_dir), "--embed", "hash", "--quiet", "--method", "bm25", "--top-k", "2"]) == 0
    out = capsys.readouterr().out
    assert out.count("[bm25]") == 2 and "doc-" in out


def test_query_with_llm_prints_the_answer_after_the_evidence(index_dir, monkeypatch, capsys):
    llm = ScriptedLLM(responder=lambda prompt: "Cassia Dunmore-Reyes.")
    monkeypatch.setattr(cli_llm, "build_llm_from_args", lambda args: llm if args.llm else None)
    argv = ["query", str(index_dir), QUESTION, "--embed", "hash", "--quiet", "--method", "agrag", "--llm", "http://x/v1"]
    assert main([*argv, "--stream"]) == 0
    out = capsys.readouterr().out
    assert out.index("evidence:") < out.index("answer: Cassia Dunmore-Reyes.")
    assert main([*argv, "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["answer"] == "Cassia Dunmore-Reyes."
    assert main(argv[:-2]) == 0 and "answer:" not in capsys.readouterr().out


def test_mcp_retrieve_tool(index):
    from llama_index_graphrag_suite.serve.mcp_server import build_mcp, retrieve_tool

    direct = retrieve_tool(index, QUESTION, "hybrid", 3)
    assert len(direct["chunks"]) == 3 and direct["chunks"][0]["rank"] == 1
    server = build_mcp(index)

    async def call():
        tools = await server.list_tools()
        result = await server.call_tool("retrieve", {"question": QUESTION, "method": "hybrid", "top_k": 3})
        return tools, result

    tools, result = anyio.run(call)
    assert [t.name for t in tools] == ["retrieve"]
    content = result.content if hasattr(result, "content") else result[0]
    text = content[0].text
    assert json.loads(text)["chunks"][0]["doc_id"] == direct["chunks"][0]["doc_id"]


def test_mcp_over_stdio(index_dir):
    """`graphrag-suite mcp` as a subprocess, called by the mcp package's own client over stdio."""
    import sys
    from pathlib import Path

    mcp = pytest.importorskip("mcp")
    if not hasattr(mcp, "Client"):
        pytest.skip("this mcp version has no high-level Client (mcp < 2); the in-process test covers the tool")
    exe = Path(sys.executable).parent / "graphrag-suite"
    if not exe.exists():
        pytest.skip(f"{exe} is not installed")

    async def call():
        params = mcp.StdioServerParameters(command=str(exe), args=["mcp", str(index_dir), "--embed", "hash", "--quiet"])
        async with mcp.Client(params, read_timeout_seconds=60) as client:
            ok = await client.call_tool("retrieve", {"question": QUESTION, "top_k": 2})
            bad = await client.call_tool("retrieve", {"question": QUESTION, "method": "nosuch"})
            return ok, bad

    ok, bad = anyio.run(call)
    assert not ok.is_error and len(json.loads(ok.content[0].text)["chunks"]) == 2
    assert bad.is_error and "unknown method 'nosuch'" in bad.content[0].text
