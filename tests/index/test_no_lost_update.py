"""No lost update across processes: writers that loaded the same version both keep
their documents; a document changed by two writers is an IndexConflictError that saves nothing.

Real processes. Each child announces when it reaches the folder's writer lock (``storage._locked``, which every
save goes through, before and after this change); the parent holds that lock until both children are there, so
both have loaded the same version and changed it before either saves: the race is forced, not hoped for.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from filelock import FileLock

from llama_index_graphrag_suite import GraphRAGIndex, IndexConfig, IndexConflictError
from llama_index_graphrag_suite.documents import make_document
from llama_index_graphrag_suite.embeddings import HashEmbedding
from llama_index_graphrag_suite.index.storage import CURRENT, LOCK

ROOT = Path(__file__).resolve().parents[2]
CONFIG = IndexConfig(entities="statistical", entity_threshold=0.1)
BASE = [("base-0", "Marlow", "Marlow is a town on the Esk River, known for its harbour and glassworks."),
        ("base-1", "Ada Lorne", "Ada Lorne was a painter born in Marlow who studied at Kell Academy.")]

# Announces "at-lock" (once) when the process reaches the folder's writer lock, then waits for it as usual.
HOOK = """
import sys
from llama_index_graphrag_suite.index import storage
_locked, _told = storage._locked, []
def _announce(root, timeout):
    if not _told:
        _told.append(1)
        print("at-lock", flush=True)
    return _locked(root, timeout)
storage._locked = _announce
"""

PYTHON_WRITER = HOOK + """
from llama_index_graphrag_suite import GraphRAGIndex
from llama_index_graphrag_suite.documents import make_document
from llama_index_graphrag_suite.embeddings import HashEmbedding
folder, op, doc_id, text = sys.argv[1:5]
index = GraphRAGIndex.load(folder, embed_model=HashEmbedding())
if op in ("delete", "replace"):
    index.delete(doc_id)
if op in ("insert", "replace"):
    index.insert([make_document(doc_id, text, doc_id)])
try:
    index.persist(folder)
except Exception as exc:
    print(f"{type(exc).__name__}: {exc}", flush=True)
    sys.exit(2)
