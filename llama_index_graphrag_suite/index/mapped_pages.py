"""A loaded index's segment files are memory-mapped (``segment_files.py``): the pages a query reads stay mapped.

Every vector row and table page a query touches joins the process's resident set as a *file-backed* page
(``RssFile`` in ``/proc/PID/status``): clean copies of the segment files, which the kernel may drop at any time and
read again. A serving process asked a few hundred questions at 1,000,000 passages holds gigabytes of them, so its
RSS says little about what it needs. :func:`release` unmaps those pages from the process (``madvise(MADV_DONTNEED)``
on the read-only mappings of the index's folder): they stay in the kernel's page cache (the system's
``buff/cache``, shared with any other process reading the same files), and a later read maps them again (a minor
fault, no disk read while the cache holds them). Segment files never change once written, so nothing is lost.
:class:`MappedBudget` does that when the file-backed part of the process's RSS passes a bound.

Linux only: elsewhere (no ``/proc/self/maps``) both do nothing.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import os
import threading
from pathlib import Path

__all__ = ["MappedBudget", "file_backed_mb", "release", "trim_heap"]

MADV_DONTNEED = 4  # <sys/mman.h> on Linux: for a shared or unwritten mapping, the pages are read again when touched
_MAPS, _STATUS = Path("/proc/self/maps"), Path("/proc/self/status")
_libc = None


def _c():
    global _libc
    if _libc is None:
        _libc = ctypes.CDLL(ctypes.util.find_library("c") or None, use_errno=True)
        _libc.madvise.argtypes = (ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int)
    return _libc


def _read_only_mappings(folder: Path) -> list[tuple[int, int]]:
    """``(start, end)`` of this process's mappings of files under ``folder`` that cannot be written (``r--``):
    only those may be dropped without losing a change."""
    prefix = str(folder.resolve()) + os.sep
    out = []
    for line in _MAPS.read_text().splitlines():
        parts = line.split(maxsplit=5)
        if len(parts) == 6 and parts[5].startswith(prefix) and parts[1][:2] == "r-":
            start, end = (int(x, 16) for x in parts[0].split("-"))
            out.append((start, end))
    return out


def release(folder: str | Path) -> int:
    """Unmap the resident pages of every read-only mapping of a file under ``folder`` (see the module docstring);
    the mappings stay valid. Returns the bytes of mappings advised (0 where ``/proc/self/maps`` is missing)."""
    if not _MAPS.exists():
        return 0
    madvise, done = _c().madvise, 0
    for start, end in _read_only_mappings(Path(folder)):
        if madvise(start, end - start, MADV_DONTNEED) == 0:
            done += end - start
    return done


def trim_heap() -> bool:
    """Give the C heap's free pages back to the OS (glibc's ``malloc_trim``): a method's first query builds its
    structures through large temporaries, and arrays under glibc's (growing) mmap threshold are freed into the heap,
    where they stay resident. False where there is no ``malloc_trim`` (not glibc)."""
    trim = getattr(_c(), "malloc_trim", None)
    if trim is None:
        return False
    trim(0)
    return True


def _status_mb(field: str) -> float | None:
    try:
        for line in _STATUS.read_text().splitlines():
            if line.startswith(field + ":"):
                return int(line.split()[1]) / 1024
    except OSError:
        return None
    return None


def file_backed_mb() -> float | None:
    """The file-backed part of this process's RSS (``RssFile``), MB; None where ``/proc`` does not say."""
    return _status_mb("RssFile")


class MappedBudget:
    """After each request (:meth:`check`), :func:`release` the index's mapped pages when the process's file-backed
    RSS is above ``limit_mb`` (``None``: never), and :func:`trim_heap` when the anonymous part grew by ``TRIM_MB``
    since the last check that trimmed (a method's first query). One check reads ``/proc/self/status``; a release
    costs a few ms and the next queries' first reads of each page a minor fault."""

    TRIM_MB = 64

    def __init__(self, limit_mb: float | None) -> None:
        self.limit_mb = limit_mb
        self._lock = threading.Lock()  # one check at a time (requests run in a thread pool)
        self._anon_mb = 0.0  # anonymous RSS after the last trim

    def check(self, index) -> bool:
        """Whether the mapped pages were released now."""
        origin = getattr(getattr(index, "state", None), "origin", None)
        if self.limit_mb is None or not self._lock.acquire(blocking=False):
            return False
        try:
            anon = _status_mb("RssAnon")
            if anon is not None and anon > self._anon_mb + self.TRIM_MB and trim_heap():
                self._anon_mb = _status_mb("RssAnon") or anon
            mb = file_backed_mb()
            return origin is not None and mb is not None and mb > self.limit_mb and release(origin[0]) > 0
        finally:
            self._lock.release()
