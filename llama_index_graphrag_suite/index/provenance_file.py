"""A loaded version's ``provenance.json``, read when a change first needs it rather than on every load.

The insert records (``provenance.py``) are what a delete undoes; a process that only answers questions never reads
them, and a batched build leaves one record per batch whose lists name every chunk it changed: 68 MB of JSON for
1,000,000 passages, 4 s of a load's CPU to parse and check, and hundreds of MB of Python lists kept after. The file
is checked against its checksum on load, like every file of the version; its records are parsed and checked
(:func:`~.provenance.checked`) on first use: a malformed file is then a :class:`~.storage.CorruptIndexError` naming
the index, at the first insert or delete instead of at the load. A save of an index that never read them links the
file into the new version (a version's files never change) instead of writing it again.
"""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import MutableSequence
from pathlib import Path
from typing import Any, BinaryIO

from .provenance import checked
from .storage import CorruptIndexError

__all__ = ["ProvenanceFile"]


class ProvenanceFile(MutableSequence):
    """The records of ``path`` as a list, read on first use (see the module docstring); ``where``: the index's
    folder, for the error message."""

    def __init__(self, path: Path, where: str) -> None:
        self.path, self._where = Path(path), where
        self._records: list[dict[str, Any]] | None = None
        # held open: another writer may prune this version's folder before a change reads the records
        self._file: BinaryIO | None = open(self.path, "rb")

    @property
    def unread(self) -> bool:
        """Whether the records were never read (the file still says all there is)."""
        return self._records is None

    def records(self) -> list[dict[str, Any]]:
        if self._records is None:
            try:
                self._file.seek(0)
                self._records = checked(json.load(self._file))
            except (OSError, ValueError) as exc:  # JSONDecodeError, UnicodeDecodeError, not insert records
                raise CorruptIndexError(f"corrupt index at {self._where}: {self.path.name}: {exc}") from exc
            self._file.close()
            self._file = None
        return self._records

    def save(self, path: Path) -> None:
        """The unread file into a new version as ``path``: a hard link where it is still there, else a copy."""
        same = self.path.is_file() and os.stat(self.path).st_ino == os.fstat(self._file.fileno()).st_ino
        if same:
            try:
                os.link(self.path, path)
                return
            except OSError:
                pass
        self._file.seek(0)
        with open(path, "wb") as out:
            shutil.copyfileobj(self._file, out)

    def __len__(self) -> int:
        return len(self.records())

    def __getitem__(self, i):  # type: ignore[override]
        return self.records()[i]

    def __setitem__(self, i, value) -> None:  # type: ignore[override]
        self.records()[i] = value

    def __delitem__(self, i) -> None:  # type: ignore[override]
        del self.records()[i]

    def insert(self, i: int, value: dict[str, Any]) -> None:
        self.records().insert(i, value)

    def __iter__(self):
        return iter(self.records())

    def __eq__(self, other: object) -> bool:  # as the list it stands for
        return self.records() == (other.records() if isinstance(other, ProvenanceFile) else other)

    __hash__ = None  # type: ignore[assignment]  # mutable, as a list

    def __repr__(self) -> str:
        return f"ProvenanceFile({self.path}, {'unread' if self.unread else f'{len(self)} records'})"
