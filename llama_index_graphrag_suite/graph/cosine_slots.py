"""Slots of a per-query cost vector derived from cosines where they are read (:class:`~.costs.QueryCosts`)."""

from __future__ import annotations

import numpy as np

__all__ = ["CosineSlots"]


class CosineSlots:
    """Slots ``[0, count)`` derived when read instead of written per query: slot ``s`` is ``(1 - c) / 2`` of
    ``c = cosines[rows[s]]``, computed in the cosines' dtype and then widened to float64 (AGRAG's fact slots:
    millions of facts, of which a bounded search reads a few thousand)."""

    def __init__(self, cosines: np.ndarray, rows: np.ndarray):
        self.cosines = np.ascontiguousarray(cosines)
        if self.cosines.dtype not in (np.float32, np.float64):
            self.cosines = self.cosines.astype(np.float64)
        self.rows = np.asarray(rows)
        self.count = int(self.rows.size)

    def values(self, slots: np.ndarray) -> np.ndarray:
        """The float64 values of ``slots`` (each below ``count``)."""
        return ((1.0 - self.cosines[self.rows[slots]]) / 2.0).astype(np.float64)
