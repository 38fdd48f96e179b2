"""Deleting and refreshing (upserting) documents, and mirroring the tables into the index's PropertyGraphStore.

A mixin of :class:`~.graph_index.GraphRAGIndex`; it writes ``self.state`` (``state.py``).
"""

from __future__ import annotations

import contextlib
import logging
from typing import Iterable, Iterator, Sequence

from llama_index.core import Document
from llama_index.core.graph_stores.types import (
    EntityNode,
    PropertyGraphStore,
    Relation,
)
from llama_index.core.schema import NodeRelationship, RelatedNodeInfo, TextNode

from ..extractors.statistical import (
    CONTAINS,
    ENTITY_LABEL,
    SYNONYM,
)
from ..tracing import traced
from ..documents import document_key
from .provenance import prune, undo_for_delete
from .lazy_store import mirroring
from .pending import document_hashes
from .pipeline import count_name_density
from .records import FactRecord
from .refresh import RefreshResult, plan_refresh

log = logging.getLogger(__name__)


class IndexMutation:
    """Keeps the PropertyGraphStore in step with the tables; removes and refreshes documents."""

    def _entity_node(self, key: str) -> EntityNode:
        e = self.state.entities[key]
        # The whole node from the tables (attributes included): upserting it again never loses what an extractor said.
        return EntityNode(name=key, label=ENTITY_LABEL, properties={"surface": e.surface, **e.attributes})

    def _chunk_text_node(self, cid: str) -> TextNode:
        c = self.state.chunks[cid]
        return TextNode(text=c.text, id_=cid, metadata={"doc_id": c.doc_id, "title": c.title},
                        relationships={NodeRelationship.SOURCE: RelatedNodeInfo(node_id=c.doc_id)})

    def _upsert_chunks(self, store: PropertyGraphStore, chunk_ids: Iterable[str]) -> None:
        # upsert_llama_nodes stores the node as LlamaIndex expects, so get_llama_nodes() and
        # PGRetriever(include_text=True) find the chunk text behind a triple.
        store.upsert_llama_nodes([self._chunk_text_node(c) for c in chunk_ids])

    def _fact_relation(self, f: FactRecord) -> Relation:
        return Relation(label=f.predicate, source_id=f.subject, target_id=f.object,
                        properties={"text": f.text, "kind": f.kind, "fact_id": f.id})

    def _relations_of_chunks(self, chunk_ids: Iterable[str]) -> list[Relation]:
        return [Relation(label=CONTAINS, source_id=cid, target_id=key, properties={"kind": CONTAINS})
                for cid in chunk_ids for key in self.state.chunks[cid].entities]

    @contextlib.contextmanager
    def _mirror(self) -> Iterator[PropertyGraphStore | None]:
        """The store to write a change of the tables into, or None while it needs none.

        The one place that decides whether the mirror is live: a lazy ``simple`` store nobody has used yet
        needs no updates (its first use fills it from the tables as they are then, ``lazy_store.py``);
        every other store, a used lazy one included, is kept in step.
        """
        store = self.state.property_graph_store
        with mirroring(store, self) as live:
            if live:
                self.state.journal.mirrored = True  # a rollback of this change writes the store back
            yield store if live else None

    def _mirror_upsert(self, chunk_ids: list[str], entity_ids: Iterable[str], fact_ids: Iterable[str]) -> None:
        with self._mirror() as store:
            if store is not None:
                self._write_mirror(store, chunk_ids, entity_ids, fact_ids)

    def _mirror_all(self) -> None:
        """Upsert the whole tables into the store (a store filled on load, one restored after a failed refresh)."""
        self._mirror_upsert(list(self.state.chunks), set(self.state.entities), list(self.state.facts))

    def _fill_mirror(self, store: PropertyGraphStore) -> None:
        """Write the whole tables into ``store``, unconditionally (how a lazy store is filled on first use)."""
        self._write_mirror(store, list(self.state.chunks), set(self.state.entities), list(self.state.facts))

    def _write_mirror(self, store: PropertyGraphStore, chunk_ids: list[str], entity_ids: Iterable[str],
                      fact_ids: Iterable[str]) -> None:
        self._upsert_chunks(store, chunk_ids)
        store.upsert_nodes([self._entity_node(k) for k in entity_ids])
        rels = [self._fact_relation(self.state.facts[f]) for f in fact_ids] + self._relations_of_chunks(chunk_ids)
        rels += [Relation(label=SYNONYM, source_id=a, target_id=b, properties={"kind": SYNONYM, "score": s})
                 for (a, b), s in self.state.synonyms.touching(entity_ids)]
        store.upsert_relations(rels)

    def delete(self, doc_id: str) -> int:
        """Remove a document: its chunks, the relations only it supported, the entities only it mentioned.

        Corpus statistics forget its chunks; entities of the remaining chunks are not re-scored. What
        the document's insert changed in older chunks (entities linked there, co-occurrence relations
        recomputed, types given) is undone too (see ``journal.py``), so an insert followed by the
        delete of the same documents restores the index. Queries in other threads wait for the delete
        to finish (they see the index before or after it). Returns the number of chunks removed.
        Raises KeyError for an unknown document.
        """
        with self.state.lock.writing():
            before = document_hashes(self, [doc_id]).get(doc_id)
            removed = self._delete({doc_id})
            self.state.record(doc_id, before, None)
            return removed

    def refresh(self, documents: Sequence[Document]) -> list[bool]:
        """Upsert: insert new documents, replace changed ones, skip unchanged ones (LlamaIndex's ``refresh_ref_docs``).

        Returns one flag per document, True when it was inserted or updated. A document is known by its
        id (``doc_id`` metadata, a ``SimpleDirectoryReader`` file path, else ``id_``) and changed when its
        title or text is (see ``refresh.py``). :meth:`sync` does the same and says what it did.
        """
        return self.sync(documents).changed

    refresh_ref_docs = refresh  # the name LlamaIndex's indexes use

    @traced("index.refresh")
    def sync(self, documents: Sequence[Document], prune: bool = False) -> RefreshResult:
        """:meth:`refresh`, returning the ids inserted / updated / unchanged / removed.

        ``prune=True`` also deletes the documents in the index that are not among ``documents`` (a
        folder re-read after files were removed). The whole refresh holds the writer lock once: a query
        in another thread sees the index before or after it, never a changed document half replaced.
        If it fails (extraction or embedding raised), the index is left as it was and the error raised.
        """
        with self.state.lock.writing():
            plan = plan_refresh(self, documents, prune)
            before = document_hashes(self, plan.to_delete)
            self._replace_documents(plan.to_delete, plan.to_insert)
            inserted = {document_key(d)[0]: d for d in plan.to_insert}
            for doc_id in dict.fromkeys([*plan.to_delete, *inserted]):
                self.state.record(doc_id, before.get(doc_id), inserted.get(doc_id))
            return plan.result

    def _replace_documents(self, to_delete: set[str], to_insert: Sequence[Document]) -> None:
        """Delete ``to_delete`` and insert ``to_insert`` as one change (the writer lock held): if it fails, the
        index is left as it was. Not recorded as pending operations (callers record what they did)."""
        with self.state.lock.writing():
            with self.state.journal.change():  # one change: if the insert fails, the delete is rolled back too
                if to_delete:
                    self._delete(to_delete)
                self._insert_documents(to_insert)

    @traced("index.delete")
    def _delete(self, doc_ids: set[str]) -> int:
        with self.state.journal.change():  # a failure half-way rolls the delete back (journal.py)
            return self._delete_in(doc_ids)

    def _delete_in(self, doc_ids: set[str]) -> int:
        state = self.state
        journal = state.journal
        gone_chunks = [c for c, rec in state.chunks.items() if rec.doc_id in doc_ids]
        missing = set(doc_ids) - {state.chunks[c].doc_id for c in gone_chunks}
        if missing:
            raise KeyError(f"no document {sorted(missing)[0]!r} in the index")
        gone = set(gone_chunks)
        texts = [state.chunks[c].text for c in gone_chunks]
        count_name_density(self, texts, -1)  # the journal puts build_info back if the delete fails
        words = state.name_words
        if words is not None:  # else counted from the chunks left, when next needed
            words.add(texts, -1)
            journal.on_undo(lambda: words.add(texts))
        stats = self.entity_statistics()
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
        unlinked = undo_for_delete(self.state, gone, touched, gone_entities)  # surviving chunks that lost a link
        for fid, f in state.facts.items():
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
        self._remove_vectors(state.chunk_vectors, gone_chunks)
        self._remove_vectors(state.entity_vectors, gone_entities)
        self._remove_vectors(state.fact_vectors, self._unused_texts())
        with self._mirror() as store:
            if store is not None:
                self._mirror_delete(store, deleted_ids, gone, gone_entities)
        prune(self.state, gone)
        state.derive()
        return len(gone_chunks)

    def _remove_vectors(self, table, ids) -> None:
        """Remove rows of a vector table; inside a change, with what puts them back in their places."""
        ids = [i for i in ids if i in table]
        if not ids:
            return
        if self.state.journal.active:
            checkpoint = table.checkpoint()
            self.state.journal.on_undo(lambda: table.restore(checkpoint))
        table.remove(ids)

    def _mirror_restore(self, chunk_ids: list[str], entity_ids: list[str], fact_ids: list[str], added: list[str]) -> None:
        """After a rollback (journal.py): the store's nodes of rows the failed change added go, and the rows it
        changed or removed are written again, with everything around them."""
        state = self.state
        with self._mirror() as store:
            if store is None:
                return
            if added:
                store.delete(ids=sorted(added))
            chunks = [c for c in chunk_ids if c in state.chunks]
            entities = {k for k in entity_ids if k in state.entities}
            facts = {f for f in fact_ids if f in state.facts}
            facts |= {f for f, rec in state.facts.items() if rec.subject in entities or rec.object in entities}
            chunks += [c for c, rec in state.chunks.items() if c not in set(chunks) and entities.intersection(rec.entities)]
            endpoints = {k for f in facts for k in (state.facts[f].subject, state.facts[f].object)}
            self._write_mirror(store, chunks, entities | endpoints, sorted(facts))

    def _mirror_delete(self, store: PropertyGraphStore, deleted_ids: set[str], gone_chunks: set[str],
                       gone_entities: set[str]) -> None:
        """Remove ``deleted_ids`` (gone chunks and entities, endpoints of gone facts) from the store and write
        back what survives around them. Runs after the tables changed, before the snapshot is rebuilt."""
        state = self.state
        # Which surviving store nodes must be re-written: endpoints of removed facts, and (because
        # some stores delete a node's neighbours with it) the neighbours of everything deleted.
        snap = state.snapshot  # still the one before the delete
        around: set[str] = set()
        for node_id in deleted_ids:
            if snap.has(node_id):
                nbrs, _ = snap.neighbours_of(snap.row(node_id))
                around.update(snap.node_ids[i] for i in nbrs.tolist())
        around |= deleted_ids

        store.delete(ids=sorted(deleted_ids))
        survivors = around - gone_chunks - gone_entities
        keep_chunks = [n for n in survivors if n in state.chunks]
        keep_entities = {n for n in survivors if n in state.entities}
        keep_facts = [f for f in state.facts.values() if f.subject in survivors or f.object in survivors]
        self._upsert_chunks(store, keep_chunks)
        # endpoints of the kept facts may not have been touched; make sure they exist (one call: a database
        # store commits once per call)
        endpoints = {k for f in keep_facts for k in (f.subject, f.object)}
        store.upsert_nodes([self._entity_node(k) for k in sorted(keep_entities | endpoints)])
        contains_of = [c for c in state.chunks if c in survivors or set(state.chunks[c].entities) & survivors]
        rels = [self._fact_relation(f) for f in keep_facts] + self._relations_of_chunks(contains_of)
        rels += [Relation(label=SYNONYM, source_id=a, target_id=b, properties={"kind": SYNONYM, "score": s})
                 for (a, b), s in state.synonyms.touching(survivors)]
        if contains_of:  # their chunk nodes must exist before the relations point at them
            self._upsert_chunks(store, (c for c in contains_of if c not in survivors))
        store.upsert_relations(rels)
