"""The fault audit's findings at the surfaces (CLI, HTTP, MCP, export, corpus reading): each is a one-line error
or the right behaviour now, nothing lost."""

from __future__ import annotations

import json
import logging
import os
import select
import subprocess
import sys

import pytest

from llama_index_graphrag_suite import CorpusError, GraphRAGIndex, IndexConfig, load_documents
from llama_index_graphrag_suite.cli import main
from llama_index_graphrag_suite.embeddings import HashEmbedding
from llama_index_graphrag_suite.request import Request, RequestError
from llama_index_graphrag_suite.serve import create_app

from .conftest import QUESTION, api_client

INVISIBLE = ["\u2800\u2800", "\u0301\u0308", "\ufe0f\ufe0e", "\u3164", "\u115f\u1160 \uffa0", "\u200b\u2800\ufe0f"]


def run(capsys, *argv):
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


# ---- export: never into an index, never through a non-regular file ---------------------------------------------

def test_export_refuses_any_path_inside_an_index_folder(fresh_index_dir, capsys):
    before = (fresh_index_dir / "CURRENT").read_bytes()
    version = next(p for p in fresh_index_dir.iterdir() if p.name.startswith("v-"))
    for out in (fresh_index_dir / "CURRENT", fresh_index_dir / "graph.graphml", version / "x.json", fresh_index_dir):
        code, _, err = run(capsys, "export", str(fresh_index_dir), "--out", str(out), "--embed", "hash", "--quiet")
        assert code == 2 and "inside the index folder" in err or "is a folder" in err, (out, err)
        assert err.count("\n") == 1 and "Traceback" not in err
    assert (fresh_index_dir / "CURRENT").read_bytes() == before
    assert not (fresh_index_dir / "graph.graphml").exists()
    GraphRAGIndex.load(fresh_index_dir, embed_model="hash")  # still loads


def test_export_through_a_relative_path_into_the_index_is_refused_too(fresh_index_dir, capsys, monkeypatch):
    monkeypatch.chdir(fresh_index_dir / "segments" if (fresh_index_dir / "segments").is_dir() else fresh_index_dir)
    code, _, err = run(capsys, "export", str(fresh_index_dir), "--out", "../CURRENT", "--embed", "hash", "--quiet")
    assert code == 2 and "inside the index folder" in err


def test_export_refuses_existing_non_regular_files_and_replaces_a_regular_one(index_dir, tmp_path, capsys):
    target = tmp_path / "kept.txt"
    target.write_text("keep me")
    link = tmp_path / "link.graphml"
    link.symlink_to(target)
    fifo = tmp_path / "pipe.graphml"
    os.mkfifo(fifo)
    for out, what in ((link, "is a symlink"), (fifo, "not a regular file"), (tmp_path, "is a folder")):
        code, _, err = run(capsys, "export", str(index_dir), "--out", str(out), "--embed", "hash", "--quiet")
        assert code == 2 and what in err, err
    assert target.read_text() == "keep me" and link.is_symlink() and fifo.is_fifo()
    regular = tmp_path / "g.json"
    regular.write_text("old")
    assert run(capsys, "export", str(index_dir), "--out", str(regular), "--format", "json", "--embed", "hash")[0] == 0
    assert json.loads(regular.read_text())["directed"] is True
    assert [p.name for p in tmp_path.iterdir() if p.name.endswith(".tmp")] == []


def test_export_limits_and_hops_are_checked(index_dir, tmp_path, capsys):
    out = str(tmp_path / "g.graphml")
    for argv, expected in ((["--limit", "-5"], "--limit must be at least 1"),
                           (["--hops", "1000000"], "--hops must be between 0 and 10"),
                           (["--hops", "-1"], "--hops must be between 0 and 10")):
        code, _, err = run(capsys, "export", str(index_dir), "--out", out, "--embed", "hash", *argv)
        assert code == 2 and expected in err, err


