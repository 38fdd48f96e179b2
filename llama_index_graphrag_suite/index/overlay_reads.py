"""Reads of a loaded version's tables with a change's rows over them (``row_overlay.py``) for ``state.py``'s derived
state: the base's columns mapped by whole-array joins (Arrow's hash join, numpy), and only the rows a change holds as
records or added looked up one by one. So an insert into a large loaded index (every batch after the first of a
batched build) derives its snapshot, lookups and counts by Python work that follows the insert, not the index."""

from __future__ import annotations

from collections import Counter

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from .chunk_columns import ChunkColumns
from .entity_columns import EntityColumns
from .fact_columns import FactColumns
from .records import text_key
from .row_overlay import RowOverlay, table_column
from .vectors import VectorTable

__all__ = ["distinct_count", "overlaid", "overlay_contains", "overlay_edges", "overlay_text_rows", "rows_in",
           "value_counts"]


def rows_in(values: pa.Array, keys: pa.Array) -> np.ndarray:
    """The row in ``keys`` of each of ``values`` (-1: none), by one hash join in Arrow."""
    return pc.index_in(values, value_set=keys).fill_null(-1).to_numpy(zero_copy_only=False).astype(np.int64)


def _base_column(table, name: str) -> tuple[pa.ChunkedArray, list] | None:
    """For changed rows over a loaded version's columns, where ``name`` is a field a change never alters (a chunk's
    document, a fact's kind): ``(the alive base rows' column, the added rows' values)``; else None."""
    if not isinstance(table, RowOverlay) or not isinstance(table.base, (ChunkColumns, FactColumns)):
        return None
    alive, _, tail = table.layout()
    column = table.base._cols[name]
    return column.filter(pa.array(alive)), [getattr(rec, name) for rec in tail]


def distinct_count(table, name: str) -> int:
    """How many distinct values the field ``name`` has over the table's rows (a loaded column: counted in Arrow)."""
    split = _base_column(table, name)
    if split is None:
        return len(set(table_column(table, name)))
    base, added = split
    unique = pc.unique(base)
    new = set(added)
    if new:
        new -= {v for v, seen in zip(new, pc.is_in(pa.array(list(new), unique.type), value_set=unique).to_pylist())
                if seen}
    return len(unique) + len(new)


def value_counts(table, name: str) -> Counter:
    """How often each value of the field ``name`` occurs over the table's rows (a loaded column: counted in Arrow)."""
    split = _base_column(table, name)
    if split is None:
        return Counter(table_column(table, name))
    base, added = split
    counts = Counter({row["values"]: row["counts"] for row in pc.value_counts(base).to_pylist()})
    counts.update(added)
    return counts


def overlaid(chunks, entities, facts) -> bool:
    """Whether each table is changed rows over a loaded version's columns (``row_overlay.py``)."""
    return (isinstance(chunks, RowOverlay) and isinstance(chunks.base, ChunkColumns)
            and isinstance(entities, RowOverlay) and isinstance(entities.base, EntityColumns)
            and isinstance(facts, RowOverlay) and isinstance(facts.base, FactColumns))


