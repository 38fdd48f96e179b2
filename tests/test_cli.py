"""The `graphrag-suite` CLI on small inputs, with the hashing embedding (fast, offline)."""

import json

import pytest

from llama_index_graphrag_suite.cli import main


@pytest.fixture
def corpus_dir(tmp_path):
    d = tmp_path / "docs"
    (d / "sub").mkdir(parents=True)
    (d / "marlow.txt").write_text("Marlow is a town on the Esk River. The Esk River reaches the sea at Marlow.")
    (d / "sub" / "ada.md").write_text("# Ada Lorne\n\nAda Lorne was a painter born in Marlow. She painted The Grey Harbour.")
    (d / "latin1.txt").write_bytes("Caf\xe9 Lorne is a caf\xe9 in Marlow.".encode("latin-1"))  # not UTF-8
    (d / "empty.txt").write_text("   \n")
    (d / "notes.csv").write_text("ignored,file")
    return d


def run(capsys, *argv):
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_index_query_methods_on_a_folder(corpus_dir, tmp_path, capsys):
    out_dir = tmp_path / "idx"
    code, out, err = run(capsys, "index", str(corpus_dir), "--out", str(out_dir), "--embed", "hash", "--quiet",
                         "--entity-threshold", "0.3")
    assert code == 0, err
    assert "indexed 3 documents" in out  # the empty file is skipped, the latin-1 file kept (bytes replaced)
    code, out, err = run(capsys, "query", str(out_dir), "Where was Ada Lorne born?", "--method", "hybrid",
                         "--json", "--embed", "hash", "--top-k", "2")
    assert code == 0, err
    result = json.loads(out)
    assert result["method"] == "hybrid" and result["question"] == "Where was Ada Lorne born?"
    assert len(result["nodes"]) == 2
    first = result["nodes"][0]
    assert set(first) == {"id", "kind", "score", "text", "doc_id", "metadata"}
    assert first["kind"] == "chunk" and first["doc_id"] == "sub/ada.md" and first["id"] == "sub/ada.md#0"
    assert result["evidence"] == {} and result["timing_ms"]["retrieve"] >= 0
    code, out, _ = run(capsys, "methods", str(out_dir))
    assert code == 0 and "hybrid" in out and "bm25" in out and "dense" in out


def test_index_a_jsonl_corpus(tmp_path, capsys):
    src = tmp_path / "c.jsonl"
    src.write_text('{"id": "a", "title": "A", "text": "Alpha beta."}\n\n{"id": "b", "title": "B", "text": "Gamma delta."}\n')
    code, out, err = run(capsys, "index", str(src), "--out", str(tmp_path / "i"), "--embed", "hash", "--quiet")
    assert code == 0, err
    assert "indexed 2 documents" in out


@pytest.mark.parametrize(
    "argv_factory, message",
    [
        (lambda t: ["index", str(t / "missing"), "--out", str(t / "o")], "does not exist"),
        (lambda t: ["index", str(t / "emptydir"), "--out", str(t / "o")], "no non-empty documents"),
        (lambda t: ["index", str(t / "bad.jsonl"), "--out", str(t / "o")], "bad.jsonl:2: not valid JSON"),
        (lambda t: ["query", str(t / "noindex"), "q"], "no index"),
        (lambda t: ["query", str(t / "idx"), "q", "--method", "nope"], "unknown method 'nope'"),
        (lambda t: ["query", str(t / "corrupt"), "q"], "corrupt index"),
        (lambda t: ["index", str(t / "ok.jsonl"), "--out", str(t / "o"), "--chunk-size", "8", "--chunk-overlap", "9"],
         "bad index settings"),
    ],
)
def test_bad_input_exits_nonzero_with_one_line(tmp_path, capsys, argv_factory, message):
    (tmp_path / "emptydir").mkdir()
    (tmp_path / "emptydir" / "blank.txt").write_text("")
    (tmp_path / "bad.jsonl").write_text('{"id": "a", "text": "fine"}\n{"id": "b", "text": \n')
    (tmp_path / "ok.jsonl").write_text('{"id": "a", "text": "fine"}\n')
    (tmp_path / "noindex").mkdir()
    src = tmp_path / "ok.jsonl"
    assert main(["index", str(src), "--out", str(tmp_path / "idx"), "--embed", "hash", "--quiet"]) == 0
    assert main(["index", str(src), "--out", str(tmp_path / "corrupt"), "--embed", "hash", "--quiet"]) == 0
    segment = next((tmp_path / "corrupt" / "segments").glob("*.arrow"))
    segment.write_text("[{")
    capsys.readouterr()
    code, out, err = run(capsys, *argv_factory(tmp_path), "--embed", "hash", "--quiet")
    assert code == 2
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error") and message in lines[0], err
    assert "Traceback" not in err


def test_demo_runs_on_the_sample_corpus(capsys):
    code, out, err = run(capsys, "demo", "--embed", "hash", "--quiet", "--limit", "2")
    assert code == 0, err
    assert "Q q01" in out and "[hybrid]" in out and "recall of gold passages" in out and "@5" in out


def test_a_jsonl_doc_id_field_does_not_replace_the_passage_id(tmp_path):
    from llama_index_graphrag_suite.documents import load_documents

    src = tmp_path / "c.jsonl"
    src.write_text('{"id": "p1", "title": "T", "text": "One.", "doc_id": "Book"}\n'
                   '{"id": "p2", "title": "T", "text": "Two.", "doc_id": "Book"}\n')
    docs = load_documents(src)
    assert [d.metadata["doc_id"] for d in docs] == ["p1", "p2"]
    assert docs[0].metadata["source_doc_id"] == "Book"


def test_index_in_batches_and_resume(tmp_path, capsys):
    src = tmp_path / "c.jsonl"
    rows = [{"id": f"d{i}", "title": f"Place {i}", "text": f"Marlow {i} lies on the Esk River near Ada Lorne's town {i}."}
            for i in range(5)]
    src.write_text("".join(json.dumps(r) + "\n" for r in rows[:3]))
    out_dir = str(tmp_path / "idx")
    argv = ["index", str(src), "--out", out_dir, "--embed", "hash", "--prepare", "", "--batch-size", "2"]
    code, out, err = run(capsys, *argv)
    assert code == 0, err
    assert "batch 1: 2 documents indexed and saved" in out and "batch 2: 3 documents" in out
    assert "indexed 3 documents" in out and "in batches of 2" in out
    src.write_text("".join(json.dumps(r) + "\n" for r in rows))  # two more documents: a resumed build adds them
    code, out, err = run(capsys, *argv)
    assert code == 2 and "--resume" in err
    code, out, err = run(capsys, *argv, "--resume")
    assert code == 0, err
    assert "batch 1: 5 documents" in out and "indexed 5 documents" in out
    code, out, err = run(capsys, "query", out_dir, "Where is Marlow 4?", "--method", "hybrid", "--json",
                         "--embed", "hash", "--top-k", "1")
    assert code == 0 and json.loads(out)["nodes"][0]["doc_id"] == "d4"
    code, out, err = run(capsys, "index", str(src), "--out", str(tmp_path / "o2"), "--resume")
    assert code == 2 and "--batch-size" in err
