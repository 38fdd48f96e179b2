"""Tables that are wrong but carry valid checksums are a CorruptIndexError on load, in one line.

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
from llama_index_graphrag_suite.index.segment_files import read_segment, write_arrow
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


def _rewrite(path: Path, table) -> None:
    """``table`` into the segment file ``path``, in its format, through a new file (a load may still map the old one)."""
    import pyarrow.parquet as pq

    tmp = path.with_name(f".{path.name}.tmp")
    if path.suffix == ".parquet":
        pq.write_table(table, tmp, compression="zstd")
    else:
        write_arrow(table, tmp)
    tmp.replace(path)


def _edit(version: Path, name: str, change) -> None:
    """Change the rows of table ``name`` (a vector table's ids: ``vectors:chunks``) in the version's one segment of
    it (a first save writes each table whole) and write the segment's new checksum into the manifest."""
    import pyarrow as pa

    manifest = json.loads((version / "manifest.json").read_text())
    if name.startswith("vectors:"):
        segment = manifest["vectors"][name.split(":")[1]][0][0]
    else:
        (segment,) = manifest["tables"][name]
    path = version.parent / "segments" / segment
    table = read_segment(path)
    rows = table.to_pylist()
    rows = change(rows) or rows
    _rewrite(path, pa.Table.from_pylist(rows, schema=table.schema))
    manifest["segments"][segment] = sha256_file(path)  # a valid checksum: only the meaning is wrong
    (version / "manifest.json").write_text(json.dumps(manifest))


def _reverse(rows):
    rows.reverse()


def _chunk_naming_an_unknown_entity(rows):
    rows[0]["entities"].append("nobody at all")


def _fact_on_unknown_entity(rows):
    rows[0]["object"] = "nobody at all"


def _fact_in_a_missing_chunk(rows):
    rows[-1]["chunks"] = list(rows[-1]["chunks"]) + ["ghost#0"]


def _duplicate_row(rows):
    rows.append(dict(rows[0]))


def _duplicate_vector_id(rows):
    rows[-1] = dict(rows[0])


def _extra_vector_id(rows):
    rows[0]["id"] = "ghost#0"


def _links_of_a_chunk_that_is_not_there(rows):
    rows.append({**rows[0], "id": "ghost#0"})


def _synonym_on_unknown_entity(rows):
    rows.append({**(rows[0] if rows else {"b": "x", "gone": False, "score": 0.9}), "a": "nobody at all"})


def _text_key_of_another_fact(rows):
    rows[0]["text_key"] = next(r["text_key"] for r in rows if r["text_key"] != rows[0]["text_key"])


CASES = [
    ("vectors:entities", _reverse, "the vector ids do not match the vectors' rows"),
    ("chunk_links", _chunk_naming_an_unknown_entity, "contains unknown entity 'nobody at all'"),
    ("facts", _fact_on_unknown_entity, "is on unknown entity 'nobody at all'"),
    ("facts", _fact_in_a_missing_chunk, "links missing chunk 'ghost#0'"),
    ("chunks", _duplicate_row, "lists a key twice ('p-ada#0')"),
    ("vectors:entities", _duplicate_vector_id, "the entities vector ids list"),
    ("vectors:chunks", _extra_vector_id, "'ghost#0' has a vector but no row"),
    ("chunk_links", _links_of_a_chunk_that_is_not_there, "does not list the chunks of the chunks table"),
    ("synonyms", _synonym_on_unknown_entity, "synonym pair"),
    ("facts", _text_key_of_another_fact, "has a text key that is not its text's"),
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


def test_an_untouched_index_loads_and_a_reordered_table_too(saved, tmp_path):
    untouched = GraphRAGIndex.load(saved, embed_model=HashEmbedding(dim=64))
    assert untouched.stats()["chunks"] == 6
    folder, version = _copy(saved, tmp_path)
    _edit(version, "chunks", _reverse)  # the graph is rebuilt from the (consistent) tables on load
    loaded = GraphRAGIndex.load(folder, embed_model=HashEmbedding(dim=64))
    assert loaded.stats()["chunks"] == 6 and loaded.chunk_order == untouched.chunk_order[::-1]


def test_a_manifest_that_points_at_a_file_it_lists_no_checksum_for_is_corrupt(saved, tmp_path):
    """Only segments listed with a checksum are read: a name slipped into a table's list (a path outside the
    folder, say) is refused before anything is opened."""
    folder, version = _copy(saved, tmp_path)
    manifest = json.loads((version / "manifest.json").read_text())
    manifest["tables"]["facts"].append("../../outside.parquet")
    (version / "manifest.json").write_text(json.dumps(manifest))
    with pytest.raises(CorruptIndexError, match="without listing its checksum"):
        GraphRAGIndex.load(folder, embed_model=HashEmbedding(dim=64))


def test_facts_saved_without_text_keys_load_and_take_keyed_segments_after_them(saved, tmp_path):
    """A version saved before the facts table held its text keys: they are computed on load; a save after an insert
    appends a segment with keys over the old one, and both read back as one table."""
    from conftest import CORPUS

    folder, version = _copy(saved, tmp_path)
    manifest = json.loads((version / "manifest.json").read_text())
    (segment,) = manifest["tables"]["facts"]
    path = folder / "segments" / segment
    parquet = path.with_suffix(".parquet")  # as an older version wrote it: Parquet, no text keys
    _rewrite(parquet, read_segment(path).drop_columns(["text_key"]))
    path.unlink()
    manifest["tables"]["facts"] = [parquet.name]
    del manifest["segments"][segment]
    manifest["segments"][parquet.name] = sha256_file(parquet)
    manifest["format_version"] = 2
    (version / "manifest.json").write_text(json.dumps(manifest))
    reference = GraphRAGIndex.load(saved, embed_model=HashEmbedding(dim=64))
    old = GraphRAGIndex.load(folder, embed_model=HashEmbedding(dim=64))
    assert list(old.fact_text_rows) == list(reference.fact_text_rows)
    old.insert([make_document("extra", "Ada Lorne met Ben Hale in Paris.", "Extra")])
    old.persist(folder)
    again = GraphRAGIndex.load(folder, embed_model=HashEmbedding(dim=64))
    assert len(json.loads((folder / json.loads((folder / CURRENT).read_text())["version"] / "manifest.json")
                          .read_text())["tables"]["facts"]) == 2
    assert list(again.fact_text_rows) == list(old.fact_text_rows) and list(again.fact_ids) == list(old.fact_ids)
    assert CORPUS  # the saved fixture's corpus


def test_an_embedding_model_that_cannot_be_loaded_is_named_not_blamed_on_the_index(saved: Path) -> None:
    """A model name this machine cannot load is the caller's error (EmbedModelError, which names the models it can
    use), not a corrupt index: the index was fine and must not be rebuilt over it."""
    from llama_index_graphrag_suite.embeddings import EmbedModelError

    with pytest.raises(EmbedModelError, match="unknown embedding model 'no-such-model'") as caught:
        GraphRAGIndex.load(saved, embed_model="no-such-model")
    assert not isinstance(caught.value, CorruptIndexError)
