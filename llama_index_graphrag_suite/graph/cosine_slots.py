"""Slots of a per-query cost vector derived from cosines where they are read (:class:`~.costs.QueryCosts`)."""

from __future__ import annotations

import numpy as np

__all__ = ["CosineSlots"]


class CosineSlots:
    """Slots ``[0, count)`` derived when read instead of written per query: slot ``s`` is ``(1 - c) / 2`` of
    ``c = cosines[rows[s]]``, computed in the cosines' dtype and then widened to float64 (AGRAG's fact slots:
    millions of facts, of which a bounded search reads a few thousand).

    With ``lists`` and ``list_cosines`` (a listed vector table, ``VectorLists.scores``): row ``t``'s cosine is
    ``list_cosines[lists[t]]`` (its list's capped estimate), or ``cosines[t]`` where that is NaN (a probed list,
    whose rows' exact cosines ``cosines`` holds; its other rows are never read)."""

    def __init__(self, cosines: np.ndarray, rows: np.ndarray, lists: np.ndarray | None = None,
                 list_cosines: np.ndarray | None = None):
        self.cosines = np.ascontiguousarray(cosines)
        if self.cosines.dtype not in (np.float32, np.float64):
            self.cosines = self.cosines.astype(np.float64)
        self.rows = np.asarray(rows)
        self.count = int(self.rows.size)
        # empty when not listed (the compiled searches take arrays, never None)
        self.lists = np.zeros(0, np.int64) if lists is None else np.ascontiguousarray(lists)
        self.list_cosines = (np.zeros(0, self.cosines.dtype) if list_cosines is None
                             else np.ascontiguousarray(list_cosines, self.cosines.dtype))

    def row_cosines(self, rows: np.ndarray) -> np.ndarray:
        """The cosines of table ``rows``."""
        if not self.lists.size:
            return self.cosines[rows]
        out = self.list_cosines[self.lists[rows]]
        exact = np.isnan(out)
        out[exact] = self.cosines[rows[exact]]
        return out

    def values(self, slots: np.ndarray) -> np.ndarray:
        """The float64 values of ``slots`` (each below ``count``)."""
        return ((1.0 - self.row_cosines(self.rows[slots])) / 2.0).astype(np.float64)