print("saved", index.loaded_version, sorted(index.pending_documents()), flush=True)
"""

CLI_WRITER = HOOK + """
from llama_index_graphrag_suite.cli import main
sys.exit(main(["index", sys.argv[1], "--out", sys.argv[2], "--update", "--embed", "hash", "--quiet"]))
"""


def _base(folder: Path) -> None:
    docs = [make_document(i, text, title) for i, title, text in BASE]
    GraphRAGIndex.from_documents(docs, embed_model=HashEmbedding(), config=CONFIG).persist(folder)


def _documents(folder: Path) -> set[str]:
    index = GraphRAGIndex.load(folder, embed_model=HashEmbedding())
    return {c.doc_id for c in index.chunks.values()}


def _race(folder: Path, commands: list[list[str]]) -> list[tuple[int, str, str]]:
    """Run the children while holding the folder's lock until every one of them waits for it."""
    with FileLock(str(folder / LOCK)):
        children = [subprocess.Popen(cmd, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
                    for cmd in commands]
        for child in children:
            line = child.stdout.readline().strip()
            assert line == "at-lock", (line, child.stderr.read()[-3000:] if child.poll() is not None else "")
    out = []
    for child in children:
        stdout, stderr = child.communicate(timeout=240)
        out.append((child.returncode, stdout, stderr))
    return out


def _python(folder: Path, op: str, doc_id: str, text: str = "") -> list[str]:
    return [sys.executable, "-c", PYTHON_WRITER, str(folder), op, doc_id, text]


def test_two_python_writers_from_one_version_both_keep_their_documents(tmp_path):
    folder = tmp_path / "idx"
    _base(folder)
    results = _race(folder, [
        _python(folder, "insert", "a-doc", "Tomas Brey taught painting at Kell Academy in Dunmore."),
        _python(folder, "insert", "b-doc", "The Vant Gallery in Dunmore holds The Grey Harbour."),
    ])
    for code, out, err in results:
        assert code == 0, (out, err[-3000:])
        assert "saved v-00000" in out and "[]" in out  # nothing left pending after the save
    assert _documents(folder) == {"base-0", "base-1", "a-doc", "b-doc"}
    index = GraphRAGIndex.load(folder, embed_model=HashEmbedding())
    assert index.loaded_version == "v-000003" and not index.is_stale()


def test_a_delete_and_an_insert_from_one_version_both_stand(tmp_path):
    folder = tmp_path / "idx"
    _base(folder)
    results = _race(folder, [_python(folder, "delete", "base-0"),
                             _python(folder, "insert", "c-doc", "Kell Academy was founded in 1850 in Dunmore.")])
    assert [r[0] for r in results] == [0, 0], results
    assert _documents(folder) == {"base-1", "c-doc"}


def test_two_writers_changing_one_document_differently_conflict_and_save_nothing(tmp_path):
    folder = tmp_path / "idx"
    _base(folder)
    results = _race(folder, [_python(folder, "replace", "base-1", "Ada Lorne painted The Grey Harbour in 1901."),
                             _python(folder, "replace", "base-1", "Ada Lorne taught at Kell Academy in Dunmore.")])
    codes = sorted(r[0] for r in results)
    assert codes == [0, 2], results
    loser = next(out for code, out, _ in results if code == 2)
    assert loser.startswith("IndexConflictError: ") and "'base-1'" in loser and len(loser.strip().splitlines()) == 1
    # the winner's version is current and no other version was written
    assert json.loads((folder / CURRENT).read_text())["version"] == "v-000002"
    assert sorted(p.name for p in folder.glob("v-*")) == ["v-000001", "v-000002"]


def test_two_cli_updates_at_once_both_keep_their_documents(tmp_path):
    folder = tmp_path / "idx"
    _base(folder)
    sources = []
    for name, text in (("a", "Tomas Brey taught painting at Kell Academy."), ("b", "The Vant Gallery is in Dunmore.")):
        src = tmp_path / f"src-{name}"
        src.mkdir()
        (src / f"{name}.txt").write_text(text)
        sources.append(src)
    results = _race(folder, [[sys.executable, "-c", CLI_WRITER, str(src), str(folder)] for src in sources])
    for code, out, err in results:
        assert code == 0 and "new=1" in out, (out, err[-3000:])
    docs = _documents(folder)
    assert {d for d in docs if d.endswith("a.txt")} and {d for d in docs if d.endswith("b.txt")}, docs
    assert {"base-0", "base-1"} <= docs


def test_a_long_lived_index_sees_and_keeps_another_process_s_save(tmp_path):
    """Case 2 in Python terms (the server's index object): another process saves; the live index notices it
    (is_stale), its own next save keeps the other document, and reload() catches up in place."""
    folder = tmp_path / "idx"
    _base(folder)
    live = GraphRAGIndex.load(folder, embed_model=HashEmbedding())
    retriever = live.as_retriever("dense", top_k=2)
    assert live.loaded_version == live.disk_version() == "v-000001" and not live.is_stale()
    code = subprocess.run(_python(folder, "insert", "cli-doc", "The Vant Gallery was founded by Piers Vant."),
                          cwd=ROOT, capture_output=True, text=True, timeout=240)
    assert code.returncode == 0, code.stderr[-3000:]
    assert live.is_stale() and live.disk_version() == "v-000002" and live.loaded_version == "v-000001"
    live.insert([make_document("live-doc", "Kell Academy is an art school in Dunmore.", "Kell")])
    assert live.pending_documents() == ["live-doc"]
    live.persist(folder)  # re-applies live-doc on v-000002
    assert live.loaded_version == "v-000003" and not live.is_stale() and not live.pending_documents()
    assert {c.doc_id for c in live.chunks.values()} == {"base-0", "base-1", "cli-doc", "live-doc"}
    assert _documents(folder) == {"base-0", "base-1", "cli-doc", "live-doc"}
    assert any(n.node.metadata.get("doc_id") == "cli-doc" for n in retriever.retrieve("Who founded the Vant Gallery?"))

    other = GraphRAGIndex.load(folder, embed_model=HashEmbedding())
    other.delete("cli-doc")
    other.persist(folder)
    assert live.is_stale() and live.reload() and not live.is_stale() and not live.reload()
    assert "cli-doc" not in {c.doc_id for c in live.chunks.values()}
    assert all(n.node.metadata.get("doc_id") != "cli-doc" for n in retriever.retrieve("Who founded the Vant Gallery?"))


def test_reload_discarding_pending_changes_gives_what_is_on_disk(tmp_path):
    folder = tmp_path / "idx"
    _base(folder)
    index = GraphRAGIndex.load(folder, embed_model=HashEmbedding())
    index.insert([make_document("unsaved", "Piers Vant founded the Vant Gallery in 1880.", "Vant")])
    index.delete("base-0")
    assert sorted(index.pending_documents()) == ["base-0", "unsaved"]
    assert index.reload(discard_pending=True)
    assert {c.doc_id for c in index.chunks.values()} == {"base-0", "base-1"} and not index.pending_documents()
    fresh = GraphRAGIndex.from_documents([make_document("x", "Marlow lies on the Esk.", "x")],
                                         embed_model=HashEmbedding(), config=CONFIG)
    with pytest.raises(ValueError, match="neither loaded from nor saved to a folder"):
        fresh.reload()
    assert fresh.loaded_version is None and fresh.disk_version() is None and not fresh.is_stale()


def test_a_conflicting_reload_keeps_the_pending_change_in_memory(tmp_path):
    folder = tmp_path / "idx"
    _base(folder)
    a = GraphRAGIndex.load(folder, embed_model=HashEmbedding())
    b = GraphRAGIndex.load(folder, embed_model=HashEmbedding())
    a.delete("base-1")
    b.delete("base-1")
    b.insert([make_document("base-1", "Ada Lorne painted The Grey Harbour.", "Ada Lorne")])
    a.persist(folder)
    with pytest.raises(IndexConflictError, match="'base-1' was changed by another writer"):
        b.reload()
    assert "base-1" in {c.doc_id for c in b.chunks.values()} and b.pending_documents() == ["base-1"]
    with pytest.raises(IndexConflictError):
        b.persist(folder)
    assert _documents(folder) == {"base-0"}


def test_two_cli_updates_changing_one_file_differently_end_in_one_conflict(tmp_path):
    """Both sources hold the same file with different texts: one update saves, the other exits 2 with one line."""
    folder = tmp_path / "idx"
    _base(folder)
    sources = []
    for name, text in (("a", "Ada Lorne painted The Grey Harbour."), ("b", "Ada Lorne taught at Kell Academy.")):
        src = tmp_path / name / "shared"  # the same relative path: the same document id
        src.mkdir(parents=True)
        (src / "note.txt").write_text(text)
        sources.append(src)
    # the document must exist first, so both runs change it (not both insert it)
    seed = tmp_path / "seed" / "shared"
    seed.mkdir(parents=True)
    (seed / "note.txt").write_text("Ada Lorne was born in Marlow.")
    first = subprocess.run([sys.executable, "-c", CLI_WRITER.replace(HOOK, "import sys\n"), str(seed), str(folder)],
                           cwd=ROOT, capture_output=True, text=True, timeout=240)
    assert first.returncode == 0, first.stderr[-3000:]
    results = _race(folder, [[sys.executable, "-c", CLI_WRITER, str(src), str(folder)] for src in sources])
    assert sorted(code for code, _, _ in results) == [0, 2], results
    err = next(err for code, _, err in results if code == 2).strip().splitlines()
    assert len(err) == 1 and "changed by another writer" in err[0] and "nothing was saved" in err[0]
    assert json.loads((folder / CURRENT).read_text())["version"] == "v-000003"  # base, seed, the winner
