"""Atomic, versioned index directories: no pickle, and a crash mid-write never breaks the last good index.

Layout::

    DIR/CURRENT            {"version": "v-000003"}   (replaced atomically with os.replace)
    DIR/v-000003/manifest.json, *.json, *.npy, *.npz, *.faiss

A save writes a new ``v-*`` folder completely (files fsynced), then flips ``CURRENT``. Until the flip,
readers see the previous version; after it, older versions are removed. A folder left half-written
by a crash is never pointed to and is cleaned up by the next save.

Writers take ``DIR/.lock`` (``filelock``, an OS-level lock released when the process dies), so two
processes saving into one folder run one after the other instead of deleting each other's version.
Loading is contained: ``CURRENT`` must name a ``v-NNNNNN`` child folder, and neither it nor any file the
manifest lists may be a symlink or lie outside that folder.
"""

from __future__ import annotations

import json
import os
import re
import shutil
from pathlib import Path
from typing import Any, Callable

from filelock import FileLock, Timeout

from ..fileio import sha256_file

FORMAT_VERSION = 1
MANIFEST = "manifest.json"
CURRENT = "CURRENT"
LOCK = ".lock"
VERSION_NAME = re.compile(r"v-\d{6}")
WRITE_LOCK_TIMEOUT = 600.0  # seconds a second writer waits for the first before giving up


class IndexError_(Exception):
    """Base class for index loading errors (name avoids shadowing the builtin IndexError)."""


class IndexNotFoundError(IndexError_, FileNotFoundError):
    pass


class CorruptIndexError(IndexError_, ValueError):
    pass


class IndexFormatError(IndexError_, ValueError):
    """The index was written by a newer format than this library reads."""


class IndexLockedError(IndexError_, TimeoutError):
    """Another writer holds the index folder's lock for longer than we wait."""


def writer_lock(root: str | os.PathLike, timeout: float = WRITE_LOCK_TIMEOUT) -> FileLock:
    """The index folder's writer lock (held by :func:`save_version`; take it around a longer write too)."""
    root = Path(root)
    root.mkdir(parents=True, exist_ok=True)
    return FileLock(str(root / LOCK), timeout=timeout)


def _fsync_file(path: Path) -> None:
    with open(path, "rb") as f:
        os.fsync(f.fileno())


def write_json(path: Path, data: Any) -> None:
    with open(path, "w", encoding="utf-8") as f:
        json.dump(data, f, ensure_ascii=False, separators=(",", ":"))


def read_json(path: Path) -> Any:
    try:
        with open(path, encoding="utf-8") as f:
            return json.load(f)
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise CorruptIndexError(f"corrupt index file {path}: {exc}") from exc


def save_version(root: str | os.PathLike, write_files: Callable[[Path], None], manifest: dict,
                 timeout: float = WRITE_LOCK_TIMEOUT) -> Path:
    """Write a new version of the index under ``root`` and make it current, holding the writer lock.

    ``write_files(folder)`` writes the artefacts into an empty folder; the manifest (with a SHA-256
    of every file, so corruption is detected on load) is written last. A second writer waits up to
    ``timeout`` seconds, then gets :class:`IndexLockedError`.
    """
    root = Path(root)
    lock = writer_lock(root, timeout)
    try:
        with lock:
            return _save_locked(root, write_files, manifest)
    except Timeout:
        raise IndexLockedError(f"index at {root} is being written by another process (lock {root / LOCK} "
                               f"held for over {timeout:.0f} s)") from None


def _save_locked(root: Path, write_files: Callable[[Path], None], manifest: dict) -> Path:
    foreign = [p.name for p in root.iterdir()
               if p.name not in (CURRENT, f".{CURRENT}.tmp", LOCK) and not p.name.startswith("v-")]
    if foreign:
        raise FileExistsError(f"{root} holds other files ({foreign[0]}, ...); choose an empty or new folder for the index")
    numbers = [int(p.name[2:]) for p in root.glob("v-*") if p.name[2:].isdigit()]
    folder = root / f"v-{(max(numbers) + 1 if numbers else 1):06d}"
    folder.mkdir()
    try:
        write_files(folder)
        # every file, those of method artefacts in sub-folders included (as relative paths)
        files = sorted(p.relative_to(folder).as_posix() for p in folder.rglob("*") if p.is_file())
        manifest = {**manifest, "format_version": FORMAT_VERSION,
                    "files": {name: sha256_file(folder / name) for name in files}}
        write_json(folder / MANIFEST, manifest)
        for name in files + [MANIFEST]:
            _fsync_file(folder / name)
        tmp = root / f".{CURRENT}.tmp"
        write_json(tmp, {"version": folder.name})
        _fsync_file(tmp)
        os.replace(tmp, root / CURRENT)  # the atomic step
    except BaseException:
        shutil.rmtree(folder, ignore_errors=True)
        raise
    for old in root.glob("v-*"):
        if old != folder:
            shutil.rmtree(old, ignore_errors=True)
    return folder


def open_version(root: str | os.PathLike, verify: bool = True) -> tuple[Path, dict]:
    """The folder and manifest of the current version, checked; clear errors otherwise."""
    root = Path(root)
    if not root.is_dir():
        raise IndexNotFoundError(f"no index at {root} (folder does not exist)")
    if not (root / CURRENT).exists():
        raise IndexNotFoundError(f"no index at {root} (no {CURRENT} file; build one with `graphrag-suite index`)")
    pointer = read_json(root / CURRENT)
    if not isinstance(pointer, dict) or "version" not in pointer:
        raise CorruptIndexError(f"corrupt index at {root}: bad {CURRENT} file")
    name = str(pointer["version"])
    if not VERSION_NAME.fullmatch(name):  # never ../elsewhere or an absolute path
        raise CorruptIndexError(f"corrupt index at {root}: {CURRENT} names {name!r}, not a version folder of the index")
    folder = root / name
    if folder.is_symlink() or not folder.is_dir():
        raise CorruptIndexError(f"corrupt index at {root}: {name} is missing or a symlink")
    if not (folder / MANIFEST).is_file() or (folder / MANIFEST).is_symlink():
        raise CorruptIndexError(f"corrupt index at {root}: {folder.name}/{MANIFEST} is missing")
    manifest = read_json(folder / MANIFEST)
    if not isinstance(manifest, dict):
        raise CorruptIndexError(f"corrupt index at {root}: {MANIFEST} is not a JSON object")
    files = manifest.get("files")
    if not isinstance(files, dict) or not files or not all(isinstance(v, str) for v in files.values()):
        raise CorruptIndexError(f"corrupt index at {root}: {MANIFEST} lists no file checksums")
    version = manifest.get("format_version")
    if not isinstance(version, int):
        raise CorruptIndexError(f"corrupt index at {root}: manifest has no format_version")
    if version > FORMAT_VERSION:
        raise IndexFormatError(
            f"index at {root} has format {version}, newer than this library reads ({FORMAT_VERSION}); upgrade llama-index-graphrag-suite"
        )
    inside = folder.resolve()
    for name in files:
        path = folder / name
        if path.is_symlink() or not path.resolve().is_relative_to(inside):
            raise CorruptIndexError(f"corrupt index at {root}: {name} is a symlink or lies outside {folder.name}")
    if verify:
        for name, digest in files.items():
            path = folder / name
            if not path.is_file():
                raise CorruptIndexError(f"corrupt index at {root}: {name} is missing")
            if sha256_file(path) != digest:
                raise CorruptIndexError(f"corrupt index at {root}: {name} does not match its checksum")
    return folder, manifest
