"""Re-ingesting documents: which are new, changed or unchanged, and undoing a refresh that fails half-way.

Used by :func:`~.update.sync` (and ``refresh`` / ``refresh_ref_docs``). A document's
identity is its id (``documents.document_key``: our ``doc_id``, else a ``SimpleDirectoryReader``
file path); whether it changed is decided by :func:`~.records.content_hash` of its title and text,
stored on each of its chunks (``ChunkRecord.doc_hash``). Indexes saved before the hash existed have
``""`` there, so each of their documents counts as changed once and is re-indexed.

A changed document is replaced by a delete followed by an insert, as one change of the index's journal
(``journal.py``): if the insert fails (the LLM server is down, say), the delete is rolled back with it, so the
document is not lost.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from typing import Sequence

from llama_index.core import Document

from .chunking import document_body
from .records import content_hash

log = logging.getLogger(__name__)

__all__ = ["RefreshPlan", "RefreshResult", "plan_refresh"]


@dataclass
class RefreshResult:
    """What a refresh did: document ids by outcome, and one flag per input document.

    ``changed[i]`` is True when input document ``i`` was inserted or updated (LlamaIndex's
    ``refresh_ref_docs`` returns exactly this list).
    """

    inserted: list[str] = field(default_factory=list)
    updated: list[str] = field(default_factory=list)
    unchanged: list[str] = field(default_factory=list)
    removed: list[str] = field(default_factory=list)  # only with prune=True: in the index, not in the input
    changed: list[bool] = field(default_factory=list)

    def counts(self) -> dict[str, int]:
        return {"new": len(self.inserted), "changed": len(self.updated), "unchanged": len(self.unchanged),
                "removed": len(self.removed)}


@dataclass
class RefreshPlan:
    result: RefreshResult
    to_delete: set[str]  # changed documents (their old version) and, with prune, documents no longer given
    to_insert: list[Document]  # new documents and the new version of changed ones


def plan_refresh(state, documents: Sequence[Document], prune: bool) -> RefreshPlan:
    """Sort ``documents`` into new / changed / unchanged against the index ``state`` (which must not change meanwhile)."""
    stored: dict[str, str] = {}
    for rec in state.chunks.values():
        stored.setdefault(rec.doc_id, rec.doc_hash)
    result, to_delete, to_insert, seen = RefreshResult(), set(), [], set()
    for doc in documents:
        doc_id, title, body = document_body(doc)
        if doc_id in seen:
            raise ValueError(f"document {doc_id!r} is given twice; each document id may appear once in a refresh")
        seen.add(doc_id)
        if doc_id not in stored:
            if not body:  # nothing to index, and nothing indexed before: nothing changes
                log.warning("skipping empty document %s", doc_id)
                result.unchanged.append(doc_id)
                result.changed.append(False)
                continue
            result.inserted.append(doc_id)
            to_insert.append(doc)
        elif stored[doc_id] and stored[doc_id] == content_hash(title, body):
            result.unchanged.append(doc_id)
            result.changed.append(False)
            continue
        else:  # changed, emptied (delete only), or indexed before hashes were stored
            result.updated.append(doc_id)
            to_delete.add(doc_id)
            if body:
                to_insert.append(doc)
        result.changed.append(True)
    if prune:
        result.removed = sorted(set(stored) - seen)
        to_delete.update(result.removed)
    return RefreshPlan(result, to_delete, to_insert)
