"""The index's PropertyGraphStore as a projection of its tables: :class:`StoreMirror`, the one writer of the store.

Every store write the index makes goes through it: an insert upserts what it added, a delete removes what went and
writes back what survives around it, a rolled-back change writes back the rows it touched (``journal.py``), a load
into an empty store or a server fills it, and a lazy ``simple`` store is filled on its first use
(``lazy_store.py``). Records become LlamaIndex nodes and relations in one place (:func:`entity_node`,
:func:`chunk_text_node`, :func:`fact_relation`).
"""

from __future__ import annotations

import contextlib
import weakref
from typing import Any, Iterable, Iterator

from llama_index.core.graph_stores.types import EntityNode, PropertyGraphStore, Relation
from llama_index.core.schema import NodeRelationship, RelatedNodeInfo, TextNode

from ..extractors.statistical import CONTAINS, ENTITY_LABEL, SYNONYM
from .lazy_store import mirroring
from .records import FactRecord

__all__ = ["StoreMirror", "chunk_text_node", "entity_node", "fact_relation"]


def entity_node(state, key: str) -> EntityNode:
    e = state.entities[key]
    # The whole node from the tables (attributes included): upserting it again never loses what an extractor said.
    return EntityNode(name=key, label=ENTITY_LABEL, properties={"surface": e.surface, **e.attributes})


def chunk_text_node(state, cid: str) -> TextNode:
    c = state.chunks[cid]
    return TextNode(text=c.text, id_=cid, metadata={"doc_id": c.doc_id, "title": c.title},
                    relationships={NodeRelationship.SOURCE: RelatedNodeInfo(node_id=c.doc_id)})


def fact_relation(f: FactRecord) -> Relation:
    return Relation(label=f.predicate, source_id=f.subject, target_id=f.object,
                    properties={"text": f.text, "kind": f.kind, "fact_id": f.id})


class StoreMirror:
    """Writes ``state``'s tables into ``state.property_graph_store`` (see the module docstring).

    ``owner`` is the index a lazy simple store is bound to (held weakly: the index holds this mirror): its own
    writes are not outside writes of that store, and are skipped while nobody has used the store yet.
    """

    def __init__(self, state: Any, owner: Any) -> None:
        self.state = state
        self._owner = weakref.ref(owner)

    def _upsert_chunks(self, store: PropertyGraphStore, chunk_ids: Iterable[str]) -> None:
        # upsert_llama_nodes stores the node as LlamaIndex expects, so get_llama_nodes() and
        # PGRetriever(include_text=True) find the chunk text behind a triple.
        store.upsert_llama_nodes([chunk_text_node(self.state, c) for c in chunk_ids])

    def _relations_of_chunks(self, chunk_ids: Iterable[str]) -> list[Relation]:
        return [Relation(label=CONTAINS, source_id=cid, target_id=key, properties={"kind": CONTAINS})
                for cid in chunk_ids for key in self.state.chunks[cid].entities]

    @contextlib.contextmanager
    def live(self) -> Iterator[PropertyGraphStore | None]:
        """The store to write a change of the tables into, or None while it needs none.

        The one place that decides whether the mirror is live: a lazy ``simple`` store nobody has used yet
        needs no updates (its first use fills it from the tables as they are then, ``lazy_store.py``);
        every other store, a used lazy one included, is kept in step.
        """
        store = self.state.property_graph_store
        with mirroring(store, self._owner()) as live:
            if live and self.state.journal is not None:
                self.state.journal.mirrored = True  # a rollback of this change writes the store back
            yield store if live else None

    def upsert(self, chunk_ids: list[str], entity_ids: Iterable[str], fact_ids: Iterable[str]) -> None:
        """After an insert: the rows it added or changed."""
        with self.live() as store:
            if store is not None:
                self.write(store, chunk_ids, entity_ids, fact_ids)

    def upsert_all(self) -> None:
        """Upsert the whole tables into the store (a store filled on load, one restored after a failed refresh)."""
        self.upsert(list(self.state.chunks), set(self.state.entities), list(self.state.facts))

    def fill(self, store: PropertyGraphStore) -> None:
        """Write the whole tables into ``store``, unconditionally (how a lazy store is filled on first use)."""
        self.write(store, list(self.state.chunks), set(self.state.entities), list(self.state.facts))

    def write(self, store: PropertyGraphStore, chunk_ids: list[str], entity_ids: Iterable[str],
              fact_ids: Iterable[str]) -> None:
        state = self.state
        self._upsert_chunks(store, chunk_ids)
        store.upsert_nodes([entity_node(state, k) for k in entity_ids])
        rels = [fact_relation(state.facts[f]) for f in fact_ids] + self._relations_of_chunks(chunk_ids)
        rels += [Relation(label=SYNONYM, source_id=a, target_id=b, properties={"kind": SYNONYM, "score": s})
                 for (a, b), s in state.synonyms.touching(entity_ids)]
        store.upsert_relations(rels)

    def restore(self, chunk_ids: list[str], entity_ids: list[str], fact_ids: list[str], added: list[str]) -> None:
        """After a rollback (journal.py): the store's nodes of rows the failed change added go, and the rows it
        changed or removed are written again, with everything around them."""
        state = self.state
        with self.live() as store:
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
            self.write(store, chunks, entities | endpoints, sorted(facts))

    def delete(self, deleted_ids: set[str], gone_chunks: set[str], gone_entities: set[str]) -> None:
        """After a delete changed the tables, before the snapshot is rebuilt: remove ``deleted_ids`` (gone chunks and
        entities, endpoints of gone facts) from the store and write back what survives around them."""
        with self.live() as store:
            if store is not None:
                self._delete(store, deleted_ids, gone_chunks, gone_entities)

    def _delete(self, store: PropertyGraphStore, deleted_ids: set[str], gone_chunks: set[str],
                gone_entities: set[str]) -> None:
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
        store.upsert_nodes([entity_node(state, k) for k in sorted(keep_entities | endpoints)])
        contains_of = [c for c in state.chunks if c in survivors or set(state.chunks[c].entities) & survivors]
        rels = [fact_relation(f) for f in keep_facts] + self._relations_of_chunks(contains_of)
        rels += [Relation(label=SYNONYM, source_id=a, target_id=b, properties={"kind": SYNONYM, "score": s})
                 for (a, b), s in state.synonyms.touching(survivors)]
        if contains_of:  # their chunk nodes must exist before the relations point at them
            self._upsert_chunks(store, (c for c in contains_of if c not in survivors))
        store.upsert_relations(rels)
