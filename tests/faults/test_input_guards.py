"""Degenerate input: binary files, symlinks out of the corpus, tiny corpora, empty questions."""

from __future__ import annotations

import logging
import os
import re

import pytest

from llama_index_graphrag_suite import (
    CorpusError,
    GraphRAGIndex,
    IndexConfig,
    load_documents,
)
from llama_index_graphrag_suite.cli import main
from llama_index_graphrag_suite.documents import make_document
from llama_index_graphrag_suite.embeddings import HashEmbedding

TEXT = "Marlow is a town on the Esk River. The Esk River reaches the sea at Marlow. " * 3


@pytest.fixture
def corpus(tmp_path):
    d = tmp_path / "docs"
    d.mkdir()
    (d / "marlow.txt").write_text(TEXT)
    (d / "cafe.txt").write_bytes("Caf\xe9 Lorne is a caf\xe9 in Marlow by the Esk River.".encode("latin-1"))  # 2 bad bytes
    (d / "image.txt").write_bytes(b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR" + bytes(range(256)) * 4)  # NUL bytes
    (d / "noise.md").write_bytes(bytes(range(128, 256)) * 40)  # no NUL, but nearly nothing decodes
    outside = tmp_path / "secret.txt"
    outside.write_text("Not part of the corpus.")
    os.symlink(outside, d / "link.txt")
    return d


def test_binary_files_are_skipped_with_a_warning_naming_them(corpus, caplog):
    caplog.set_level(logging.WARNING)
    docs = load_documents(corpus)
    assert sorted(d.id_ for d in docs) == ["cafe.txt", "marlow.txt"]
    cafe = next(d for d in docs if d.id_ == "cafe.txt")
    assert cafe.text.count("\ufffd") == 2  # a few bad bytes in text: kept, replaced
    warnings = caplog.text
    assert "image.txt: a binary file (NUL bytes)" in warnings
    assert "noise.md: a binary file" in warnings
    assert "cafe.txt: not valid UTF-8" in warnings
    assert "link.txt: a symlink" in warnings and "outside" in warnings


def test_a_binary_file_given_alone_is_a_clear_error(corpus, tmp_path, capsys):
    with pytest.raises(CorpusError, match="image.txt: a binary file"):
        load_documents(corpus / "image.txt")
    assert main(["index", str(corpus / "image.txt"), "--out", str(tmp_path / "idx"), "--embed", "hash", "--quiet"]) == 2
    err = capsys.readouterr().err
    assert "binary file" in err and not (tmp_path / "idx" / "CURRENT").exists()


def test_utf16_text_with_a_byte_order_mark_is_read(tmp_path):
    (tmp_path / "u16.txt").write_bytes(TEXT.encode("utf-16"))
    assert load_documents(tmp_path / "u16.txt")[0].text.startswith("Marlow is a town")


def test_a_tiny_corpus_is_warned_about(caplog):
    caplog.set_level(logging.WARNING)
    GraphRAGIndex.from_documents([make_document("one", "Ada Lorne was a painter born in Marlow.", "Ada Lorne")],
                                 embed_model=HashEmbedding(), config=IndexConfig(entities="statistical"))
    assert re.search(r"tiny \(1 passage\(s\), \d+ words\): graph methods need more text", caplog.text)


def test_the_cli_refuses_an_empty_question(tmp_path, capsys):
    src = tmp_path / "c.txt"
    src.write_text(TEXT)
    assert main(["index", str(src), "--out", str(tmp_path / "idx"), "--embed", "hash", "--quiet",
                 "--entities", "statistical"]) == 0
    capsys.readouterr()
    for question in ("", "  \n "):
        assert main(["query", str(tmp_path / "idx"), question, "--embed", "hash", "--quiet"]) == 2
        assert "error: the question is empty" in capsys.readouterr().err
