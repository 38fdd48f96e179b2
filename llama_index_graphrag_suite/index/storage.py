"""Atomic, versioned index directories: no pickle, and a crash mid-write never breaks the last good index.

Layout::

    DIR/CURRENT            {"version": "v-000003"}   (replaced atomically with os.replace)
    DIR/v-000003/manifest.json, provenance.json, a graph store's file, artefacts/
    DIR/v-000002/, DIR/v-000001/   older versions, kept for rollback (``keep``, default 3 in all)
    DIR/segments/          the tables' Arrow (older: Parquet) and .npy segments, shared by the versions that list them
                           (``tables.py``): a save adds the rows it changed, not the whole index

A save writes its new segments (each whole, fsynced, then renamed) and a new version into a hidden
``.v-NNNNNN.partial`` folder (files fsynced), renames it to ``v-NNNNNN``, then flips ``CURRENT``. Until the flip,
readers see the previous version. After it, the oldest versions beyond ``keep`` are removed, and so are the segments
no kept version lists. A folder left half-written by a crash is never a ``v-*`` folder, is never pointed to and is
removed by the next save, like the segments such a save wrote. :func:`rollback` points ``CURRENT`` at a kept version;
:func:`list_versions` lists them.

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
import time
import uuid
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Callable, Iterator

from filelock import FileLock, Timeout

from ..fileio import file_stamp, sha256_file

# 1: whole JSON tables and faiss files in every version folder; 2: Parquet table segments; 3: Arrow IPC table
# segments (``segment_files.py``); 4: large vector tables stored list by list, once (``vector_io.py``). Older
# formats are still read; a library that reads only older ones refuses a newer version (IndexFormatError).
FORMAT_VERSION = 4
SEGMENTS = "segments"
SEGMENT_NAME = re.compile(r"[0-9a-f]{32}\.(arrow|parquet|npy)")
MANIFEST = "manifest.json"
CURRENT = "CURRENT"
LOCK = ".lock"
VERSION_NAME = re.compile(r"v-\d{6}")
PARTIAL = re.compile(r"\.v-\d{6}\.partial")  # a version being written (or left by a crash)
WRITE_LOCK_TIMEOUT = 600.0  # seconds a second writer waits for the first before giving up
KEEP_VERSIONS = 3  # versions kept by a save, the new one included (older ones can be rolled back to)


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


class IndexConflictError(IndexError_, RuntimeError):
    """A save found a newer version on disk and could not re-apply this writer's changes on it (nothing was saved)."""


def writer_lock(root: str | os.PathLike, timeout: float = WRITE_LOCK_TIMEOUT) -> FileLock:
    """The index folder's writer lock (held by :func:`save_version`; take it around a longer write too)."""
    root = Path(root)
    root.mkdir(parents=True, exist_ok=True)
    path = root / LOCK
    if path.is_symlink() or (path.exists() and not path.is_file()):  # FileLock would fail with a raw OSError
        kind = "a symbolic link" if path.is_symlink() else "a directory" if path.is_dir() else "not a regular file"
        raise CorruptIndexError(f"the index's writer lock {path} is {kind}; remove it (no writer is using it then)")
    return FileLock(str(path), timeout=timeout)


def _fsync_file(path: Path) -> None:
    with open(path, "rb") as f:
        os.fsync(f.fileno())


def write_json(path: Path, data: Any) -> None:
    # dumps, not dump: dump streams through the pure-Python encoder (the same text), 29 s for the 67 MB provenance
    text = json.dumps(data, ensure_ascii=False, separators=(",", ":"))  # of 1M passages, saved by every batch
    with open(path, "w", encoding="utf-8") as f:
        f.write(text)


def read_json(path: Path) -> Any:
    try:
        with open(path, encoding="utf-8") as f:
            return json.load(f)
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise CorruptIndexError(f"corrupt index file {path}: {exc}") from exc


def _fsync_dir(path: Path) -> None:
    """Make a rename or new file in ``path`` durable (a no-op where directories cannot be opened)."""
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


@contextmanager
def folder_writer(root: str | os.PathLike, timeout: float = WRITE_LOCK_TIMEOUT) -> Iterator[Path]:
    """Hold the folder's writer lock around a check-then-save (pass ``lock_held=True`` to :func:`save_version` inside)."""
    root = Path(root)
    lock = _locked(root, timeout)
    try:
        yield root
    finally:
        lock.release()