# ---- questions ---------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("question", INVISIBLE)
def test_invisible_questions_are_refused_everywhere(index, question):
    from llama_index_graphrag_suite.serve.mcp_server import retrieve_tool

    with pytest.raises(RequestError, match="no letters or digits"):
        Request.make(question, "hybrid")
    with pytest.raises(RequestError, match="no letters or digits"):
        retrieve_tool(index, question)
    r = api_client(create_app(index)).post("/retrieve", json={"question": question})
    assert r.status_code == 422 and "no letters or digits" in r.json()["detail"]


def test_the_question_cap_counts_the_normalised_question(index):
    client = api_client(create_app(index))
    r = client.post("/retrieve", json={"question": "\ufdfa" * 2000})  # 2,000 characters, 36,000 once NFKC
    assert r.status_code == 422 and "36,000 characters once normalised" in r.json()["detail"]
    r = client.post("/retrieve", json={"question": "a" * 4001})
    assert r.status_code == 422 and "at most 4,000" in r.json()["detail"]
    assert client.post("/retrieve", json={"question": QUESTION, "graph": False}).status_code == 200


def test_a_fractional_top_k_is_refused_in_one_line(index, capsys):
    with pytest.raises(RequestError, match="top_k must be a whole number, got 5.5"):
        Request.make(QUESTION, "hybrid", 5.5)
    r = api_client(create_app(index)).post("/retrieve", json={"question": QUESTION, "top_k": 5.5})
    assert r.status_code == 422 and "top_k" in r.json()["detail"]


def test_an_empty_index_is_a_clear_error_not_a_traceback(tmp_path, capsys):
    from llama_index_graphrag_suite.serve.mcp_server import retrieve_tool

    empty = GraphRAGIndex(embed_model=HashEmbedding(), config=IndexConfig(entities="statistical"))
    with pytest.raises(RequestError, match="holds no documents"):
        retrieve_tool(empty, QUESTION)
    r = api_client(create_app(empty)).post("/retrieve", json={"question": QUESTION})
    assert r.status_code == 400 and "holds no documents" in r.json()["detail"]
    (tmp_path / "d.txt").write_text("Ada Lorne was a painter born in Marlow. " * 5)
    assert main(["index", str(tmp_path / "d.txt"), "--out", str(tmp_path / "idx"), "--embed", "hash", "--entities",
                 "statistical", "--quiet", "--prepare", ""]) == 0
    index = GraphRAGIndex.load(tmp_path / "idx", embed_model="hash")
    index.delete("d.txt")
    index.persist(tmp_path / "idx")
    capsys.readouterr()
    code, _, err = run(capsys, "query", str(tmp_path / "idx"), QUESTION, "--embed", "hash", "--quiet")
    assert code == 2 and "holds no documents" in err and "Traceback" not in err


def test_a_mcp_request_with_a_lone_surrogate_gets_an_error_reply(index_dir):
    proc = subprocess.Popen([sys.executable, "-m", "llama_index_graphrag_suite.cli", "mcp", str(index_dir), "--embed",
                             "hash", "--quiet"], stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE)

    def send(line: str) -> None:
        proc.stdin.write(line.encode() + b"\n")
        proc.stdin.flush()

    def reply(timeout: float = 60) -> dict:
        ready, _, _ = select.select([proc.stdout], [], [], timeout)
        assert ready, "no reply"
        return json.loads(proc.stdout.readline())

    try:
        send(json.dumps({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "test", "version": "1"}}}))
        assert reply()["id"] == 1
        send(json.dumps({"jsonrpc": "2.0", "method": "notifications/initialized"}))
        send('{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"retrieve",'
             '"arguments":{"question":"who \\ud800 designed it"}}}')
        answer = reply(20)
        assert answer["id"] == 2 and "lone surrogate U+D800" in answer["error"]["message"]
        send(json.dumps({"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": {
            "name": "retrieve", "arguments": {"question": QUESTION}}}))
        assert reply()["id"] == 3  # the server is still serving
    finally:
        proc.kill()
        proc.wait(10)


# ---- the CLI's one-line errors -----------------------------------------------------------------------------------

