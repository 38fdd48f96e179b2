"""When a loaded index is worth compacting, and the load's warning that says so.

An insert appends vector rows after a large table's packed ones and extends its lists, but never packs every row
again nor trains the lists again: a long-lived index that grows answers more slowly, unseen, until
``graphrag-suite compact DIR`` (``persist(dir, compact=True)``) writes every table whole. A load names the tables in
that state (:func:`compaction_reason`) and the command.
"""

from __future__ import annotations

import contextvars
import logging
from contextlib import contextmanager

from . import vectors

log = logging.getLogger("llama_index_graphrag_suite.index.persistence")  # the load's own logger

__all__ = ["TAIL_SHARE_WORTH_COMPACTING", "compaction_reason", "hint_compaction", "without_compaction_hint"]

#: A packed table with more than this share of its rows after the packed ones (appended by inserts since the last
#: packing save; a query reads them one at a time) is worth compacting.
TAIL_SHARE_WORTH_COMPACTING = 0.2

_HINT = contextvars.ContextVar("hint_compaction", default=True)


def compaction_reason(table) -> str | None:
    """Why a compacting save would make this listed ``VectorTable``'s searches cheaper, or None: its lists outgrown by
    the rows added since they were trained (a probed list holds ever more rows), or many rows appended after its
    packed ones."""
    if table is None or table.lists is None or not table.listed:
        return None
    rows, lists = len(table), len(table.lists.centroids)
    if rows > vectors.REFIT_GROWTH * lists ** 2:
        return f"{rows:,} rows in {lists:,} lists trained for about {lists ** 2:,}"
    tail = rows - (table.packed.size if table.packed is not None else rows)
    if tail > TAIL_SHARE_WORTH_COMPACTING * rows:
        return f"{tail:,} of {rows:,} rows appended after the packed ones"
    return None


@contextmanager
def without_compaction_hint():
    """Loads in this block do not suggest compaction (the batches of a batched build, which compacts at its end)."""
    token = _HINT.set(False)
    try:
        yield
    finally:
        _HINT.reset(token)


def hint_compaction(state, persist_dir) -> None:
    """Warn, naming the command, when a vector table of the loaded ``state`` is worth compacting."""
    if not _HINT.get():
        return
    tables = (("chunk", state.chunk_vectors), ("entity", state.entity_vectors), ("fact", state.fact_vectors))
    reasons = [f"{name} vectors: {why}" for name, table in tables if (why := compaction_reason(table)) is not None]
    if reasons:
        log.warning("index at %s has grown since it was last written whole (%s): its searches read more rows than "
                    "they need until `graphrag-suite compact %s` (or persist(compact=True)) packs every table and "
                    "trains its lists again", persist_dir, "; ".join(reasons), persist_dir)
