"""A method shipped by another distribution, pip-installed into a temporary folder, shows up everywhere a method
is named: `graphrag-suite methods`, `query`, `bench`, the server's /methods and /retrieve, and the MCP tool.

The plugin is a real wheel (built here with zipfile) that pip installs with ``--target``; its
``graphrag_suite.methods`` entry point is the only link to this project. The registry reads entry
points on its first lookup, so each test starts from a registry that has not looked yet.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import zipfile
from pathlib import Path

import anyio
import pytest

from llama_index_graphrag_suite import registry
from llama_index_graphrag_suite.cli import main

DATA = Path(__file__).resolve().parents[2] / "examples" / "data"
QUESTION = "Who designed the theatre where the opera 'The Salt Crown' premiered?"
DIST, VERSION = "tiny_graphrag_plugin", "0.1.0"

PLUGIN_SOURCE = '''"""A third-party graph-RAG method: chunks ranked by the question words their document title holds."""

import re

from llama_index_graphrag_suite.methods.base import GraphIndexRetriever, MethodConfig, chunk_node, param


class TitleWordsConfig(MethodConfig):
    """Settings of the title-words method."""

    min_overlap: int = param(1, "question words a title must hold for its chunks to be returned", "plugin test", ge=0)
    PRESETS = {"loose": {"min_overlap": 0}}


def words(text):
    return set(re.findall(r"[a-z0-9]+", text.lower()))


class TitleWordsRetriever(GraphIndexRetriever):
    """Chunks whose document title shares the most words with the question (a pip-installed plugin)."""

    method = "titlewords"
    config_class = TitleWordsConfig

    def _retrieve(self, query_bundle):
        asked = words(query_bundle.query_str)
        scored = [(len(asked & words(self.index.chunks[c].title or "")), -rank, c)
                  for rank, c in enumerate(self.index.chunk_order)]
        kept = sorted((s for s in scored if s[0] >= self.config.min_overlap), reverse=True)[: self.top_k]
        return [chunk_node(self.index, c, float(overlap), self.method) for overlap, _, c in kept]
'''


def _wheel(folder: Path) -> Path:
    """A minimal valid wheel: the module, METADATA, WHEEL, entry_points.txt and RECORD."""
    info = f"{DIST}-{VERSION}.dist-info"
    files = {
        f"{DIST}.py": PLUGIN_SOURCE,
        f"{info}/METADATA": f"Metadata-Version: 2.1\nName: tiny-graphrag-plugin\nVersion: {VERSION}\n",
        f"{info}/WHEEL": "Wheel-Version: 1.0\nGenerator: test_plugins\nRoot-Is-Purelib: true\nTag: py3-none-any\n",
        f"{info}/entry_points.txt": f"[graphrag_suite.methods]\ntitlewords = {DIST}:TitleWordsRetriever\n",
    }
    files[f"{info}/RECORD"] = "".join(f"{name},,\n" for name in files) + f"{info}/RECORD,,\n"
    path = folder / f"{DIST}-{VERSION}-py3-none-any.whl"
    with zipfile.ZipFile(path, "w") as zf:
        for name, text in files.items():
            zf.writestr(name, text)
    return path


@pytest.fixture(scope="module")
def site(tmp_path_factory) -> Path:
    """The plugin pip-installed into a folder of its own (not the venv)."""
    tmp = tmp_path_factory.mktemp("plugin")
    target = tmp / "site"
    subprocess.run([sys.executable, "-m", "pip", "install", "--no-deps", "--no-index", "--quiet", "--target",
                    str(target), str(_wheel(tmp))], check=True, capture_output=True, timeout=120)
    assert (target / f"{DIST}-{VERSION}.dist-info" / "entry_points.txt").exists()
    return target


@pytest.fixture
def installed(site, monkeypatch):
    """The plugin on sys.path and a registry that has not read the entry points yet (restored afterwards)."""
    monkeypatch.syspath_prepend(str(site))
    monkeypatch.setattr(registry, "_methods", {n: i for n, i in registry._methods.items() if i.source == "built-in"})
    monkeypatch.setattr(registry, "_discovered", False)
    yield site
    sys.modules.pop(DIST, None)


@pytest.fixture
def index_dir(demo_index) -> Path:
    return demo_index


def test_not_found_without_the_plugin(monkeypatch):
    monkeypatch.setattr(registry, "_discovered", False)
    assert "titlewords" not in registry.method_names()


def test_methods_lists_the_installed_plugin(installed, index_dir, capsys):
    assert main(["methods", str(index_dir), "--settings"]) == 0
    out = capsys.readouterr().out
    line = next(x for x in out.splitlines() if x.strip().startswith("titlewords"))
    assert "document title shares the most words" in line and "[plugin: tiny-graphrag-plugin 0.1.0]" in line
    assert "variants: loose" in out and "min_overlap = 1" in out


def test_query_runs_the_plugin_with_variant_and_settings(installed, index_dir, capsys):
    argv = ["query", str(index_dir), QUESTION, "--embed", "hash", "--quiet", "--json", "--top-k", "3"]
    assert main([*argv, "--method", "titlewords"]) == 0
    result = json.loads(capsys.readouterr().out)
    assert result["method"] == "titlewords" and result["nodes"]
    assert {n["metadata"]["method"] for n in result["nodes"]} == {"titlewords"}
    assert main([*argv, "--method", "titlewords:loose"]) == 0
    assert len(json.loads(capsys.readouterr().out)["nodes"]) == 3  # min_overlap 0 keeps every chunk
    assert main([*argv, "--method", "titlewords", "--set", "min_overlap=99"]) == 0
    assert json.loads(capsys.readouterr().out)["nodes"] == []
    assert main([*argv, "--method", "titlewords", "--set", "min_overlap=-1"]) == 2
    assert "min_overlap" in capsys.readouterr().err


def test_bench_runs_the_plugin(installed, index_dir, tmp_path, capsys):
    out = tmp_path / "report.json"
    assert main(["bench", "--dataset", str(DATA), "--methods", "titlewords,bm25", "--limit", "2", "--index-dir",
                 str(index_dir), "--embed", "hash", "--quiet", "--out", str(out)]) == 0
    report = json.loads(out.read_text())
    assert set(report["methods"]) == {"titlewords", "bm25"} and report["index"]["reused"]


def test_server_and_mcp_offer_the_plugin(installed, index_dir):
    pytest.importorskip("fastapi")
    from fastapi.testclient import TestClient

    from llama_index_graphrag_suite.index import GraphRAGIndex
    from llama_index_graphrag_suite.serve import create_app
    from llama_index_graphrag_suite.serve.mcp_server import build_mcp, retrieve_tool

    index = GraphRAGIndex.load(index_dir, embed_model="hash")
    client = TestClient(create_app(index), base_url="http://localhost")
    listed = {m["name"]: m for m in client.get("/methods").json()}
    assert listed["titlewords"]["variants"] == ["loose"] and "min_overlap" in listed["titlewords"]["settings"]
    body = client.post("/retrieve", json={"question": QUESTION, "method": "titlewords:loose", "top_k": 2}).json()
    assert [n["metadata"]["method"] for n in body["nodes"] if n["kind"] == "chunk"] == ["titlewords"] * 2

    assert retrieve_tool(index, QUESTION, "titlewords", 2)["chunks"]
    server = build_mcp(index)

    async def call():
        tools = await server.list_tools()
        result = await server.call_tool("retrieve", {"question": QUESTION, "method": "titlewords:loose", "top_k": 2})
        return tools, result

    tools, result = anyio.run(call)
    assert "titlewords" in tools[0].description  # the tool tells the client which methods it may name
    content = result.content if hasattr(result, "content") else result[0]
    assert len(json.loads(content[0].text)["chunks"]) == 2


def test_a_fresh_process_finds_the_plugin_through_the_console_script(site, index_dir):
    script = Path(sys.executable).with_name("graphrag-suite")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(site), os.environ.get("PYTHONPATH", "")]).rstrip(os.pathsep),
           "HF_HUB_OFFLINE": "1"}
    proc = subprocess.run([str(script), "query", str(index_dir), QUESTION, "--method", "titlewords", "--embed", "hash",
                           "--quiet", "--json"], capture_output=True, text=True, env=env, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["method"] == "titlewords"


def test_a_broken_entry_point_is_named_not_fatal(installed, index_dir, tmp_path, monkeypatch, capsys):
    bad = tmp_path / "bad"
    info = bad / "broken_plugin-1.0.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: broken-plugin\nVersion: 1.0\n")
    (info / "entry_points.txt").write_text("[graphrag_suite.methods]\nbroken = no_such_module:Nothing\n")
    monkeypatch.syspath_prepend(str(bad))
    methods = registry.available_methods()
    assert "titlewords" in methods and methods["broken"].startswith("(cannot be imported")
    with pytest.raises(registry.UnknownMethodError, match="no_such_module"):
        registry.resolve_method("broken")
    assert main(["methods", str(index_dir), "--settings"]) == 0  # the others are still listed, with settings
    out = capsys.readouterr().out
    assert "broken" in out and "cannot be imported" in out and "min_overlap = 1" in out
