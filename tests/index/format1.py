"""Turn a saved version into the layout the library wrote before segments (format 1), to test that old indexes
still load: whole JSON tables, faiss vector files, graph.npz, and the store file, all in the version folder."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import faiss
import numpy as np

from llama_index_graphrag_suite.fileio import sha256_file
from llama_index_graphrag_suite.index.audit import version_rows
from llama_index_graphrag_suite.index.tables import SEGMENTS


def to_format_1(root: Path, snapshot, attributes: bool = True) -> Path:
    """Rewrite ``root``'s current version as format 1 (``snapshot``: the index's, saved as graph.npz); drops
    the segments. ``attributes=False``: entity rows as libraries before attributes wrote them."""
    version = root / json.loads((root / "CURRENT").read_text())["version"]
    rows = version_rows(version)
    manifest = json.loads((version / "manifest.json").read_text())
    entities = rows["entities"] if attributes else [{k: v for k, v in e.items() if k != "attributes"}
                                                    for e in rows["entities"]]
    for name, data in (("chunks", rows["chunks"]), ("entities", entities), ("facts", rows["facts"]),
                       ("synonyms", rows["synonyms"]), ("vector_ids", rows["vector_ids"])):
        (version / f"{name}.json").write_text(json.dumps(data))
    for name, matrix in rows["vectors"].items():
        flat = faiss.IndexFlatIP(matrix.shape[1])
        flat.add(np.ascontiguousarray(matrix, np.float32))
        faiss.write_index(flat, str(version / f"{name}.faiss"))
    np.savez(version / "graph.npz", **snapshot.to_arrays())
    for key in ("tables", "vectors", "vocabulary", "segments"):
        manifest.pop(key, None)
    files = sorted(p.relative_to(version).as_posix() for p in version.rglob("*") if p.is_file() and p.name != "manifest.json")
    manifest["format_version"] = 1
    manifest["files"] = {f: sha256_file(version / f) for f in files}
    (version / "manifest.json").write_text(json.dumps(manifest))
    shutil.rmtree(root / SEGMENTS)
    return version
