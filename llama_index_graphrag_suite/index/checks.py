"""Semantic checks of a loaded index: tables that are wrong but carry valid checksums are a corrupt index.

Checksums catch a damaged file, not a consistent-looking one that says the wrong thing (an edited table whose
manifest was updated, a tool that wrote its own). Before this, such an index loaded: a reversed
``vector_ids.json`` made four methods return other chunks, an entity pointing at a missing chunk raised
``KeyError`` deep in PathRAG, a fact on an unknown entity loaded without a word. Now :func:`check_tables`
raises :class:`~.storage.CorruptIndexError` with one line naming the first violation:

* ids unique in every table and vector table;
* every link between known rows: an entity's chunks, a chunk's entities, a fact's endpoints and chunks, a
  synonym pair's ends;
* each vector table indexes exactly its table: chunk ids, entity keys, the facts' text keys;
* the saved graph arrays agree with the tables: one node row per entity and chunk, one relation edge per fact,
  and each chunk's and entity's number of ``contains`` edges its row's (a table reordered under a saved
  ``graph.npz`` would join chunks to other chunks' entities);
* and, when the index is loaded with the embed model it was built with, that rows hold the vectors of their
  ids (:func:`check_vector_rows`): the first and last rows of the chunk and entity tables are embedded again,
  and each must be nearer its own row than the other's (a reordered id list swaps them).
"""

from __future__ import annotations

from collections import Counter
from typing import Iterable

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from .chunk_columns import ChunkColumns
from .entity_columns import EntityColumns
from .fact_columns import FactColumns
from .records import text_key
from .storage import CorruptIndexError

__all__ = ["check_snapshot", "check_tables", "check_vector_rows"]


def _duplicate(ids: Iterable[str]) -> str | None:
    ids = list(ids)
    if len(set(ids)) == len(ids):  # the usual case, without counting every id
        return None
    counts = Counter(ids)
    return next((i for i, n in counts.items() if n > 1), None)


def _first_missing(values: pa.Array, known: pa.Array) -> int | None:
    """Position of the first of ``values`` that is not among ``known`` (a hash join in Arrow, not a Python loop)."""
    inside = pc.fill_null(pc.is_in(values, value_set=known), False)
    if pc.all(inside).as_py() in (True, None):  # None: no values
        return None
    return int(pc.index(inside, False).as_py())


def _check_fact_columns(facts: FactColumns, entities, chunks, fail) -> None:
    """Every fact's ends among the entities and its chunks among the chunks, column by column."""
    known_entities, known_chunks = pa.array(list(entities), pa.string()), pa.array(list(chunks), pa.string())
    ids = facts.arrow_column("id")
    for end in ("subject", "object"):
        row = _first_missing(facts.arrow_column(end), known_entities)
        if row is not None:
            fail(f"fact {ids[row].as_py()!r} is on unknown entity {facts.arrow_column(end)[row].as_py()!r}")
    lists = facts.arrow_column("chunks")
    at = _first_missing(pc.list_flatten(lists), known_chunks)
    if at is not None:
        row = int(pc.list_parent_indices(lists)[at].as_py())
        fail(f"fact {ids[row].as_py()!r} links missing chunk {pc.list_flatten(lists)[at].as_py()!r}")


