"""Files a save carries into its new version unchanged from the loaded one (a method artefact no query used since
the load, the unread provenance file), each with the SHA-256 the loaded version's manifest records for it: a saved
version's files never change, so hashing them again (1.7 GB of ArchRAG artefact at a million passages) would only
repeat the digest; were a file damaged since, a load still finds the mismatch."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

from .storage import MANIFEST, read_json

__all__ = ["carry_folder", "recorded_digests"]


def carry_folder(old: Path, new: Path) -> dict[str, str]:
    """Copy the folder ``old`` of a saved version to ``new``, the same place in the version being written, by hard
    links where the file system allows; returns ``{path in the version: SHA-256}`` for the files the old manifest
    lists."""
    shutil.copytree(old, new, copy_function=_link_or_copy)
    relative = old.relative_to(old.parent.parent)  # e.g. artefacts/<name>: the same place in both versions
    copied = [(relative / p.relative_to(new)).as_posix() for p in new.rglob("*") if p.is_file()]
    return recorded_digests(old.parent.parent, copied)


def recorded_digests(version: Path, files: list[str]) -> dict[str, str]:
    """The SHA-256 that the manifest of the saved version folder ``version`` records for each of ``files`` (paths in
    the version folder) that it lists; nothing when the manifest cannot be read (those files are hashed anew)."""
    try:
        recorded = read_json(version / MANIFEST).get("files", {})
    except (OSError, ValueError, AttributeError):
        return {}
    return {f: recorded[f] for f in files if isinstance(recorded.get(f), str)}


def _link_or_copy(src: str, dst: str) -> None:
    try:
        os.link(src, dst)
    except OSError:
        shutil.copy2(src, dst)