def test_a_password_in_the_llm_url_is_not_printed(index_dir, capsys):
    code, _, err = run(capsys, "query", str(index_dir), QUESTION, "--embed", "hash", "--quiet",
                       "--llm", "http://bob:s3cret-pw@127.0.0.1:9/v1", "--no-cache")
    assert code == 2 and "s3cret-pw" not in err and "bob" not in err and "***@127.0.0.1" in err


def test_hash_dimensions_out_of_range_are_refused_before_any_work(index_dir, tmp_path, capsys):
    code, _, err = run(capsys, "query", str(index_dir), QUESTION, "--embed", "hash:4")
    assert code == 2 and "hash:DIM takes a dimension between 8 and 16,384" in err and "ValidationError" not in err
    copy = tmp_path / "idx"
    import shutil

    shutil.copytree(index_dir, copy)
    for manifest in copy.glob("v-*/manifest.json"):
        data = json.loads(manifest.read_text())
        data["embed_model"] = "hash:400000000"
        manifest.write_text(json.dumps(data))
    code, _, err = run(capsys, "query", str(copy), QUESTION)
    assert code == 2 and "manifest asks for the embedding model hash:400000000" in err


def test_a_lock_that_is_a_folder_or_a_symlink_loop_is_one_line(index_dir, tmp_path, capsys):
    import shutil

    (tmp_path / "d.txt").write_text("Ada Lorne was a painter born in Marlow. " * 5)
    for name, make in (("dir", lambda p: p.mkdir()), ("loop", lambda p: p.symlink_to(p.name))):
        copy = tmp_path / name
        shutil.copytree(index_dir, copy)
        (copy / ".lock").unlink(missing_ok=True)
        make(copy / ".lock")
        code, _, err = run(capsys, "index", str(tmp_path / "d.txt"), "--out", str(copy), "--update", "--embed", "hash",
                           "--quiet")
        assert code == 2 and err.startswith("error: ") and err.count("\n") == 1 and ".lock" in err, err
        assert "Errno" not in err and "(IsADirectoryError)" not in err and "(OSError)" not in err


# ---- corpus reading ----------------------------------------------------------------------------------------------

@pytest.mark.parametrize("line, expected", [
    ('{"id": null, "text": "Ada."}', '"id" must be a non-empty string or a whole number, got null'),
    ('{"id": ["a"], "text": "Ada."}', '"id" must be a non-empty string or a whole number, got list'),
    ('{"id": {"a": 1}, "text": "Ada."}', '"id" must be a non-empty string or a whole number, got dict'),
    ('{"id": true, "text": "Ada."}', '"id" must be a non-empty string or a whole number, got bool'),
    ('{"id": "a", "title": ["T"], "text": "Ada."}', '"title" must be a string, got list'),
    ('{"id": "a", "title": {"t": 1}, "text": "Ada."}', '"title" must be a string, got dict'),
])
def test_jsonl_ids_and_titles_of_the_wrong_type_are_refused(tmp_path, line, expected):
    src = tmp_path / "c.jsonl"
    src.write_text('{"id": "ok", "title": 1984, "text": "Fine."}\n' + line + "\n")
    with pytest.raises(CorpusError) as caught:
        load_documents(src)
    assert "c.jsonl:2: " in str(caught.value) and expected in str(caught.value)


def test_numbers_as_jsonl_ids_and_titles_are_kept_as_written(tmp_path):
    src = tmp_path / "c.jsonl"
    src.write_text('{"id": 7, "title": 1984, "text": "Orwell."}\n{"id": "b", "title": null, "text": "Two."}\n')
    docs = load_documents(src)
    assert [(d.id_, d.metadata["title"]) for d in docs] == [("7", "1984"), ("b", "")]


def test_an_empty_corpus_path_is_refused_not_the_working_directory(tmp_path, monkeypatch):
    (tmp_path / "a.txt").write_text("Not meant to be indexed.")
    monkeypatch.chdir(tmp_path)
    for src in ("", "   ", None):
        with pytest.raises(CorpusError, match="no corpus given"):
            load_documents(src)


