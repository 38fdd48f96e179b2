"""ArchRAG's bottom layer: each entity's description (its sentences) and attribute vector (hierarchy.py's docstring).

Read from the index's fact columns as arrays: the entity row of each fact's subject and object and a code per
distinct sentence, found by Arrow hash joins, with no Python object per fact (at 1,000,000 passages there are
2,000,000 facts). The sentence vectors are summed a block of entities at a time from just the rows that block
needs, never from a joined copy of the whole fact vector table.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import scipy.sparse as sp

from ...index.entity_columns import EntityColumns
from ...index.fact_columns import FactColumns
from ...index.row_overlay import RowOverlay

__all__ = ["FactEnds", "fact_ends", "entity_names", "entity_texts", "attribute_vectors"]


@dataclass
class FactEnds:
    """The facts in ``index.fact_ids`` order, as entity rows and sentence codes."""

    subject_rows: np.ndarray  # int64: row (in the entity list) of each fact's subject, -1 when not listed
    object_rows: np.ndarray  # int64: the same for its object
    text_codes: np.ndarray  # int64: code of each fact's sentence, equal sentences equal codes (first seen first)
    texts: pa.Array  # the distinct sentences, by code


def _columns(index) -> list:
    """Subject, object and text of every fact in ``index.fact_ids`` order, as Arrow arrays."""
    facts = index.facts
    if isinstance(facts, FactColumns):  # a loaded version's facts: fact_ids is its id column
        return [facts.arrow_column(c) for c in ("subject", "object", "text")]
    if isinstance(facts, RowOverlay):  # changed rows over a loaded version's: read as columns too
        return [pa.array(facts.column(c), pa.string()) for c in ("subject", "object", "text")]
    records = [facts[fid] for fid in index.fact_ids]
    return [pa.array([getattr(f, c) for f in records], pa.string()) for c in ("subject", "object", "text")]


def entity_names(index, entity_ids: list[str]) -> list[str]:
    """Each entity's surface form: the table's column when ``entity_ids`` are its keys in table order (no record
    made per entity), else read record by record."""
    entities = index.entities
    if isinstance(entities, (EntityColumns, RowOverlay)) and list(entities) == entity_ids:
        return entities.column("surface")
    return [entities[k].surface for k in entity_ids]


def _rows_in(values, value_set: pa.Array) -> np.ndarray:
    return np.asarray(pc.index_in(values, value_set=value_set).fill_null(-1).to_numpy(zero_copy_only=False), np.int64)


def fact_ends(index, entity_ids: list[str]) -> FactEnds:
    subjects, objects, texts = _columns(index)
    ids = pa.array(entity_ids, pa.string())
    distinct = pc.unique(texts)  # in order of first appearance
    if isinstance(distinct, pa.ChunkedArray):
        distinct = distinct.combine_chunks()
    return FactEnds(_rows_in(subjects, ids), _rows_in(objects, ids), _rows_in(texts, distinct), distinct)


def entity_texts(ends: FactEnds, n: int, first: int = 2) -> list[str]:
    """Each entity's ``first`` distinct sentences joined by a space: the ones stating most of its relations first,
    ties by first appearance (a fact whose subject is its object counts twice); "" for an entity without facts."""
    ent = np.empty(2 * ends.subject_rows.size, np.int64)
    ent[0::2], ent[1::2] = ends.subject_rows, ends.object_rows  # fact by fact, subject before object
    code = np.repeat(ends.text_codes, 2)
    listed = ent >= 0
    ent, code = ent[listed], code[listed]
    out = [""] * n
    if not ent.size:
        return out
    width = int(code.max()) + 1
    pairs, seen, counts = np.unique(ent * width + code, return_index=True, return_counts=True)
    pair_ent = pairs // width
    order = np.lexsort((seen, -counts, pair_ent))  # per entity: most relations first, then first seen
    pair_ent, pair_code = pair_ent[order], (pairs % width)[order]
    rank = np.arange(pair_ent.size) - np.searchsorted(pair_ent, pair_ent)  # position within its entity
    top = rank < first
    pair_ent, pair_code = pair_ent[top].tolist(), ends.texts.take(pa.array(pair_code[top])).to_pylist()
    for e, text in zip(pair_ent, pair_code):
        out[e] = f"{out[e]} {text}" if out[e] else text
    return out


SUM_BLOCK = 16_384  # entities whose sentence vectors are summed at once (from only the fact rows they need)


def attribute_vectors(index, entity_ids: list[str], ends: FactEnds) -> np.ndarray:
    """normalise(name vector + normalise(mean sentence vector)) per entity. In place where it can, and the name
    and sentence vectors read as the rows needed (``VectorTable.at``), not as a joined copy of every row: at
    1,000,000 passages the fact vectors alone are 2 GB. (A row's product and norms do not depend on the other rows,
    and a block's incidence keeps each row's columns in order: blocks give the numbers the whole matrix gives.)"""
    table = index.entity_vectors
    rows = table.rows_in(pa.array(entity_ids, pa.string()))
    if rows.size and rows.min() < 0:
        raise KeyError(f"entity {entity_ids[int(np.argmin(rows))]!r} has no vector")
    out = np.asarray(table.at(rows), np.float32)
    out /= np.maximum(np.linalg.norm(out, axis=1, keepdims=True), 1e-12)
    fact_rows = np.asarray(index.fact_text_rows, np.int64)
    at_subject, at_object = ends.subject_rows, ends.object_rows
    both = at_object != at_subject  # a fact on one entity twice counts once, as {subject, object} did
    rows = np.concatenate([at_subject, at_object[both]])
    cols = np.concatenate([fact_rows, fact_rows[both]])
    known = rows >= 0
    if not known.any():
        return out
    texts = index.fact_vectors
    incidence = sp.csr_matrix((np.ones(int(known.sum()), np.float32), (rows[known], cols[known])),
                              shape=(len(entity_ids), len(texts)))
    incidence.data[:] = 1.0  # a sentence counts once per entity, however many of its relations it states
    incidence.sum_duplicates()
    incidence.data[:] = 1.0
    for start in range(0, out.shape[0], SUM_BLOCK):
        part = incidence[start:start + SUM_BLOCK]
        needed = np.unique(part.indices)  # the fact rows this block reads, in row order
        local = sp.csr_matrix((part.data, np.searchsorted(needed, part.indices), part.indptr),
                              shape=(part.shape[0], needed.size))
        sums = np.asarray(local @ texts.at(needed), np.float32)
        sums /= np.maximum(np.linalg.norm(sums, axis=1, keepdims=True), 1e-12)  # entities without facts stay 0
        block = out[start:start + SUM_BLOCK]
        block += sums
        block /= np.maximum(np.linalg.norm(block, axis=1, keepdims=True), 1e-12)
    for table in (index.entity_vectors, texts):
        table.drop_mapped_pages()  # read once: their pages need not stay in the process's RSS (3 GB at 1M)
    return out
