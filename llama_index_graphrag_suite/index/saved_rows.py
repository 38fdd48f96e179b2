"""Rows a save wrote beside the names they stand for, checked on load instead of joining every name again.

A loaded version's tables refer to each other by name: a fact to its subject and object (entity keys) and to its
text's vector (a text key), a chunk to the entities it contains. Turning those names into rows is a hash join of
millions of strings on every load (at a million passages, 4.7 million facts, 6.4 million links). A save knows the
rows already (the graph snapshot, the derived lookups), so it writes them beside the names; a load takes the key at
each saved row and compares it with the name (one string comparison, no hashing), and joins by name only where
they differ: a row a delete moved since, or a version saved before these columns (null). A wrong saved row can
therefore cost time, never a wrong answer.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ..graph.snapshot import CONTAINS, RELATION

__all__ = ["LINK_ROWS", "checked_rows", "joined", "link_row_column", "link_rows", "with_link_rows"]

LINK_ROWS = "entity_rows"  # beside a chunk's ``entities`` in the chunk_links table: their entity rows


def joined(names: pa.Array | pa.ChunkedArray, keys: pa.Array) -> np.ndarray:
    """The row in ``keys`` of each of ``names`` (-1: none): one hash join."""
    return np.asarray(pc.index_in(names, value_set=keys).fill_null(-1).to_numpy(zero_copy_only=False), np.int64)


def checked_rows(names: pa.Array | pa.ChunkedArray, keys: pa.Array,
                 saved: pa.Array | pa.ChunkedArray | None) -> np.ndarray:
    """The row in ``keys`` of each of ``names`` (-1: none): ``saved`` (int rows, null: none saved) where the key at
    that row is the name, the rest :func:`joined`."""
    if saved is None or len(keys) == 0:
        return joined(names, keys)
    rows = np.asarray(saved.fill_null(-1).to_numpy(zero_copy_only=False), np.int64)
    usable = (rows >= 0) & (rows < len(keys))
    named = keys.take(pa.array(np.where(usable, rows, 0)))
    usable &= np.asarray(pc.equal(named, names).fill_null(False).to_numpy(zero_copy_only=False), bool)
    if not usable.all():
        rows[~usable] = joined(names.filter(pa.array(~usable)), keys)
    return rows


def link_rows(snapshot, n_entities: int, n_chunks: int, positions: np.ndarray) -> pa.ListArray | None:
    """The entity rows each chunk at ``positions`` (places in the chunks table's order) contains, in its link order:
    its contains edges in ``snapshot`` (entity rows first, then chunk rows; the contains edges follow the relations,
    chunk after chunk), or None when the snapshot does not describe tables of that many entities and chunks."""
    if snapshot is None or snapshot.num_nodes != n_entities + n_chunks:
        return None
    kinds = snapshot.edge_kind
    start = int(np.count_nonzero(kinds == RELATION))
    end = start + int(np.count_nonzero(kinds == CONTAINS))
    chunk_rows, entity_rows = snapshot.edge_src[start:end], snapshot.edge_dst[start:end]
    if not (kinds[start:end] == CONTAINS).all() or (chunk_rows.size and (np.diff(chunk_rows) < 0).any()):
        return None  # not the layout GraphSnapshot.from_edges makes
    bounds = np.searchsorted(chunk_rows, n_entities + np.arange(n_chunks + 1))
    positions = np.asarray(positions, np.int64)
    first, sizes = bounds[positions], bounds[positions + 1] - bounds[positions]
    offsets = np.concatenate([[0], np.cumsum(sizes)]).astype(np.int32)
    take = np.repeat(first - offsets[:-1], sizes) + np.arange(int(offsets[-1]))  # each chunk's run of edges
    return pa.ListArray.from_arrays(pa.array(offsets), pa.array(entity_rows[take].astype(np.int32)))


def link_row_column(state, n: int, positions: np.ndarray | None, n_gone: int = 0) -> pa.Array:
    """:data:`LINK_ROWS` of ``n`` chunks at ``positions`` (None: not known) after ``n_gone`` removed rows (null):
    :func:`link_rows` from ``state``'s snapshot, or nulls (a load then joins these chunks' names)."""
    lists = pa.list_(pa.int32())
    rows = None if positions is None else link_rows(state.snapshot, len(state.entities), len(state.chunks), positions)
    return pa.concat_arrays([pa.nulls(n_gone, lists), rows]) if rows is not None else pa.nulls(n_gone + n, lists)


def with_link_rows(segments: list[pa.Table]) -> list[pa.Table]:
    """The chunk_links segments, each with :data:`LINK_ROWS` (null lists where a segment lacks them: one saved before
    they were) when some segment has them."""
    if all(LINK_ROWS not in t.column_names for t in segments):
        return segments
    return [t if LINK_ROWS in t.column_names else t.append_column(LINK_ROWS, pa.nulls(len(t), pa.list_(pa.int32())))
            for t in segments]
