"""Method artefacts: memoised per snapshot, saved by persist, reloaded instead of rebuilt, stale after edits."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from llama_index_graphrag_suite import CorruptIndexError, GraphRAGIndex


class Summaries:
    """A stand-in artefact with the save/load protocol (a method's real one writes JSON/npy the same way)."""

    def __init__(self, texts):
        self.texts = texts

    def save(self, folder: Path) -> None:
        folder.mkdir(parents=True, exist_ok=True)
        (folder / "texts.json").write_text(json.dumps(self.texts))

    @classmethod
    def load(cls, folder: Path) -> "Summaries":
        return cls(json.loads((folder / "texts.json").read_text()))


@pytest.fixture
def index(documents, embed):
    return GraphRAGIndex.from_documents(documents[:4], embed_model=embed)


def test_artefact_is_built_once_saved_and_reloaded(index, embed, tmp_path, documents):
    builds = []

    def build():
        builds.append(1)
        return Summaries({c: index.chunks[c].text[:10] for c in index.chunks})

    first = index.artefact("summaries", build, load=Summaries.load)
    assert index.artefact("summaries", build, load=Summaries.load) is first and len(builds) == 1
    index.persist(tmp_path / "idx")

    loaded = GraphRAGIndex.load(tmp_path / "idx", embed_model=embed)
    again = loaded.artefact("summaries", lambda: pytest.fail("rebuilt instead of loaded"), load=Summaries.load)
    assert again.texts == first.texts

    loaded.persist(tmp_path / "idx")  # not touched in between: carried into the new version
    reloaded = GraphRAGIndex.load(tmp_path / "idx", embed_model=embed)
    assert reloaded.artefact("summaries", lambda: pytest.fail("lost"), load=Summaries.load).texts == first.texts

    reloaded.insert(documents[4:5])  # a new snapshot: the saved artefact no longer describes the index
    fresh = reloaded.artefact("summaries", lambda: Summaries({"rebuilt": True}), load=Summaries.load)
    assert fresh.texts == {"rebuilt": True}


def test_artefact_files_are_checksummed(index, embed, tmp_path):
    index.artefact("summaries", lambda: Summaries({"a": "b"}), load=Summaries.load)
    version = index.persist(tmp_path / "idx")
    manifest = json.loads((version / "manifest.json").read_text())
    assert "artefacts/summaries/texts.json" in manifest["files"]
    (version / "artefacts" / "summaries" / "texts.json").write_text('{"a": "tampered"}')
    with pytest.raises(CorruptIndexError, match="checksum"):
        GraphRAGIndex.load(tmp_path / "idx", embed_model=embed)


def test_an_unreadable_saved_artefact_is_rebuilt_not_fatal(index, embed, tmp_path):
    index.artefact("summaries", lambda: Summaries({"a": "b"}), load=Summaries.load)
    index.persist(tmp_path / "idx")
    loaded = GraphRAGIndex.load(tmp_path / "idx", embed_model=embed)

    def newer_format(folder):
        raise ValueError("written by a newer release")

    assert loaded.artefact("summaries", lambda: Summaries({"rebuilt": 1}), load=newer_format).texts == {"rebuilt": 1}


def test_a_carried_artefact_keeps_its_recorded_checksum_and_is_not_read_again(index, embed, tmp_path, monkeypatch):
    """A save carries an unused saved artefact into the new version (a hard link) with the SHA-256 the old
    manifest records: not hashed again (at a million passages ArchRAG's artefact is 1.7 GB). The digest is the
    file's true one, and damage to the shared file is still found on load."""
    from llama_index_graphrag_suite.fileio import sha256_file
    from llama_index_graphrag_suite.index import storage

    hashed = []
    monkeypatch.setattr(storage, "sha256_file", lambda path: hashed.append(Path(path).as_posix()) or sha256_file(path))
    name = "artefacts/summaries/texts.json"
    index.artefact("summaries", lambda: Summaries({"a": "b"}), load=Summaries.load)
    first = index.persist(tmp_path / "idx")
    assert [p for p in hashed if p.endswith(name)]  # written by this save: hashed
    loaded = GraphRAGIndex.load(tmp_path / "idx", embed_model=embed)
    hashed.clear()
    second = loaded.persist(tmp_path / "idx")
    assert not [p for p in hashed if p.endswith(name)]  # carried over: its recorded digest
    recorded = json.loads((second / "manifest.json").read_text())["files"][name]
    assert recorded == json.loads((first / "manifest.json").read_text())["files"][name] == sha256_file(second / name)
    (second / name).write_text('{"a": "tampered"}')
    with pytest.raises(CorruptIndexError, match="checksum"):
        GraphRAGIndex.load(tmp_path / "idx", embed_model=embed)
