"""The document operations an index made since it was loaded or saved, so a save can re-apply them (a rebase).

Two processes (two ``graphrag-suite index --update``, a server and a CLI) may load the same version, change it
and save. The folder's writer lock orders the saves, but each would save the state it loaded and the first
writer's documents would be lost. So an index loaded from (or saved to) a folder remembers, per document id,
what it did to that document since:

    doc id -> (hash before, document after)

``hash before`` is the document's :func:`~.records.content_hash` in the version the index started from (None:
absent there); ``document after`` is the document as the index now holds it (None: deleted). Several
operations on one document compose into one (insert then delete is nothing at all).

``persist`` compares the version it started from with the folder's ``CURRENT`` under the writer lock. When
another writer saved meanwhile, :func:`apply` replays the operations on the newest version, document by
document (a three-way check):

* the newest version already holds the document as this writer left it: nothing to do;
* it holds the document as this writer found it (the other writer did not touch it): apply the change;
* otherwise both changed the same document differently: :class:`~.storage.IndexConflictError`, and nothing
  is saved.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable, Iterable, Optional

from llama_index.core import Document

from .chunking import document_body
from .records import content_hash
from .row_overlay import table_column
from .storage import IndexConflictError

__all__ = ["DocumentOps", "apply", "document_hashes"]


def _hash_of(doc: Optional[Document]) -> Optional[str]:
    if doc is None:
        return None
    _, title, body = document_body(doc)
    return content_hash(title, body) if body else None  # an empty document is not indexed: as good as deleted


def document_hashes(state, doc_ids: Iterable[str] | None = None) -> dict[str, str]:
    """Document id -> the content hash the chunks of an index ``state`` carry (all documents, or only ``doc_ids``)."""
    wanted = None if doc_ids is None else set(doc_ids)
    out: dict[str, str] = {}
    for doc_id, doc_hash in zip(table_column(state.chunks, "doc_id"), table_column(state.chunks, "doc_hash")):
        if (wanted is None or doc_id in wanted) and doc_id not in out:
            out[doc_id] = doc_hash
    return out


@dataclass
class DocumentOps:
    """Per document: its hash in the version the index started from, and the document it holds now."""

    ops: dict[str, tuple[Optional[str], Optional[Document]]] = field(default_factory=dict)

    def record(self, doc_id: str, before: Optional[str], after: Optional[Document]) -> None:
        """One operation on ``doc_id``: it had hash ``before`` (None: absent) and is now ``after`` (None: gone)."""
        if doc_id in self.ops:
            before = self.ops[doc_id][0]  # the hash in the version the index started from
        if before is None and _hash_of(after) is None:
            self.ops.pop(doc_id, None)  # inserted and deleted again: nothing to re-apply
        else:
            self.ops[doc_id] = (before, after)

    def clear(self) -> None:
        self.ops.clear()

    def __bool__(self) -> bool:
        return bool(self.ops)

    def doc_ids(self) -> list[str]:
        return list(self.ops)


def apply(state, ops: DocumentOps, where: str, replace: Callable[[set[str], list[Document]], None]) -> None:
    """Re-apply ``ops`` on ``state`` (the newest version, just loaded) through ``replace(to_delete, to_insert)`` (one
    change of that index), or raise IndexConflictError and change nothing. ``where`` names the folder for the error
    message.
    """
    if not ops:
        return
    now = document_hashes(state, ops.ops)
    to_delete: set[str] = set()
    to_insert: list[Document] = []
    for doc_id, (before, after) in ops.ops.items():
        target, current = _hash_of(after), now.get(doc_id)
        if current == target:
            continue  # the other writer made the same change
        if current != before:
            raise IndexConflictError(
                f"cannot save to {where}: document {doc_id!r} was changed by another writer since this index was "
                "loaded; nothing was saved (load the index again and redo the change)")
        if current is not None:
            to_delete.add(doc_id)
        if target is not None:
            to_insert.append(after)
    replace(to_delete, to_insert)
