"""A loaded table written whole from its Arrow columns (``tables.py``'s whole writes, a compaction's).

A save that writes a table whole (a compaction, the end of a batched build, a save into a new folder) made every
row a record and every value a Python object (``tables._whole_rows``), even when the table was a loaded version's
read-only columns that hold those very values. For the chunks, chunk_links and entities tables as loaded, the
rows are made here from the columns and BM25's count matrix instead: the same rows, in the same order.
"""

from __future__ import annotations

import json
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from .chunk_columns import ChunkColumns
from .entity_columns import EntityColumns
from .row_columns import RowColumns
from .saved_rows import LINK_ROWS

__all__ = ["whole_columns"]


def whole_columns(state: Any, table: str, schema: pa.Schema) -> pa.Table | None:
    """Every row of a loaded (unchanged) chunks, chunk_links or entities table, made from its Arrow columns and
    BM25's matrix: the rows :func:`~.tables._whole_rows` makes from records, without a Python object per row and
    value (at a million chunks those records and lists cost about 100 CPU s). None when the table is not a loaded
    one (records, or changed rows over one): :func:`~.tables._whole_rows` then."""
    if table == "entities":
        entities = state.entities
        if not isinstance(entities, EntityColumns):
            return None
        keys = entities.key_array()
        attributes = [""] * len(entities)
        for row, value in entities.attributes_by_row().items():  # as a record's: "" for none, else its JSON
            if value:
                attributes[row] = json.dumps(value, ensure_ascii=False)
        return pa.table({"key": keys, "gone": pa.array(np.zeros(len(keys), bool)),
                         "surface": entities.arrow_column("surface"),
                         "type": pc.fill_null(entities.arrow_column("type"), ""),  # a record's type: "" for none
                         "attributes": pa.array(attributes, pa.string())}).cast(schema)
    chunks = state.chunks
    if not isinstance(chunks, ChunkColumns):
        return None
    ids = chunks.key_array()
    gone = pa.array(np.zeros(len(ids), bool))
    if table == "chunk_links":
        offsets, codes, entity_keys = chunks.links()
        own = isinstance(state.entities, RowColumns) and state.entities.key_list() is entity_keys
        named = state.entities.key_array() if own else pa.array(list(entity_keys), pa.string())
        at, codes = pa.array(np.asarray(offsets, np.int32)), pa.array(np.asarray(codes, np.int32))
        linked = pa.ListArray.from_arrays(at, named.take(codes))
        # the codes are rows of the entities table the same save writes when they name its keys (saved_rows.py)
        rows = pa.ListArray.from_arrays(at, codes) if own else pa.nulls(len(ids), pa.list_(pa.int32()))
        return pa.table({"id": ids, "gone": gone, "entities": linked, LINK_ROWS: rows}).cast(schema)
    bm25 = state.bm25
    if bm25 is None or bm25.ids != chunks.key_list():
        return None  # BM25's rows are not the table's, in its order: read each chunk's row by its position
    counts = bm25.counts
    indptr = pa.array(np.asarray(counts.indptr, np.int32))
    end = int(counts.indptr[-1])  # a chunk's terms and counts: its row of the matrix, as BM25Table.row reads it
    terms = pa.ListArray.from_arrays(indptr, pa.array(np.asarray(counts.indices[:end], np.int32)))
    numbers = pa.ListArray.from_arrays(indptr, pa.array(counts.data[:end].astype(np.int32)))
    cols = {"id": ids, "gone": gone, **{c: chunks.arrow_column(c) for c in ("doc_id", "title", "position",
                                                                          "doc_hash", "text")},
            "terms": terms, "counts": numbers}
    return pa.table(cols).cast(schema)
