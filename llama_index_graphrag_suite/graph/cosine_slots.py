"""Slots of a per-query cost vector derived from cosines where they are read (:class:`~.costs.QueryCosts`)."""

from __future__ import annotations

import numpy as np

__all__ = ["CosineSlots"]


class CosineSlots:
    """Slots ``[0, count)`` derived when read instead of written per query: slot ``s`` is ``(1 - c) / 2`` of
    ``c = cosines[rows[s]]``, computed in the cosines' dtype and then widened to float64 (AGRAG's fact slots:
    millions of facts, of which a bounded search reads a few thousand).

    With ``slot_lists`` and ``list_cosines`` (a listed vector table, ``VectorLists.scores``): slot ``s``'s cosine is
    ``list_cosines[slot_lists[s]]`` (the capped estimate of its row's list), or ``cosines[rows[s]]`` where that is NaN
    (a probed list, whose rows' exact cosines ``cosines`` holds; its other rows are never read). One list id per
    slot: a search reading a slot reads one array, not the row and then the row's list."""

    def __init__(self, cosines: np.ndarray, rows: np.ndarray, slot_lists: np.ndarray | None = None,
                 list_cosines: np.ndarray | None = None):
        self.cosines = np.ascontiguousarray(cosines)
        if self.cosines.dtype not in (np.float32, np.float64):
            self.cosines = self.cosines.astype(np.float64)
        self.rows = np.asarray(rows)
        self.count = int(self.rows.size)
        # empty when not listed (the compiled searches take arrays, never None)
        # int32 either way: one compiled specialisation of the searches for both forms
        self.lists = np.ascontiguousarray(np.zeros(0) if slot_lists is None else slot_lists, np.int32)
        self.list_cosines = (np.zeros(0, self.cosines.dtype) if list_cosines is None
                             else np.ascontiguousarray(list_cosines, self.cosines.dtype))

    def values(self, slots: np.ndarray) -> np.ndarray:
        """The float64 values of ``slots`` (each below ``count``)."""
        if self.lists.size:
            cos = self.list_cosines[self.lists[slots]]
            exact = np.isnan(cos)
            cos[exact] = self.cosines[self.rows[slots[exact]]]
        else:
            cos = self.cosines[self.rows[slots]]
        return ((1.0 - cos) / 2.0).astype(np.float64)
