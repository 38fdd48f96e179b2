"""The CLI's one-line errors: exit 2, the message alone for what the user can fix, no traceback."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from llama_index_graphrag_suite.cli import error_line, main
from llama_index_graphrag_suite.index.storage import CorruptIndexError, IndexConflictError

QUESTION = "Who designed the Orrin Theatre?"


@pytest.fixture
def index_dir(demo_index) -> Path:
    return demo_index


def test_a_corrupt_index_is_exit_2(index_dir, tmp_path, capsys):
    import shutil

    broken = tmp_path / "broken"
    shutil.copytree(index_dir, broken)
    segment = next(broken.glob("segments/*.arrow"))
    segment.write_bytes(segment.read_bytes()[:-10])
    assert main(["query", str(broken), QUESTION, "--embed", "hash", "--quiet"]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("error: corrupt index at") and "\n" not in err and "Traceback" not in err


def test_an_index_conflict_is_one_line_and_exit_2(index_dir, monkeypatch, capsys):
    from llama_index_graphrag_suite.cli import query

    def conflict(args, timing=False, embed=None):
        raise IndexConflictError(f"{args.index_dir}: document doc-01 was changed by another writer\nsecond line")

    monkeypatch.setattr(query, "load_index", conflict)
    assert main(["query", str(index_dir), QUESTION, "--embed", "hash", "--quiet"]) == 2
    assert capsys.readouterr().err == f"error: {index_dir}: document doc-01 was changed by another writer\n"
    assert error_line(CorruptIndexError("bad")) == "error: bad"
    assert error_line(KeyError("x")) == "error (KeyError): 'x'"  # not a user error: the type is named


def test_an_unknown_embed_model_fails_before_anything_is_read(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    assert main(["query", str(tmp_path / "missing"), QUESTION, "--embed", "no-such-model-xyz", "--quiet"]) == 2
    err = capsys.readouterr().err
    assert "unknown embedding model 'no-such-model-xyz'" in err and "hash" in err
    assert main(["index", str(tmp_path / "missing"), "--out", str(tmp_path / "o"), "--embed", "hash:x"]) == 2
    assert "hash:DIM takes a whole number" in capsys.readouterr().err


def test_a_folder_without_text_files_names_the_formats_read(tmp_path, capsys):
    src = tmp_path / "pdfs"
    src.mkdir()
    for name in ("a.pdf", "b.pdf", "c.docx"):
        (src / name).write_bytes(b"%PDF-1.4 binary")
    assert main(["index", str(src), "--out", str(tmp_path / "o"), "--embed", "hash", "--quiet"]) == 2
    err = capsys.readouterr().err
    assert ".md" in err and ".pdf" in err and "2 .pdf, 1 .docx file(s) gave no text" in err and ".jsonl" in err
    (src / "d.odt").write_bytes(b"PK")
    assert main(["index", str(src), "--out", str(tmp_path / "o"), "--embed", "hash", "--quiet"]) == 2
    assert "it holds 1 .odt file(s), which are not read" in capsys.readouterr().err


def test_bad_requests_fail_before_the_index_is_loaded(tmp_path, capsys):
    missing = str(tmp_path / "missing")  # never read: each request is checked first
    for argv, expected in (
        (["--method", "nope"], "unknown method 'nope'"),
        (["--method", "agrag:nope"], "no variant 'nope'"),
        (["--method", "pathrag", "--set", "alpha=2"], "alpha"),
        (["--method", "hybrid", "--set", "nothing=1"], "has a setting 'nothing'"),
    ):
        assert main(["query", missing, QUESTION, "--embed", "hash", "--quiet", *argv]) == 2
        err = capsys.readouterr().err
        assert expected in err and "no index" not in err, (argv, err)
    assert main(["query", missing, "   ", "--embed", "hash"]) == 2
    assert "question is empty" in capsys.readouterr().err


def test_query_json_names_the_method_as_resolved(index_dir, capsys):
    assert main(["query", str(index_dir), QUESTION, "--embed", "hash", "--quiet", "--json",
                 "--method", "agrag:no_mcmi", "--set", "fact_top_k=3"]) == 0
    result = json.loads(capsys.readouterr().out)
    assert result["method"] == "agrag:no_mcmi" and result["evidence"]["variant"] == "no_mcmi"