def _locked(root: Path, timeout: float):
    lock = writer_lock(root, timeout)
    try:
        lock.acquire()
    except Timeout:
        raise IndexLockedError(f"index at {root} is being written by another process (lock {root / LOCK} "
                               f"held for over {timeout:.0f} s)") from None
    return lock


def save_version(root: str | os.PathLike, write_files: Callable[[Path], dict | None], manifest: dict,
                 timeout: float = WRITE_LOCK_TIMEOUT, keep: int = KEEP_VERSIONS, lock_held: bool = False) -> Path:
    """Write a new version of the index under ``root`` and make it current, holding the writer lock.

    ``write_files(folder)`` writes the artefacts into an empty folder (and segments into ``root/segments``), and
    returns entries to add to the manifest (``segments``: name -> SHA-256 of every segment the version lists;
    ``files``: the SHA-256 of files carried from a saved version); the manifest (with a SHA-256 of every file, so
    corruption is detected on load) is written last. A second writer waits up to ``timeout`` seconds, then gets
    :class:`IndexLockedError`. The newest ``keep`` versions stay. ``lock_held``: the caller holds the lock already.
    """
    root = Path(root)
    if lock_held:
        return _save_locked(root, write_files, manifest, max(1, int(keep)))
    lock = _locked(root, timeout)
    try:
        return _save_locked(root, write_files, manifest, max(1, int(keep)))
    finally:
        lock.release()


def _version_numbers(root: Path) -> list[int]:
    return sorted(int(p.name[2:]) for p in root.iterdir() if VERSION_NAME.fullmatch(p.name) and p.is_dir())


def _save_locked(root: Path, write_files: Callable[[Path], None], manifest: dict, keep: int) -> Path:
    foreign = [p.name for p in root.iterdir() if p.name not in (CURRENT, f".{CURRENT}.tmp", LOCK, SEGMENTS)
               and not VERSION_NAME.fullmatch(p.name) and not PARTIAL.fullmatch(p.name)]
    if foreign:
        raise FileExistsError(f"{root} holds other files ({foreign[0]}, ...); choose an empty or new folder for the index")
    for left in root.iterdir():  # versions a crashed writer left half-written (we hold the lock: none is live)
        if PARTIAL.fullmatch(left.name):
            shutil.rmtree(left, ignore_errors=True)
    numbers = _version_numbers(root)
    name = f"v-{(numbers[-1] + 1 if numbers else 1):06d}"
    partial, folder = root / f".{name}.partial", root / name
    partial.mkdir()
    try:
        extra = write_files(partial) or {}
        # every file, those of method artefacts in sub-folders included (as relative paths)
        files = sorted(p.relative_to(partial).as_posix() for p in partial.rglob("*") if p.is_file())
        manifest = {**manifest, **extra, "format_version": FORMAT_VERSION, "version_id": uuid.uuid4().hex,
                    "files": {f: extra.get("files", {}).get(f) or sha256_file(partial / f) for f in files}}
        write_json(partial / MANIFEST, manifest)
        for f in files + [MANIFEST]:
            _fsync_file(partial / f)
        os.rename(partial, folder)  # a v-* folder is always complete
        _fsync_dir(root)
    except BaseException:
        shutil.rmtree(partial, ignore_errors=True)
        raise
    _point_current(root, name)
    for number in _version_numbers(root)[:-keep]:
        shutil.rmtree(root / f"v-{number:06d}", ignore_errors=True)
    _remove_unlisted_segments(root)
    return folder


def _remove_unlisted_segments(root: Path) -> None:
    """Remove the segments no kept version lists (pruned versions', a failed save's); the lock is held. When a
    kept version's manifest cannot be read, nothing is removed (it may list any of them)."""
    folder = root / SEGMENTS
    if not folder.is_dir():
        return
    listed: set[str] = set()
    for number in _version_numbers(root):
        try:
            manifest = read_json(root / f"v-{number:06d}" / MANIFEST)
        except (OSError, CorruptIndexError):
            return
        if isinstance(manifest, dict) and isinstance(manifest.get("segments"), dict):
            listed.update(manifest["segments"])
    for path in folder.iterdir():
        if path.name not in listed and path.name != VERIFIED:
            path.unlink(missing_ok=True)