def overlay_edges(chunks: RowOverlay, entities: RowOverlay, facts: RowOverlay, entity_ids: list[str],
                   names: list[str]) -> tuple[np.ndarray, np.ndarray, np.ndarray, list[np.ndarray]]:
    """:meth:`.state.IndexState.build_snapshot`'s endpoint rows for tables that are changed rows over a loaded version's
    columns: ``(contains sizes, contains targets, synonym name rows, [subject rows, object rows])``. The base rows are
    mapped by whole-array joins (Arrow's hash join, numpy), and only the rows a change holds as records or added are
    looked up one by one: the Python work follows the change, not the index (an insert into a large index rebuilt a
    dict of every node and looked every link and fact end up in it). Node rows are entity rows: the arrays are the
    ones the per-row lookups give, for entity keys that are not also chunk ids (the loaded path's reading too)."""
    keys = pa.array(entity_ids, pa.string())
    ent_alive, _, _ = entities.layout()
    entity_row = np.cumsum(ent_alive) - 1  # base entity row -> row in entity_ids (an alive one)
    entity_row[~ent_alive] = -1
    base_keys = entities.base.key_list()

    def rows_of(values: list[str]) -> np.ndarray:  # entity rows of a few names (records held or added)
        return rows_in(pa.array(values, pa.string()), keys) if values else np.zeros(0, np.int64)

    # contains: the base's link codes name the base entity table's keys (a load shares that list)
    offsets, codes, link_keys = chunks.base.links()
    key_rows = entity_row if link_keys is base_keys else rows_in(pa.array(list(link_keys), pa.string()), keys)
    sizes, targets = overlay_contains(chunks, key_rows, rows_of)
    if (targets < 0).any():  # a held or added chunk's link (the base's are checked on the way)
        raise ValueError("a chunk contains an entity the index does not have")
    name_rows = rows_in(pa.array(names, pa.string()), keys)
    # fact ends: a held fact's are its base row's (a fact's id is its subject, predicate and object)
    alive, _, tail = facts.layout()
    ends = []
    for end in ("subject", "object"):
        base = facts.base.end_rows(end, keys, forget=True)[alive]
        added = [getattr(rec, end) for rec in tail]
        rows = np.concatenate([base, rows_of(added)])
        missing = np.flatnonzero(rows < 0)
        if missing.size:  # as a dict lookup of a name the index lacks would
            at = int(missing[0])
            raise KeyError(facts.base.arrow_column(end).filter(pa.array(alive))[at].as_py() if at < base.size
                           else added[at - base.size])
        ends.append(rows)
    return sizes, targets, name_rows, ends



def overlay_text_rows(facts: RowOverlay, vectors: VectorTable) -> np.ndarray:
    """The fact-text vector row of every fact of changed rows over a loaded version's: the base's rows (kept by
    :meth:`FactColumns.text_rows`), with the rows held as records and the added ones put in."""
    alive, _, tail = facts.layout()  # a held fact's text is its base row's: facts change support, never text
    rows = facts.base.text_rows(vectors)[alive]
    if (rows < 0).any():
        raise ValueError("a fact's text has no vector")
    return np.concatenate([rows, np.fromiter((vectors.row(text_key(rec.text)) for rec in tail), np.int64, len(tail))])



def overlay_contains(chunks: RowOverlay, key_rows: np.ndarray | None,
                      rows_of) -> tuple[np.ndarray, np.ndarray | None]:
    """:func:`.state.contains_rows` of changed chunk rows over a loaded version's: the base's link arrays, with the rows held
    as records (and added after the base) put in. ``key_rows``: the node row of each of the base links' entity keys
    (-1: none); ``rows_of(names)``: the node rows of a list of names (the held and added rows' links); None: the sizes
    only."""
    offsets, codes, keys = chunks.base.links()
    n = len(chunks.base)
    alive, held, tail = chunks.layout()
    sizes = np.diff(offsets)
    own = sizes.copy()
    for r, rec in held.items():
        own[r] = len(rec.entities)
    out_sizes = np.concatenate([own[alive], np.fromiter((len(c.entities) for c in tail), np.int64, len(tail))])
    if key_rows is None:
        return out_sizes, None
    out_offsets = np.concatenate([[0], np.cumsum(out_sizes)])
    out_row = np.cumsum(alive) - 1  # where each alive base row goes
    targets = np.empty(int(out_offsets[-1]), np.int64)
    plain = alive.copy()
    plain[list(held)] = False
    link_row = np.repeat(np.arange(n), sizes)
    take = plain[link_row]
    links = np.flatnonzero(take)
    linked = key_rows[codes[links]]
    if (linked < 0).any():
        raise ValueError("a chunk contains an entity the index does not have")
    targets[out_offsets[out_row[link_row[links]]] + links - offsets[link_row[links]]] = linked
    starts = [out_offsets[out_row[r]] for r in held if alive[r]] + out_offsets[len(out_sizes) - len(tail):-1].tolist()
    recs = [rec for r, rec in held.items() if alive[r]] + tail
    # the held and added rows' links: their names looked up together, then put in chunk by chunk
    found = rows_of([k for rec in recs for k in rec.entities])
    at = 0
    for start, rec in zip(starts, recs):
        n = len(rec.entities)
        targets[start:start + n] = found[at:at + n]
        at += n
    return out_sizes, targets
