"""C-HNSW persistence: one ``.npz`` of arrays plus one ``.json`` of metadata (no pickle).

Each file is written to a temporary name and renamed into place; the JSON, written last, records the
arrays' SHA-256, so a half-finished pair is detected on load. :meth:`graph.chnsw.CHNSW.save` /
:meth:`~graph.chnsw.CHNSW.load` call :func:`save_chnsw` / :func:`read_chnsw`.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import numpy as np

from ..fileio import sha256_file

FORMAT_VERSION = 1
ARRAYS_FILE = "chnsw_arrays.npz"
META_FILE = "chnsw.json"

__all__ = ["ARRAYS_FILE", "CHNSWNotFoundError", "CorruptCHNSWError", "FORMAT_VERSION", "META_FILE",
           "read_chnsw", "save_chnsw"]


class CHNSWNotFoundError(FileNotFoundError):
    """No saved C-HNSW index in the folder."""


class CorruptCHNSWError(ValueError):
    """The saved C-HNSW files are unreadable, inconsistent or were written by an unknown format."""


def save_chnsw(folder: str | os.PathLike, arrays: dict[str, np.ndarray], meta: dict[str, Any]) -> None:
    """Write ``arrays`` to ``chnsw_arrays.npz`` and ``meta`` (plus the format version and the arrays'
    SHA-256) to ``chnsw.json`` in ``folder`` (created if needed), each through a temporary file."""
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    tmp_arrays = folder / f".{ARRAYS_FILE}.tmp"
    with open(tmp_arrays, "wb") as f:
        np.savez(f, **arrays)
        f.flush()
        os.fsync(f.fileno())
    meta = {"format_version": FORMAT_VERSION, **meta, "arrays_sha256": sha256_file(tmp_arrays)}
    tmp_meta = folder / f".{META_FILE}.tmp"
    with open(tmp_meta, "w", encoding="utf-8") as f:
        json.dump(meta, f, indent=1)
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp_arrays, folder / ARRAYS_FILE)
    os.replace(tmp_meta, folder / META_FILE)


def read_chnsw(folder: str | os.PathLike, neighbour_rules: tuple[str, ...]) -> dict[str, Any]:
    """The checked contents of a folder written by :func:`save_chnsw`: ``vectors``, ``links``, ``down``
    (lists per layer), ``entry``, ``M``, ``ef_construction``, ``seed``, ``neighbour_rule`` and ``meta``.

    Raises :class:`CHNSWNotFoundError` when a file is missing and :class:`CorruptCHNSWError` when the
    files are unreadable, inconsistent or of an unknown format.
    """
    folder = Path(folder)
    meta_path, arrays_path = folder / META_FILE, folder / ARRAYS_FILE
    for path in (meta_path, arrays_path):
        if not path.is_file():
            raise CHNSWNotFoundError(f"no C-HNSW index in {folder}: {path.name} is missing")
    try:
        meta = json.loads(meta_path.read_text(encoding="utf-8"))
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise CorruptCHNSWError(f"{meta_path}: not valid JSON ({exc})") from exc
    if not isinstance(meta, dict) or meta.get("format_version") != FORMAT_VERSION:
        raise CorruptCHNSWError(f"{meta_path}: unknown format (expected format_version {FORMAT_VERSION})")
    if meta.get("arrays_sha256") != sha256_file(arrays_path):
        raise CorruptCHNSWError(f"{arrays_path}: checksum does not match {META_FILE} (corrupt or half-written)")
    try:
        L, sizes, dim, M = int(meta["num_layers"]), list(meta["layer_sizes"]), int(meta["dim"]), int(meta["M"])
        with np.load(arrays_path, allow_pickle=False) as data:
            vectors = [data[f"vectors_{l}"] for l in range(L)]
            links = [data[f"links_{l}"] for l in range(L)]
            down = [data[f"down_{l}"] for l in range(L)]
        entry, ef_construction, seed = int(meta["entry"]), int(meta["ef_construction"]), int(meta["seed"])
        rule = str(meta.get("neighbour_rule", "heuristic"))
    except (KeyError, TypeError, ValueError, OSError) as exc:
        raise CorruptCHNSWError(f"corrupt C-HNSW index in {folder}: {exc}") from exc
    if len(sizes) != L or L < 1 or rule not in neighbour_rules:
        raise CorruptCHNSWError(f"corrupt C-HNSW index in {folder}: bad metadata in {META_FILE}")
    for l in range(L):
        n = sizes[l]
        ok = (vectors[l].shape == (n, dim) and vectors[l].dtype == np.float32
              and links[l].shape == (n, 2 * M) and links[l].dtype == np.int32
              and down[l].shape == (n,) and links[l].max(initial=-1) < n and links[l].min(initial=-1) >= -1
              and (l == 0 or (down[l].min(initial=0) >= 0 and down[l].max(initial=-1) < sizes[l - 1])))
        if not ok:
            raise CorruptCHNSWError(f"corrupt C-HNSW index in {folder}: layer {l} arrays are inconsistent")
    if not 0 <= entry < sizes[-1]:
        raise CorruptCHNSWError(f"corrupt C-HNSW index in {folder}: entry node out of range")
    return {"vectors": vectors, "links": links, "down": down, "entry": entry, "M": M,
            "ef_construction": ef_construction, "seed": seed, "neighbour_rule": rule, "meta": meta}


