"""What a saved version holds, read straight from its segments without loading an index: its rows (tests, audits,
a diff of two versions) and its entities with how many chunks link each (``graphrag-suite methods``)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa

from .folding import columns, fold
from .segment_files import read_segment
from .tables import SEGMENTS, read_tables

__all__ = ["entity_rows", "version_rows"]


def version_rows(version_folder: Path) -> dict[str, Any]:
    """What a saved version holds, as plain rows (for tests, audits and a diff of two versions): ``chunks``,
    ``entities``, ``facts`` (their records' JSON), ``synonyms`` (``[a, b, score]``), ``vector_ids`` and
    ``vectors`` (table -> matrix). Reads the version's manifest; checks nothing (``load`` does)."""
    version_folder = Path(version_folder)
    manifest = json.loads((version_folder / "manifest.json").read_text(encoding="utf-8"))
    loaded = read_tables(version_folder.parent / SEGMENTS, manifest, int(manifest["embed_dim"]))
    return {
        "chunks": [c.to_json() for c in loaded.chunks.values()],
        "entities": [e.to_json() for e in loaded.entities.values()],
        "facts": [f.to_json() for f in loaded.facts.values()],
        "synonyms": [[a, b, s] for (a, b), s in loaded.synonyms.items()],
        "vector_ids": {name: list(t.ids) for name, t in loaded.vectors.items()},
        "vectors": {name: np.array(t.vectors()) for name, t in loaded.vectors.items()},
    }


def entity_rows(version_folder: Path) -> list[dict[str, Any]]:
    """A version's entities as ``{"key", "surface", "type", "chunks": number of chunks linked}`` (format 1 or 2),
    without reading the rest of the index; [] when they cannot be read."""
    import pyarrow.compute as pc

    version_folder = Path(version_folder)
    try:
        manifest = json.loads((version_folder / "manifest.json").read_text(encoding="utf-8"))
        if "tables" not in manifest:  # format 1
            rows = json.loads((version_folder / "entities.json").read_text(encoding="utf-8"))
            return [{"key": r["key"], "surface": r["surface"], "type": r.get("type", ""), "chunks": len(r["chunks"])}
                    for r in rows]
        folder = version_folder.parent / SEGMENTS
        entity_tables = [read_segment(folder / s) for s in manifest["tables"]["entities"]]
        link_tables = [read_segment(folder / s) for s in manifest["tables"]["chunk_links"]]
        at = fold(link_tables, ("id",))
        counts: dict[str, int] = {}
        for s, t in enumerate(link_tables):
            rows_here = [r for s2, r in at.values() if s2 == s]
            if rows_here:
                flat = pc.list_flatten(t.column("entities").take(rows_here))
                for item in pc.value_counts(flat).to_pylist():
                    counts[item["values"]] = counts.get(item["values"], 0) + item["counts"]
        cols = columns(entity_tables, ("surface", "type"))
        return [{"key": k, "surface": cols[s]["surface"][r], "type": cols[s]["type"][r], "chunks": counts.get(k, 0)}
                for k, (s, r) in fold(entity_tables, ("key",)).items()]
    except (OSError, ValueError, KeyError, TypeError, pa.ArrowException):
        return []
