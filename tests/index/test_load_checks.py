"""Tables that are wrong but carry valid checksums are a CorruptIndexError on load, in one line (issue 26, case 5).

Each case edits one table of a saved version as a hostile user or a buggy tool would, then writes the matching
checksum into the manifest, so only the semantic checks (index/checks.py) can notice.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from llama_index_graphrag_suite import CorruptIndexError, GraphRAGIndex, IndexConfig
from llama_index_graphrag_suite.cli import main
from llama_index_graphrag_suite.documents import make_document
from llama_index_graphrag_suite.embeddings import HashEmbedding
from llama_index_graphrag_suite.fileio import sha256_file
from llama_index_graphrag_suite.index.storage import CURRENT


@pytest.fixture(scope="module")
def saved(tmp_path_factory) -> Path:
    from conftest import CORPUS

    docs = [make_document(i, text, title) for i, title, text in CORPUS]
    index = GraphRAGIndex.from_documents(docs, embed_model=HashEmbedding(dim=64),
                                         config=IndexConfig(entities="statistical", entity_threshold=0.1))
    folder = tmp_path_factory.mktemp("checks") / "idx"
    index.persist(folder)
    return folder


def _copy(saved: Path, tmp_path: Path) -> tuple[Path, Path]:
    import shutil

    target = tmp_path / "idx"
    shutil.copytree(saved, target)
    return target, target / json.loads((target / CURRENT).read_text())["version"]


def _edit(version: Path, name: str, change) -> None:
    path = version / name
    data = json.loads(path.read_text())
    data = change(data) or data
    path.write_text(json.dumps(data))
    manifest = json.loads((version / "manifest.json").read_text())
    manifest["files"][name] = sha256_file(path)  # a valid checksum: only the meaning is wrong
    (version / "manifest.json").write_text(json.dumps(manifest))


def _reverse_vectors(d):
    for ids in d.values():
        ids.reverse()


def _entity_on_missing_chunk(rows):
    rows[0]["chunks"].append("no-such-doc#0")


def _fact_on_unknown_entity(rows):
    rows[0]["object"] = "nobody at all"


def _duplicate_chunk(rows):
    rows.append(dict(rows[0]))


def _duplicate_vector_id(d):
    d["entities"][-1] = d["entities"][0]


def _extra_vector_id(d):
    d["chunks"][0] = "ghost#0"


def _chunks_reordered_under_the_saved_graph(rows):
    rows.reverse()  # ids still match every table; graph.npz's chunk rows now name other chunks


def _synonym_on_unknown_entity(rows):
    rows.append(["nobody at all", rows[0][1] if rows else "x", 0.9])


CASES = [
    ("vector_ids.json", _reverse_vectors, "vector_ids.json does not match the vectors' rows"),
    ("entities.json", _entity_on_missing_chunk, "links missing chunk 'no-such-doc#0'"),
    ("facts.json", _fact_on_unknown_entity, "is on unknown entity 'nobody at all'"),
    ("chunks.json", _duplicate_chunk, "chunks.json lists 'p-ada#0' twice"),
    ("vector_ids.json", _duplicate_vector_id, "lists entities id"),
    ("vector_ids.json", _extra_vector_id, "'ghost#0' has a vector but no row"),
    ("synonyms.json", _synonym_on_unknown_entity, "synonym pair"),
    ("chunks.json", _chunks_reordered_under_the_saved_graph, "graph.npz does not match the tables"),
]


@pytest.mark.parametrize("name,change,message", CASES, ids=[c[1].__name__.strip("_") for c in CASES])
def test_wrong_tables_with_valid_checksums_are_corrupt(saved, tmp_path, capsys, name, change, message):
    folder, version = _copy(saved, tmp_path)
    _edit(version, name, change)
    with pytest.raises(CorruptIndexError) as err:
        GraphRAGIndex.load(folder, embed_model=HashEmbedding(dim=64))
    text = str(err.value)
    assert message in text and text.startswith(f"corrupt index at {folder}") and "\n" not in text
    # the CLI says the same in one line and exits 2
    assert main(["query", str(folder), "Who taught Ada Lorne?", "--embed", "hash:64", "--method", "dense"]) == 2
    err_lines = [line for line in capsys.readouterr().err.splitlines() if line.strip()]
    assert len(err_lines) == 1 and message in err_lines[0]


def test_an_untouched_index_loads_and_a_reordered_table_without_its_graph_too(saved, tmp_path):
    assert GraphRAGIndex.load(saved, embed_model=HashEmbedding(dim=64)).stats()["chunks"] == 6
    folder, version = _copy(saved, tmp_path)
    _edit(version, "chunks.json", _chunks_reordered_under_the_saved_graph)
    (version / "graph.npz").unlink()  # derived: rebuilt from the (consistent) tables
    assert GraphRAGIndex.load(folder, embed_model=HashEmbedding(dim=64)).stats()["chunks"] == 6
