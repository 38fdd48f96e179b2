"""Deleting and refreshing (upserting) documents: plain functions over the index's state and store mirror.

A delete removes a document's chunks, the relations only it supported and the entities only it mentioned, undoes
what its insert changed in older chunks (``provenance.py``) and writes the store through the mirror
(``mirror.py``).

A refresh re-ingests documents (:func:`plan_refresh` sorts them into new, changed and unchanged). A document's
identity is its id (``documents.document_key``: our ``doc_id``, else a ``SimpleDirectoryReader`` file path);
whether it changed is decided by :func:`~.records.content_hash` of its title and text, stored on each of its
chunks (``ChunkRecord.doc_hash``). Indexes saved before the hash existed have ``""`` there, so each of their
documents counts as changed once and is re-indexed. A changed document is replaced by a delete followed by an
insert, as one change of the index's journal (``journal.py``): if the insert fails (the LLM server is down, say),
the delete is rolled back with it, so the document is not lost.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from typing import Sequence

from llama_index.core import Document

from ..documents import document_key
from ..tracing import traced
from . import build, rows
from .build import BuildContext
from .pending import document_hashes
from .provenance import prune, undo_for_delete
from .chunking import document_body
from .records import content_hash
from .row_overlay import table_column

log = logging.getLogger(__name__)

__all__ = ["RefreshPlan", "RefreshResult", "delete_document", "delete_documents", "plan_refresh", "replace_documents",
           "sync"]


def delete_document(ctx: BuildContext, doc_id: str) -> int:
    """``GraphRAGIndex.delete``: one document, recorded as a pending document operation."""
    state = ctx.state
    with state.lock.writing():
        before = document_hashes(state, [doc_id]).get(doc_id)
        with state.journal.change():  # the rows and the document operation: one commit
            removed = delete_documents(ctx, {doc_id})
            state.journal.document(doc_id, before, None)
        return removed


@traced("index.refresh")
def sync(ctx: BuildContext, documents: Sequence[Document], prune: bool = False) -> RefreshResult:
    """``GraphRAGIndex.sync``: :func:`plan_refresh` as one change under the writer lock, recorded."""
    state = ctx.state
    with state.lock.writing():
        plan = plan_refresh(state, documents, prune)
        before = document_hashes(state, plan.to_delete)
        inserted = {document_key(d)[0]: d for d in plan.to_insert}
        with state.journal.change():  # the rows, the insert's record and the documents: one commit
            replace_documents(ctx, plan.to_delete, plan.to_insert)
            for doc_id in dict.fromkeys([*plan.to_delete, *inserted]):
                state.journal.document(doc_id, before.get(doc_id), inserted.get(doc_id))
        return plan.result


def replace_documents(ctx: BuildContext, to_delete: set[str], to_insert: Sequence[Document]) -> None:
    """Delete ``to_delete`` and insert ``to_insert`` as one change (the writer lock held): if it fails, the
    index is left as it was. Not recorded as pending operations (callers record what they did)."""
    state = ctx.state
    with state.lock.writing():
        with state.journal.change():  # one change: if the insert fails, the delete is rolled back too
            if to_delete:
                delete_documents(ctx, to_delete)
            build.insert_documents(ctx, to_insert)


@traced("index.delete")
def delete_documents(ctx: BuildContext, doc_ids: set[str]) -> int:
    """Remove the documents ``doc_ids`` as one change (a failure half-way rolls it back); returns the chunks removed."""
    with ctx.state.journal.change():
        return _delete_in(ctx, doc_ids)


def _delete_in(ctx: BuildContext, doc_ids: set[str]) -> int:
    state = ctx.state
    journal = state.journal
    gone_chunks = [c for c, doc_id in zip(state.chunks, table_column(state.chunks, "doc_id")) if doc_id in doc_ids]
    missing = set(doc_ids) - {state.chunks[c].doc_id for c in gone_chunks}
    if missing:
        raise KeyError(f"no document {sorted(missing)[0]!r} in the index")
    gone = set(gone_chunks)
    texts = [state.chunks[c].text for c in gone_chunks]
    build.count_name_density(state, texts, -1)  # the journal puts build_info back if the delete fails
    words = state.name_words
    if words is not None:  # else counted from the chunks left, when next needed
        words.add(texts, -1)
        journal.on_undo(lambda: words.add(texts))
    stats = build.entity_statistics(state)
    stats.forget(texts)
    journal.on_undo(lambda: stats.fit(texts))
    gone_entities, gone_facts, touched = set(), set(), set()
    for cid in gone_chunks:
        journal.touch("chunks", cid)
        for key in state.chunks[cid].entities:
            ent = state.entities.get(key)
            if ent is not None:
                journal.touch("entities", key)
                touched.add(key)
                ent.chunks.discard(cid)
                if not ent.chunks:
                    gone_entities.add(key)
    unlinked = undo_for_delete(state, gone, touched, gone_entities)  # surviving chunks that lost a link
    ends = zip(table_column(state.facts, "subject"), table_column(state.facts, "object"))
    reached = [fid for fid, chunks, (s, o) in zip(state.facts, table_column(state.facts, "chunks"), ends)
               if not gone.isdisjoint(chunks) or not chunks or s in gone_entities or o in gone_entities]
    for fid in reached:  # read by key: the record a change edits (row_overlay.py)
        f = state.facts[fid]
        if f.chunks & gone:
            journal.touch("facts", fid)
            f.chunks -= gone
        if not f.chunks or f.subject in gone_entities or f.object in gone_entities:
            journal.touch("facts", fid)
            gone_facts.add(fid)
    gone_syn = [p for p, _ in state.synonyms.touching(gone_entities)]

    deleted_ids = gone | gone_entities | {x for fid in gone_facts for x in (state.facts[fid].subject, state.facts[fid].object)}
    deleted_ids |= unlinked  # deleted from a graph store and written back without the link
    for cid in gone_chunks:
        del state.chunks[cid]
    for key in gone_entities:
        journal.touch("entities", key)
        del state.entities[key]
    for fid in gone_facts:
        del state.facts[fid]
    for p in gone_syn:
        journal.touch("synonyms", p)
        del state.synonyms[p]
    remove_vectors(state, state.chunk_vectors, gone_chunks)
    remove_vectors(state, state.entity_vectors, gone_entities)
    remove_vectors(state, state.fact_vectors, rows.unused_texts(state))
    ctx.mirror.delete(deleted_ids, gone, gone_entities)
    prune(state, gone)
    state.derive()
    return len(gone_chunks)


def remove_vectors(state, table, ids) -> None:
    """Remove rows of a vector table; inside a change, with what puts them back in their places."""
    ids = [i for i in ids if i in table]
    if not ids:
        return
    if state.journal.active:
        checkpoint = table.checkpoint()
        state.journal.on_undo(lambda: table.restore(checkpoint))
    table.remove(ids)


# --- the plan of a refresh ---------------------------------------------------------------------------------------

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
    for doc_id, doc_hash in zip(table_column(state.chunks, "doc_id"), table_column(state.chunks, "doc_hash")):
        stored.setdefault(doc_id, doc_hash)
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
