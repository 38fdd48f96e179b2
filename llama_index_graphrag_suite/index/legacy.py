"""Reading an index version saved before segments (format 1): whole JSON tables, faiss or ``.npy`` vector files
and the snapshot's arrays in the version folder. Such an index loads as it is; its next save writes segments
(``tables.py``), so a folder moves to the new format with one ``persist`` (``graphrag-suite index --update`` or
any insert, delete or refresh of a loaded index followed by a save)."""

from __future__ import annotations

from pathlib import Path

import faiss
import numpy as np

from .records import ChunkRecord, EntityRecord, FactRecord
from .storage import read_json
from .synonym_pairs import SynonymPairs
from .tables import LoadedTables
from .vectors import VectorTable

__all__ = ["read_format_1"]


def read_format_1(folder: Path, missing: set[str], dim: int):
    """The tables of a version saved before segments (format 1): JSON tables, faiss or .npy vector files and the
    snapshot's arrays (None when ``graph.npz`` is missing). The next save writes them as segments."""
    chunk_rows = read_json(folder / "chunks.json")
    entity_rows, fact_rows = read_json(folder / "entities.json"), read_json(folder / "facts.json")
    loaded = LoadedTables(
        chunks={d["id"]: ChunkRecord(**d) for d in chunk_rows},
        entities={d["key"]: EntityRecord.from_json(d) for d in entity_rows},
        facts={d["id"]: FactRecord.from_json(d) for d in fact_rows},
        synonyms=SynonymPairs(((a, b), float(s)) for a, b, s in read_json(folder / "synonyms.json")))
    ids = read_json(folder / "vector_ids.json")
    for name in ("chunks", "entities", "facts"):
        matrix_path = folder / f"{name}.npy"
        if matrix_path.is_file():
            matrix = np.load(matrix_path, mmap_mode="r", allow_pickle=False)
            if matrix.ndim != 2 or matrix.shape[1] != dim or matrix.dtype != np.float32:
                raise ValueError(f"{matrix_path.name}: a {matrix.dtype} matrix of shape {matrix.shape}, expected (rows, {dim}) float32")
        else:
            flat = faiss.read_index(str(folder / f"{name}.faiss"))
            if flat.d != dim:
                raise ValueError(f"{name}.faiss: dimension {flat.d}, expected {dim}")
            matrix = flat.reconstruct_n(0, flat.ntotal) if flat.ntotal else np.zeros((0, dim), np.float32)
        loaded.vectors[name] = VectorTable(dim, ids[name], [matrix])
        loaded.vectors[name].saved_rows = 0  # not in segments yet: the next save writes them
    snapshot = None
    if "graph.npz" not in missing:
        with np.load(folder / "graph.npz", allow_pickle=False) as arrays:
            snapshot = {k: arrays[k] for k in arrays.files}
    rows = {"chunks": [d["id"] for d in chunk_rows], "entities": [d["key"] for d in entity_rows],
            "facts": [d["id"] for d in fact_rows]}
    return loaded, rows, snapshot
