"""A loaded version's ``provenance.json``, read when a change first needs it rather than on every load.

The insert records (``provenance.py``) are what a delete undoes; a process that only answers questions never reads
them, and a batched build leaves one record per batch whose lists name every chunk it changed: 68 MB of JSON for
1,000,000 passages, 4 s of a load's CPU to parse and check, and hundreds of MB of Python lists kept after. The file
is checked against its checksum on load, like every file of the version; its records are parsed and checked
(:func:`~.provenance.checked`) on first use: a malformed file is then a :class:`~.storage.CorruptIndexError` naming
the index, at the first change that reads them (a delete) instead of at the load. A save of an index that never read them links the
file into the new version (a version's files never change) instead of writing it again.

An insert appends its record without reading the others (each batch of a batched build appends one): the records
appended are kept apart until the file is read, and a save writes the file's text with them added at its end, the
same text a save of the whole list writes (``storage.write_json``), without parsing and encoding the records
before them again at every batch.
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
        self._appended: list[dict[str, Any]] = []  # records appended while the file is unread (its list's end)
        # held open: another writer may prune this version's folder before a change reads the records (kept open
        # after a read too: a rollback to a mark taken before it reads the file again)
        self._file: BinaryIO = open(self.path, "rb")

    @property
    def unread(self) -> bool:
        """Whether the records were never read (the file, and the records appended since, say all there is)."""
        return self._records is None

    def records(self) -> list[dict[str, Any]]:
        if self._records is None:
            try:
                self._file.seek(0)
                records = checked(json.load(self._file))
            except (OSError, ValueError) as exc:  # JSONDecodeError, UnicodeDecodeError, not insert records
                raise CorruptIndexError(f"corrupt index at {self._where}: {self.path.name}: {exc}") from exc
            self._records, self._appended = records + self._appended, []
        return self._records

    def append(self, value: dict[str, Any]) -> None:
        if self._records is None:
            self._appended.append(value)
        else:
            self._records.append(value)

    def checkpoint(self) -> tuple:
        """What :meth:`restore` puts back: the list as it is now (the records appended, while it is unread)."""
        return (None, list(self._appended)) if self._records is None else (list(self._records), None)

    def restore(self, mark: tuple) -> None:
        records, appended = mark
        if records is None:  # unread when marked: read from the file again when next needed
            self._records, self._appended = None, list(appended)
        else:
            self._records = list(records)

    @property
    def appended(self) -> int:
        """Records appended since the file was loaded, while it is unread (0: a save links or copies it as it is)."""
        return len(self._appended)

    def save(self, path: Path) -> None:
        """The unread file into a new version as ``path``: a hard link where it is still there, else a copy; with
        the records appended since at the end of its list."""
        if self._appended:
            self._file.seek(0)
            text = self._file.read().decode("utf-8").rstrip()
            if not text.endswith("]"):
                raise CorruptIndexError(f"corrupt index at {self._where}: {self.path.name} is not a JSON list")
            # json.dumps of a list joins its items' texts with the separator: the same text as write_json's
            more = ",".join(json.dumps(r, ensure_ascii=False, separators=(",", ":")) for r in self._appended)
            head = text[:-1].rstrip()
            with open(path, "w", encoding="utf-8") as out:
                out.write(head + ("," if not head.endswith("[") else "") + more + "]")
            return
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
