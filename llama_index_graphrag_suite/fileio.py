"""File helpers shared by the index's storage and the C-HNSW files (stdlib only, so any room may import it)."""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

__all__ = ["file_stamp", "sha256_file"]


def sha256_file(path: str | Path) -> str:
    """Hex SHA-256 of a file, read in 1 MiB blocks (files can be larger than memory allows twice)."""
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def file_stamp(st: os.stat_result, digest: str) -> list:
    """``[size, mtime_ns, inode, sha256]``: what a record of verified files (``index/storage.py``, VERIFIED) keeps of a
    file whose checksum was ``digest`` when it had the status ``st``; a file that no longer matches was changed."""
    return [st.st_size, st.st_mtime_ns, st.st_ino, digest]