def test_a_string_where_documents_are_expected_is_a_clear_type_error():
    with pytest.raises(TypeError, match="expected LlamaIndex Documents, got str 'A' .a string passed as the documents"):
        GraphRAGIndex.from_documents("Ada Lorne was a painter.", embed_model=HashEmbedding())


def test_a_large_corpus_warns_with_an_estimate_under_quiet(tmp_path, caplog):
    caplog.set_level(logging.WARNING)
    (tmp_path / "big.txt").write_text("Ada Lorne was a painter born in Marlow on the Esk River. " * 36_000)  # 2 MB
    load_documents(tmp_path / "big.txt")
    assert "MB of text in 1 document(s): building the index may take about 2 minute(s)" in caplog.text


def test_null_list_or_object_ids_and_titles_are_refused_over_http(fresh_index):
    client = api_client(create_app(fresh_index))
    for doc in ({"doc_id": None, "text": "Ada."}, {"doc_id": ["a"], "text": "Ada."}, {"doc_id": {"a": 1}, "text": "A."},
                {"doc_id": 7, "text": "Ada."}, {"doc_id": "a", "title": None, "text": "Ada."},
                {"doc_id": "a", "title": ["T"], "text": "Ada."}):
        r = client.post("/documents", json={"documents": [doc]})
        assert r.status_code == 422, (doc, r.text)
    assert "a" not in {c.doc_id for c in fresh_index.chunks.values()}


def test_an_llm_answering_empty_strings_makes_the_build_say_so(tmp_path, monkeypatch, capsys, caplog):
    from llama_index_graphrag_suite.cli import llm as cli_llm
    from llama_index_graphrag_suite.llm import ScriptedLLM

    monkeypatch.setattr(cli_llm, "build_llm_from_args", lambda args: ScriptedLLM(responder=lambda prompt: "")
                        if args.llm else None)
    (tmp_path / "d.txt").write_text("Ada Lorne was a painter born in Marlow. Ada Lorne studied at Kell Academy. " * 3)
    code, out, err = run(capsys, "index", str(tmp_path / "d.txt"), "--out", str(tmp_path / "idx"), "--embed", "hash",
                         "--entities", "statistical", "--quiet", "--prepare", "", "--llm", "http://x/v1")
    assert code == 0 and "llm_calls=" in out
    said = err + caplog.text  # the index's own warning (index/build.py), shown by the CLI's logging
    assert "the LLM answered 1 call(s)" in said and "no relation could be read from any answer" in said


def test_an_llm_answering_empty_strings_is_a_warning_from_python_too(caplog):
    from llama_index_graphrag_suite import GraphRAGIndex, IndexConfig
    from llama_index_graphrag_suite.documents import make_document
    from llama_index_graphrag_suite.embeddings import HashEmbedding
    from llama_index_graphrag_suite.llm import ScriptedLLM

    text = "Ada Lorne was a painter born in Marlow. Ada Lorne studied at Kell Academy. " * 3
    index = GraphRAGIndex.from_documents([make_document("d", text, "Ada")], embed_model=HashEmbedding(dim=64),
                                         llm=ScriptedLLM(responder=lambda prompt: ""),
                                         config=IndexConfig(entities="statistical", entity_threshold=0.1))
    assert index.stats()["chunks"] == 1 and "no relation could be read from any answer" in caplog.text


def test_write_export_from_python_refuses_the_folder_the_index_was_loaded_from(fresh_index, fresh_index_dir):
    from llama_index_graphrag_suite.export import ExportTargetError, write_export

    with pytest.raises(ExportTargetError, match="inside the index folder"):
        write_export(fresh_index, fresh_index_dir / "graph.graphml", "graphml")
    with pytest.raises(ValueError, match="hops must be a whole number, 0 or more"):
        write_export(fresh_index, fresh_index_dir.parent / "g.graphml", "graphml", around="x", hops=-1)
    assert not (fresh_index_dir / "graph.graphml").exists()
