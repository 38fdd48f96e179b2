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