# segments/.verified.json: segment name (or version/file path) -> [size, mtime_ns, inode, sha256] of files a load
# hashed and found whole.
# A load hashes a segment again only when its file is not the one recorded (size, modification time, inode): a
# 100,000-passage index holds 800 MB of segments, a quarter of its load time when hashed on every load. Only files
# last written VERIFY_AGE_NS before the check are recorded, so a later write always shows in the modification
# time (file times are coarser than a nanosecond). Damage that keeps a file's size and times is not seen by a load.
VERIFIED = ".verified.json"
VERIFY_AGE_NS = 2_000_000_000


def verified_record(root: Path) -> dict:
    try:
        known = json.loads((root / SEGMENTS / VERIFIED).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return known if isinstance(known, dict) else {}


def remember_verified(root: Path, known: dict) -> None:
    """Write the record of verified segments (best effort: a read-only index is hashed on every load)."""
    tmp = root / SEGMENTS / f".{VERIFIED}.{os.getpid()}.tmp"
    try:
        write_json(tmp, known)
        os.replace(tmp, root / SEGMENTS / VERIFIED)
    except OSError:
        tmp.unlink(missing_ok=True)


def check_segments(root: Path, manifest: dict, verify: bool = True) -> None:
    """The segments a version lists: well-named files in ``root/segments`` (no symlink), each matching its checksum
    (``verify``: hashed, unless recorded as verified and unchanged since, see :data:`VERIFIED`); CorruptIndexError
    otherwise."""
    segments = manifest.get("segments", {})
    if not isinstance(segments, dict) or not all(isinstance(v, str) for v in segments.values()):
        raise CorruptIndexError(f"corrupt index at {root}: {MANIFEST} has a malformed segment list")
    known = verified_record(root) if verify else {}
    fresh, now = {}, time.time_ns()
    for name, digest in segments.items():
        path = root / SEGMENTS / name
        if not SEGMENT_NAME.fullmatch(name) or path.is_symlink():
            raise CorruptIndexError(f"corrupt index at {root}: segment {name!r} is not a segment file of the index")
        if not path.is_file():
            raise CorruptIndexError(f"corrupt index at {root}: segment {name} is missing")
        if not verify:
            continue
        st = path.stat()
        stamp = file_stamp(st, digest)
        if known.get(name) == stamp:
            continue
        if sha256_file(path) != digest:
            raise CorruptIndexError(f"corrupt index at {root}: segment {name} does not match its checksum")
        if now - st.st_mtime_ns >= VERIFY_AGE_NS:
            fresh[name] = stamp
    if fresh:
        listed = {p.name for p in (root / SEGMENTS).iterdir()}
        remember_verified(root, {k: v for k, v in {**known, **fresh}.items() if k in listed or "/" in k})  # "/": files of versions


def _point_current(root: Path, name: str) -> None:
    tmp = root / f".{CURRENT}.tmp"
    # The version's unique id beside its name: a folder emptied and saved again reuses names, never ids.
    write_json(tmp, {"version": name, "id": _version_id(root / name)})
    _fsync_file(tmp)
    os.replace(tmp, root / CURRENT)  # the atomic step
    _fsync_dir(root)


def current_version(root: str | os.PathLike) -> str | None:
    """The version folder ``CURRENT`` names (unchecked), or None when there is none or it is unreadable."""
    try:
        pointer = json.loads(Path(root, CURRENT).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return str(pointer.get("version")) if isinstance(pointer, dict) else None


def _version_id(folder: Path) -> str:
    try:
        manifest = read_json(folder / MANIFEST)
    except (OSError, CorruptIndexError):
        return ""
    return str(manifest.get("version_id", "")) if isinstance(manifest, dict) else ""


def version_token(folder: Path, manifest: dict) -> str:
    """What identifies a loaded version: its name and unique id (``v-000003#<id>``; only the name for
    versions saved before ids existed)."""
    vid = manifest.get("version_id")
    return f"{folder.name}#{vid}" if vid else folder.name


def current_token(root: str | os.PathLike) -> str | None:
    """The :func:`version_token` of the version ``CURRENT`` names now (one small read), or None when there is none."""
    try:
        pointer = json.loads(Path(root, CURRENT).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    if not isinstance(pointer, dict) or not isinstance(pointer.get("version"), str):
        return None
    name = pointer["version"]
    vid = pointer.get("id")
    if vid is None and VERSION_NAME.fullmatch(name):  # CURRENT written before ids: the manifest has it (if any)
        vid = _version_id(Path(root, name))
    return f"{name}#{vid}" if vid else name


def list_versions(root: str | os.PathLike) -> list[dict[str, Any]]:
    """The kept versions, oldest first: ``{"version": N, "name", "current", "created", "counts", "error"}``.

    Manifests are read, not verified (``open_version(root, version=N)`` verifies one); ``error`` says
    why a version's manifest is unreadable (such a version cannot be loaded or rolled back to).
    """
    root = Path(root)
    if not (root / CURRENT).exists():
        raise IndexNotFoundError(f"no index at {root} (no {CURRENT} file)")
    current = current_version(root)
    out = []
    for number in _version_numbers(root):
        name = f"v-{number:06d}"
        row: dict[str, Any] = {"version": number, "name": name, "current": name == current,
                               "created": None, "counts": {}, "error": None}
        try:
            manifest = read_json(root / name / MANIFEST)
            if not isinstance(manifest, dict):
                raise CorruptIndexError("manifest is not a JSON object")
            row["created"], row["counts"] = manifest.get("created"), manifest.get("counts") or {}
        except (OSError, CorruptIndexError) as exc:
            row["error"] = str(exc).splitlines()[0]
        out.append(row)
    return out


def rollback(root: str | os.PathLike, version: int, timeout: float = WRITE_LOCK_TIMEOUT) -> Path:
    """Make the kept version ``version`` current (checked first), holding the writer lock; returns its folder.

    Nothing is deleted: the versions after it stay and can be rolled forward to the same way.
    """
    root = Path(root)
    if not root.is_dir() or not _version_numbers(root):  # fail before a lock file is made in a foreign folder
        raise IndexNotFoundError(f"no index at {root} (no version folders)")
    lock = _locked(root, timeout)
    try:
        folder, _ = open_version(root, version=version)
        _point_current(root, folder.name)
        return folder
    finally:
        lock.release()


def open_version(root: str | os.PathLike, verify: bool = True, version: int | None = None) -> tuple[Path, dict]:
    """The folder and manifest of the current version (or of kept version ``version``), checked; clear errors otherwise."""
    root = Path(root)
    if not root.is_dir():
        raise IndexNotFoundError(f"no index at {root} (folder does not exist)")
    if version is None and not (root / CURRENT).exists():
        raise IndexNotFoundError(f"no index at {root} (no {CURRENT} file; build one with `graphrag-suite index`)")
    if version is not None:
        name = f"v-{max(int(version), 0):06d}"
        if int(version) < 1 or not (root / name).is_dir():
            kept = ", ".join(str(n) for n in _version_numbers(root)) or "none"
            raise IndexNotFoundError(f"index at {root} has no version {version} (kept versions: {kept})")
    else:
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
    if not isinstance(files, dict) or not (files or manifest.get("segments")) or not all(isinstance(v, str) for v in files.values()):
        raise CorruptIndexError(f"corrupt index at {root}: {MANIFEST} lists no file checksums")
    fmt = manifest.get("format_version")
    if not isinstance(fmt, int):
        raise CorruptIndexError(f"corrupt index at {root}: manifest has no format_version")
    if fmt > FORMAT_VERSION:
        raise IndexFormatError(
            f"index at {root} has format {fmt}, newer than this library reads ({FORMAT_VERSION}); upgrade llama-index-graphrag-suite"
        )
    inside = folder.resolve()
    for name in files:
        path = folder / name
        if path.is_symlink() or not path.resolve().is_relative_to(inside):
            raise CorruptIndexError(f"corrupt index at {root}: {name} is a symlink or lies outside {folder.name}")
    check_segments(root, manifest, verify)
    if verify:
        for name, digest in files.items():
            path = folder / name
            if not path.is_file():
                raise CorruptIndexError(f"corrupt index at {root}: {name} is missing")
            if sha256_file(path) != digest:
                raise CorruptIndexError(f"corrupt index at {root}: {name} does not match its checksum")
    return folder, manifest
