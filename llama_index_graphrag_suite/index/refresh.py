"""Re-ingesting documents: which are new, changed or unchanged, and undoing a refresh that fails half-way.

Used by :meth:`~.mutation.IndexMutation.sync` (and ``refresh`` / ``refresh_ref_docs``). A document's
identity is its id (``documents.document_key``: our ``doc_id``, else a ``SimpleDirectoryReader``
file path); whether it changed is decided by :func:`~.records.content_hash` of its title and text,
stored on each of its chunks (``ChunkRecord.doc_hash``). Indexes saved before the hash existed have
``""`` there, so each of their documents counts as changed once and is re-indexed.

A changed document is replaced by a delete followed by an insert. If the insert fails (the LLM server
is down, say), the delete must not stand, or the document would be lost: :class:`Checkpoint` copies
what insert and delete change beforehand and puts it back.
"""

from __future__ import annotations

import copy
import logging
from dataclasses import dataclass, field, replace
from typing import Sequence

import faiss
from llama_index.core import Document

from .build import document_body
from .records import content_hash
from .vectors import VectorTable

log = logging.getLogger(__name__)

__all__ = ["Checkpoint", "RefreshPlan", "RefreshResult", "plan_refresh"]


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


def plan_refresh(index, documents: Sequence[Document], prune: bool) -> RefreshPlan:
    """Sort ``documents`` into new / changed / unchanged against the index (which must not change meanwhile)."""
    stored: dict[str, str] = {}
    for rec in index.chunks.values():
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


def _clone(table: VectorTable | None) -> VectorTable | None:
    if table is None:
        return None
    return VectorTable(table.dim, list(table.ids), faiss.clone_index(table.index))


class Checkpoint:
    """A copy of everything ``insert`` and ``delete`` change on an index, to put back with :meth:`restore`.

    Costs a copy of the tables and vector tables (memory for one more set of vectors while the refresh
    runs); only taken when a refresh deletes something, since a plain insert undoes itself.
    """

    def __init__(self, index) -> None:
        self.chunks = {c: replace(r, entities=list(r.entities)) for c, r in index.chunks.items()}
        self.entities = {k: replace(e, chunks=set(e.chunks)) for k, e in index.entities.items()}
        self.facts = {f: replace(r, chunks=set(r.chunks)) for f, r in index.facts.items()}
        self.synonyms = dict(index.synonyms)
        self.provenance = copy.deepcopy(index._provenance)
        self.build_info = copy.deepcopy(index.build_info)
        stats = index._stats
        self.stats = None if stats is None else replace(stats, doc_freq=stats.doc_freq.copy())
        self.vectors = [_clone(t) for t in (index.chunk_vectors, index.entity_vectors, index.fact_vectors)]
        # The snapshot is replaced, never changed in place: keeping the object (and the memo and saved
        # artefacts that belong to it) means a restored index need not rebuild ArchRAG's hierarchy etc.
        self.snapshot = index.snapshot
        self.memo = index._memo
        self.saved_artefacts = dict(index._saved_artefacts)

    def restore(self, index) -> None:
        """Put the index back as it was, and write its tables into the PropertyGraphStore again.

        The store is re-written in full (upserts), since the delete removed nodes from it; nodes the
        failed insert may already have written under new ids stay until the next successful refresh.
        """
        index.chunks, index.entities, index.facts = self.chunks, self.entities, self.facts
        index.synonyms, index._provenance, index.build_info = self.synonyms, self.provenance, self.build_info
        index._stats = self.stats
        index.chunk_vectors, index.entity_vectors, index.fact_vectors = self.vectors
        index._refresh_derived(self.snapshot)
        index._memo, index._saved_artefacts = self.memo, self.saved_artefacts
        try:
            index._mirror_all()
        except Exception:  # the tables are whole again; the store is what could not be written
            log.exception("refresh failed and its property graph store could not be restored in full")