def check_tables(index, rows: dict[str, list[str]], where: str) -> None:
    """``rows``: the ids as read, per table (``chunks``, ``entities``, ``facts``), before dicts merged duplicates."""
    def fail(what: str) -> None:
        raise CorruptIndexError(f"corrupt index at {where}: {what}")

    for table, ids in rows.items():
        dup = _duplicate(ids)
        if dup is not None:
            fail(f"the {table} table lists {dup!r} twice")
    chunks, entities, facts = index.chunks, index.entities, index.facts
    for cid, rec in ({} if isinstance(chunks, ChunkColumns) else chunks).items():  # columns: checked when read
        for key in rec.entities:
            if key not in entities:
                fail(f"chunk {cid!r} contains unknown entity {key!r}")
    for key, ent in ({} if isinstance(entities, EntityColumns) else entities).items():  # columns: from the links
        for cid in ent.chunks:
            if cid not in chunks:
                fail(f"entity {key!r} links missing chunk {cid!r}")
    columnar = isinstance(facts, FactColumns)  # a loaded version's facts: checked column by column
    if columnar:
        _check_fact_columns(facts, entities, chunks, fail)
    for fid, f in ({} if columnar else facts).items():
        for end in (f.subject, f.object):
            if end not in entities:
                fail(f"fact {fid!r} is on unknown entity {end!r}")
        for cid in f.chunks:
            if cid not in chunks:
                fail(f"fact {fid!r} links missing chunk {cid!r}")
    for name in index.synonyms.used_names():
        if name not in entities:
            fail(f"a synonym pair is on unknown entity {name!r}")
    texts = facts.text_keys() if columnar else (text_key(f.text) for f in facts.values())
    expected = {"chunks": set(chunks), "entities": set(entities), "facts": set(texts)}
    for name, table in (("chunks", index.chunk_vectors), ("entities", index.entity_vectors), ("facts", index.fact_vectors)):
        have = set(table.ids)
        if len(have) != len(table.ids):
            fail(f"the {name} vector ids list {_duplicate(table.ids)!r} twice")
        if have != expected[name]:
            extra, missing = have - expected[name], expected[name] - have
            odd = sorted(extra)[0] if extra else sorted(missing)[0]
            fail(f"the {name} vector ids do not match the {name} table ({odd!r} "
                 f"{'has a vector but no row' if extra else 'has no vector'})")


def check_vector_rows(index, where: str) -> np.ndarray:
    """Embed the first and last chunk texts and entity names again: each must be nearer its own row than the
    other's. Returns one of the fresh vectors (for the caller's dimension check)."""
    probes: list[tuple[object, list[str], list[str]]] = []  # (table, ids, texts)
    for table, text_of in ((index.chunk_vectors, lambda i: index.chunks[i].text),
                           (index.entity_vectors, lambda k: index.entities[k].surface)):
        if len(table) >= 2:
            ids = [table.ids[0], table.ids[-1]]
            probes.append((table, ids, [text_of(i) for i in ids]))
    texts = [t for _, _, ts in probes for t in ts] or ["dimension check"]
    fresh = np.asarray(index.embed_model.get_text_embedding_batch(texts), dtype=np.float32)
    if fresh.shape[1] != index.state.dim:
        return fresh[0]
    at = 0
    for table, ids, pair in probes:
        vecs, at = fresh[at:at + 2], at + 2
        if pair[0] == pair[1]:
            continue
        sims = vecs @ table.rows_of(ids).T  # fresh probe x stored row
        if sims[0, 0] < sims[0, 1] or sims[1, 1] < sims[1, 0]:
            raise CorruptIndexError(f"corrupt index at {where}: the vector ids do not match the vectors' rows "
                                    f"({ids[0]!r} is nearer the vector stored for {ids[1]!r})")
    return fresh[0]


def check_snapshot(index, snapshot, where: str) -> None:
    """The loaded graph arrays against the tables (see the module docstring); a few numpy passes."""
    from ..graph.snapshot import CONTAINS, ENTITY, RELATION

    n_ent, chunks = len(index.entities), list(index.chunks.values())
    kind, src, dst = snapshot.edge_kind, snapshot.edge_src, snapshot.edge_dst
    problem = None
    if int((snapshot.node_kind == ENTITY).sum()) != n_ent or bool((snapshot.node_kind[:n_ent] != ENTITY).any()):
        problem = "its entity rows differ from the entities table"
    elif int((kind == RELATION).sum()) != len(index.facts):
        problem = "its relation edges differ from the facts table"
    else:
        contains = kind == CONTAINS
        per_chunk = np.bincount(src[contains] - n_ent, minlength=len(chunks))
        per_entity = np.bincount(dst[contains], minlength=n_ent)
        if not np.array_equal(per_chunk, np.fromiter((len(c.entities) for c in chunks), np.int64, len(chunks))):
            problem = "its chunk rows do not contain the entities the chunks table lists"
        elif not np.array_equal(per_entity, np.fromiter((len(e.chunks) for e in index.entities.values()), np.int64, n_ent)):
            problem = "its entity rows are not in the chunks the entities table lists"
    if problem:
        raise CorruptIndexError(f"corrupt index at {where}: graph.npz does not match the tables ({problem})")
