"""C-HNSW persistence: one ``.npy`` per array plus one ``.json`` of metadata (no pickle).

Each file is written to a temporary name and renamed into place; the JSON, written last, records every
array's SHA-256, so a half-finished set is detected on load. The vectors are memory-mapped read-only on load
(a serving process pages them in as file cache, not as its own memory; in format 1, one ``.npz`` of all
arrays, they were read into RAM, and ``.npz`` files are still read). :meth:`graph.chnsw.CHNSW.save` /
:meth:`~graph.chnsw.CHNSW.load` call :func:`save_chnsw` / :func:`read_chnsw`.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import numpy as np

from ..fileio import sha256_file

FORMAT_VERSION = 2
ARRAYS_FILE = "chnsw_arrays.npz"  # format 1: all arrays in one file
META_FILE = "chnsw.json"

__all__ = ["ARRAYS_FILE", "CHNSWNotFoundError", "CorruptCHNSWError", "FORMAT_VERSION", "META_FILE",
           "read_chnsw", "save_chnsw"]


class CHNSWNotFoundError(FileNotFoundError):
    """No saved C-HNSW index in the folder."""


class CorruptCHNSWError(ValueError):
    """The saved C-HNSW files are unreadable, inconsistent or were written by an unknown format."""


def _write_atomic(path: Path, write) -> Path:
    """``write(file)`` into a temporary name beside ``path``, synced; the temporary path."""
    tmp = path.parent / f".{path.name}.tmp"
    with open(tmp, "wb") as f:
        write(f)
        f.flush()
        os.fsync(f.fileno())
    return tmp


def save_chnsw(folder: str | os.PathLike, arrays: dict[str, np.ndarray], meta: dict[str, Any]) -> None:
    """Write each of ``arrays`` to ``NAME.npy`` and ``meta`` (plus the format version and each array file's
    SHA-256) to ``chnsw.json`` in ``folder`` (created if needed), each through a temporary file."""
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    done = {f"{name}.npy": _write_atomic(folder / f"{name}.npy", lambda f, a=array: np.save(f, a, allow_pickle=False))
            for name, array in arrays.items()}
    meta = {"format_version": FORMAT_VERSION, **meta, "sha256": {name: sha256_file(tmp) for name, tmp in done.items()}}
    tmp_meta = _write_atomic(folder / META_FILE, lambda f: f.write(json.dumps(meta, indent=1).encode("utf-8")))
    for name, tmp in done.items():
        os.replace(tmp, folder / name)
    os.replace(tmp_meta, folder / META_FILE)


def _read_arrays(folder: Path, meta: dict, num_layers: int) -> tuple[list, list, list]:
    """(vectors, links, down) per layer, checked against the checksums ``meta`` records."""
    kinds = ("vectors", "links", "down")
    if meta.get("format_version") == 1:
        arrays_path = folder / ARRAYS_FILE
        if not arrays_path.is_file():
            raise CHNSWNotFoundError(f"no C-HNSW index in {folder}: {ARRAYS_FILE} is missing")
        if meta.get("arrays_sha256") != sha256_file(arrays_path):
            raise CorruptCHNSWError(f"{arrays_path}: checksum does not match {META_FILE} (corrupt or half-written)")
        with np.load(arrays_path, allow_pickle=False) as data:
            return tuple([data[f"{kind}_{l}"] for l in range(num_layers)] for kind in kinds)
    sums = meta.get("sha256")
    out = []
    for kind in kinds:
        layers = []
        for l in range(num_layers):
            path = folder / f"{kind}_{l}.npy"
            if not path.is_file():
                raise CHNSWNotFoundError(f"no C-HNSW index in {folder}: {path.name} is missing")
            if not isinstance(sums, dict) or sums.get(path.name) != sha256_file(path):
                raise CorruptCHNSWError(f"{path}: checksum does not match {META_FILE} (corrupt or half-written)")
            layers.append(np.load(path, mmap_mode="r" if kind != "down" else None, allow_pickle=False))
        out.append(layers)
    return tuple(out)


def read_chnsw(folder: str | os.PathLike, neighbour_rules: tuple[str, ...]) -> dict[str, Any]:
    """The checked contents of a folder written by :func:`save_chnsw`: ``vectors``, ``links``, ``down``
    (lists per layer), ``entry``, ``M``, ``ef_construction``, ``seed``, ``neighbour_rule`` and ``meta``.

    Raises :class:`CHNSWNotFoundError` when a file is missing and :class:`CorruptCHNSWError` when the
    files are unreadable, inconsistent or of an unknown format.
    """
    folder = Path(folder)
    meta_path = folder / META_FILE
    if not meta_path.is_file():
        raise CHNSWNotFoundError(f"no C-HNSW index in {folder}: {META_FILE} is missing")
    try:
        meta = json.loads(meta_path.read_text(encoding="utf-8"))
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise CorruptCHNSWError(f"{meta_path}: not valid JSON ({exc})") from exc
    if not isinstance(meta, dict) or meta.get("format_version") not in (1, FORMAT_VERSION):
        raise CorruptCHNSWError(f"{meta_path}: unknown format (expected format_version 1 or {FORMAT_VERSION})")
    try:
        L, sizes, dim, M = int(meta["num_layers"]), list(meta["layer_sizes"]), int(meta["dim"]), int(meta["M"])
        vectors, links, down = _read_arrays(folder, meta, L)
        entry, ef_construction, seed = int(meta["entry"]), int(meta["ef_construction"]), int(meta["seed"])
        rule = str(meta.get("neighbour_rule", "heuristic"))
    except (KeyError, TypeError, ValueError, OSError) as exc:
        if isinstance(exc, (CHNSWNotFoundError, CorruptCHNSWError)):
            raise
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


