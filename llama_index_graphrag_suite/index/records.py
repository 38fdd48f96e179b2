"""The index's own tables: chunks, entities, facts and synonym pairs, with who supports what.

These are the canonical content of the graph. The PropertyGraphStore mirrors them (so any LlamaIndex
tool sees the graph), and the derived artefacts (snapshot, vector indexes, BM25) are built from them.
Support sets (which chunks contain an entity, which chunks state a fact) make delete exact.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterator, MutableSet, Sequence
from dataclasses import dataclass, field, fields
from typing import Any

import numpy as np


# slots: no per-record __dict__ (about 260 bytes less per row; an index holds one record per chunk, entity and fact)
@dataclass(slots=True)
class ChunkRecord:
    id: str
    doc_id: str
    text: str
    title: str = ""
    position: int = 0  # chunk number inside its document
    entities: list[str] = field(default_factory=list)  # entity keys this chunk `contains`
    # content_hash() of the document the chunk was cut from (the same on all its chunks): refresh()
    # compares it to re-index only changed documents. "" in indexes saved before it existed, which
    # refresh() treats as changed.
    doc_hash: str = ""

    def to_json(self) -> dict:
        return {f.name: getattr(self, f.name) for f in fields(self)}


# Entity-node properties that are not attributes: the record's own fields, and what LlamaIndex adds itself.
NOT_ATTRIBUTES = frozenset({"surface", "type", "triplet_source_id", "chunk_id"})


def entity_attributes(properties: dict) -> dict[str, str | int | float | bool]:
    """The attributes an extractor gave an entity node (the PathRAG extractor's ``description`` and
    ``entity_type``, say): its properties other than ``NOT_ATTRIBUTES``, JSON scalars only, empty strings
    left out (an empty value never erases a known one)."""
    return {k: v for k, v in properties.items()
            if k not in NOT_ATTRIBUTES and isinstance(v, (str, int, float, bool)) and v != ""}


class ChunkIds(MutableSet):
    """The chunk ids of a loaded entity, made a set only when read.

    An entity read from a loaded version's columns (``entity_columns.py``) while an insert changes it usually only
    gains chunks: the tables and link steps add the new chunks that mention it, and the journal keeps a copy of it
    as it was. A set of every chunk id of an entity written in a large share of the corpus costs what the index
    holds, at every batch of a batched build; this holds the base's chunk rows (a slice of its grouped links, not
    copied) and the ids added since, and builds the set on the first read. ``add`` and ``copy`` need no set; every
    other use (iteration, membership, ``len``, comparisons, set operators and methods) reads the set."""

    __slots__ = ("_ids", "_rows", "_added", "_set")

    def __init__(self, ids: Sequence[str], rows: np.ndarray) -> None:
        self._ids, self._rows = ids, rows  # chunk ids in table order; rows of them (read-only, shared)
        self._added: set[str] = set()
        self._set: set[str] | None = None

    def _whole(self) -> set[str]:
        whole = self._set
        if whole is None:
            # made whole, then published in one assignment: a loaded table's cache of records is read by several
            # query threads, which may make the same one at once (the base rows are kept: they are a shared view)
            ids = self._ids
            whole = {ids[r] for r in self._rows.tolist()} | self._added
            self._set = whole
        return whole

    @classmethod
    def _from_iterable(cls, it) -> set:  # what the set operators return: a plain set
        return set(it)

    def __contains__(self, value: object) -> bool:
        return value in self._whole()

    def __iter__(self) -> Iterator[str]:
        return iter(self._whole())

    def __len__(self) -> int:
        return len(self._whole())

    def add(self, value: str) -> None:
        (self._added if self._set is None else self._set).add(value)

    def discard(self, value: str) -> None:
        self._whole().discard(value)

    def clear(self) -> None:
        self._whole().clear()

    def copy(self) -> "ChunkIds | set[str]":
        """A copy later changes of this one do not reach (sharing the base rows while it is unread)."""
        if self._set is not None:
            return set(self._set)
        twin = ChunkIds(self._ids, self._rows)
        twin._added = set(self._added)
        return twin

    def __getattr__(self, name: str) -> Any:  # set methods (union, issubset, update, ...): on the set
        if name.startswith("_"):
            raise AttributeError(name)
        return getattr(self._whole(), name)

    def __repr__(self) -> str:
        return f"ChunkIds({self._whole()!r})"


@dataclass(slots=True)
class EntityRecord:
    key: str  # normalised name = node id
    surface: str  # display form
    chunks: set[str] | ChunkIds = field(default_factory=set)  # chunks that contain it (a loaded one: ChunkIds)
    type: str = ""  # NER label (PERSON, GPE, ...), TITLE for a document title, "" from the statistical extractor
    # What extractors said about the entity beyond its name and type (see entity_attributes): held here, so the
    # graph store's node is written from the tables whole and a re-upsert never loses a description. Replaced,
    # never changed in place (copies of a record share it).
    attributes: dict[str, str | int | float | bool] = field(default_factory=dict)

    def to_json(self) -> dict:
        d = {"key": self.key, "surface": self.surface, "chunks": sorted(self.chunks)}
        if self.type:
            d["type"] = self.type
        if self.attributes:
            d["attributes"] = dict(self.attributes)
        return d

    @classmethod
    def from_json(cls, d: dict) -> "EntityRecord":
        attributes = d.get("attributes", {})
        if not isinstance(attributes, dict) or entity_attributes(attributes) != attributes:
            raise ValueError(f"entity {d.get('key')!r} has attributes that are not a mapping of names to scalars")
        return cls(d["key"], d["surface"], set(d["chunks"]), str(d.get("type", "")), dict(attributes))


def content_hash(title: str, body: str) -> str:
    """Hash of what the index keeps of a document: its title and the text it chunks.

    Other metadata (a file's dates, size) is not indexed, so a change there does not re-index it.
    """
    return "sha256:" + hashlib.sha256(f"{title}\x1f{body}".encode()).hexdigest()


def fact_id(subject: str, predicate: str, obj: str) -> str:
    return "f-" + hashlib.sha1(f"{subject}\x1f{predicate}\x1f{obj}".encode()).hexdigest()[:16]


def text_key(text: str) -> str:
    """Id of a fact text in the fact vector table (facts that share a sentence share its vector)."""
    return "t-" + hashlib.sha1(text.encode()).hexdigest()[:16]


@dataclass(slots=True)
class FactRecord:
    """One relation (subject, predicate, object) with the text it is embedded by."""

    id: str
    subject: str
    predicate: str
    object: str
    text: str
    kind: str  # "dependency" | "cooccurrence" | "llm"
    chunks: set[str] = field(default_factory=set)  # chunks that state it

    def triple_text(self) -> str:
        return f"{self.subject} {self.predicate} {self.object}"

    def to_json(self) -> dict:
        d = {f.name: getattr(self, f.name) for f in fields(self)}
        d["chunks"] = sorted(self.chunks)
        return d

    @classmethod
    def from_json(cls, d: dict) -> "FactRecord":
        return cls(**{**d, "chunks": set(d["chunks"])})
