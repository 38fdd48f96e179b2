"""Union-find over hashable items (path halving), for grouping evidence edges into connected parts."""

from __future__ import annotations

from typing import Hashable

__all__ = ["DisjointSets"]


class DisjointSets:
    """Connected components grown one union at a time; an item is its own set until joined."""

    def __init__(self) -> None:
        self.parent: dict[Hashable, Hashable] = {}

    def find(self, x: Hashable) -> Hashable:
        """The representative of ``x``'s set."""
        parent = self.parent
        while parent.setdefault(x, x) != x:
            parent[x] = parent[parent[x]]
            x = parent[x]
        return x

    def union(self, a: Hashable, b: Hashable) -> None:
        """Join the sets of ``a`` and ``b`` (the representative of ``b``'s set represents both)."""
        self.parent[self.find(a)] = self.find(b)
