"""C-HNSW query procedures (ArchRAG Algorithm 2, Section 3.2.1): greedy descent, best-first layer search.

The search half of :class:`graph.chnsw.CHNSW` (see that module's docstring for the whole design); the
build (``chnsw_build.py``) reuses the descent and the layer search to insert nodes. Methods read the
index's arrays: ``_vectors`` (unit rows per layer), ``_links`` / ``_degree`` (intra-layer links),
``_down`` (inter-layer links), ``_entry`` (the fixed top-layer start), ``expand_batch``,
``exact_layer_size``, ``_local`` (per-thread search state) and the properties ``num_layers``,
``layer_sizes`` and ``dim`` of :class:`~graph.chnsw.CHNSW`.
"""

from __future__ import annotations

import numpy as np

# At query time a layer of at most this many nodes is scored exactly (one matrix-vector product): a
# graph walk in Python costs about as much as scoring a few thousand vectors in one product (see
# studies/perf/chnsw_bench.py), so below this size exact search is both faster and exact.
EXACT_LAYER_SIZE = 2048
# Candidates expanded together in the best-first search (see CHNSWSearch._best_first).
EXPAND_BATCH = 16
_POSITIONS = np.arange(1 << 14, dtype=np.intp)  # 0, 1, 2, ... for de-duplication (see _best_first)

__all__ = ["CHNSWSearch", "EXACT_LAYER_SIZE", "EXPAND_BATCH", "unit_rows"]


def unit_rows(vectors: np.ndarray, in_place: bool = False) -> np.ndarray:
    """Rows (or one vector) scaled to unit length, float32; zero rows stay zero. ``in_place``: a writeable float32
    array is scaled where it is (the same numbers as a copy: one division per entry either way)."""
    norms = np.linalg.norm(vectors, axis=-1, keepdims=True)
    norms = np.where(norms > 0, norms, 1.0)
    if in_place and vectors.dtype == np.float32 and vectors.flags.writeable:
        vectors /= norms
        return vectors
    return (vectors / norms).astype(np.float32, copy=False)


class CHNSWSearch:
    """Query-time methods of :class:`graph.chnsw.CHNSW` (Algorithm 2 and the hierarchical search)."""

    def _descend(self, query: np.ndarray, to_layer: int, exact_small: bool = False) -> tuple[int, int]:
        """Greedy descent (Algorithm 2, lines 1-4) from the top entry to the layer just above ``to_layer``.

        Returns ``(u, entry)``: ``u`` = nearest node found on layer ``to_layer + 1`` (-1 if ``to_layer``
        is the top) and ``entry`` = ``u``'s inter-layer link (-1 if it has none yet).
        """
        node, u = self._entry, -1
        for layer in range(self.num_layers - 1, to_layer, -1):
            if exact_small and self.layer_sizes[layer] <= self.exact_layer_size:
                u = int(np.argmax(self._vectors[layer] @ query))
            else:
                u = self._greedy(query, node, layer)
            node = int(self._down[layer][u])
            if node < 0:
                break  # only during construction, while layer-1 is still being filled
        return u, node

    def _greedy(self, query: np.ndarray, node: int, layer: int) -> int:
        """SearchLayer with a list of size 1: move to the nearest neighbour while it gets closer."""
        vecs, links = self._vectors[layer], self._links[layer]
        best = float(vecs[node] @ query)
        while True:
            row = links[node]
            row = row[row >= 0]
            if row.size == 0:
                return node
            sims = np.take(vecs, row, axis=0) @ query
            i = int(sims.argmax())
            if sims[i] <= best:
                return node
            node, best = int(row[i]), float(sims[i])


    def _scratch(self, layer: int) -> tuple[np.ndarray, np.ndarray, int]:
        """This thread's visited marks and de-duplication slots for ``layer``, and a fresh generation.

        ``marks`` has one extra slot at the end so that the -1 padding of a link row indexes it; it is
        set to the current generation, which makes padding look visited and drops it with the visited
        filter.
        """
        state = self._local
        if not hasattr(state, "marks"):
            state.marks = [np.zeros(n + 1, np.int32) for n in self.layer_sizes]
            state.slots = [np.zeros(n + 1, np.intp) for n in self.layer_sizes]
            state.generation = 0
        state.generation += 1
        if state.generation >= np.iinfo(np.int32).max:
            for m in state.marks:
                m[:] = 0
            state.generation = 1
        marks = state.marks[layer]
        marks[-1] = state.generation
        return marks, state.slots[layer], state.generation

    def _best_first(self, query: np.ndarray, entries: list[int], layer: int, ef: int
                    ) -> tuple[np.ndarray, np.ndarray]:
        """SearchLayer: best-first search on one layer; the ``ef`` nearest found (sims, rows), nearest first.

        HNSW's SEARCH-LAYER keeps a candidate queue ``C`` and the dynamic list ``W`` (the ``ef`` nearest
        seen). Every candidate enters ``W`` when it enters ``C``, and one that has left ``W`` is farther
        than everything in ``W``, so popping it ends the search. Hence "expand the nearest unexpanded node
        of ``W``; stop when every node of ``W`` is expanded" is the same procedure, and it needs only
        arrays: ``W`` is three numpy arrays and no Python loop runs per scored node. Up to
        ``expand_batch`` nearest unexpanded nodes are expanded together (one gather and one
        matrix-vector product for all their new neighbours); with a batch of 1 this is exactly
        SEARCH-LAYER, larger batches cut the per-step overhead and explore slightly more.
        """
        vecs, links = self._vectors[layer], self._links[layer]
        marks, slots, gen = self._scratch(layer)
        batch = self.expand_batch
        ids = np.unique(np.asarray(entries, np.intp))
        marks[ids] = gen
        sims = vecs[ids] @ query
        expanded = np.zeros(ids.size, bool)
        while True:
            todo = np.flatnonzero(~expanded)
            if todo.size == 0:
                break  # every node of W is expanded: nothing nearer can be reached
            if todo.size > batch:
                todo = todo[np.argpartition(-sims[todo], batch - 1)[:batch]]
            expanded[todo] = True
            row = links[ids[todo]].ravel()
            row = row[marks[row] != gen]  # unvisited neighbours (padding is marked visited)
            if row.size == 0:
                continue
            if todo.size > 1:  # expanded nodes may share a neighbour: keep one copy (last write wins)
                pos = _POSITIONS[: row.size] if row.size <= _POSITIONS.size else np.arange(row.size)
                slots[row] = pos
                row = row[slots[row] == pos]
            marks[row] = gen
            new = np.take(vecs, row, axis=0) @ query  # all new neighbours scored in one product
            if ids.size >= ef:
                better = new > sims.min()
                if not better.all():
                    row, new = row[better], new[better]
                if row.size == 0:
                    continue
            ids = np.concatenate((ids, row))
            sims = np.concatenate((sims, new))
            expanded = np.concatenate((expanded, np.zeros(row.size, bool)))
            if ids.size > ef:  # keep the ef nearest
                keep = np.argpartition(-sims, ef - 1)[:ef]
                ids, sims, expanded = ids[keep], sims[keep], expanded[keep]
        order = np.lexsort((ids, -sims))  # nearest first; ties by row, so results never depend on order
        return sims[order], ids[order]

    def _exact(self, query: np.ndarray, layer: int, k: int) -> tuple[np.ndarray, np.ndarray]:
        """Score a whole (small) layer at once; the ``k`` best (sims, rows), nearest first."""
        sims = self._vectors[layer] @ query
        top = np.arange(sims.size) if sims.size <= k else np.argpartition(-sims, k - 1)[:k]
        order = top[np.lexsort((top, -sims[top]))]
        return sims[order], order

    def _search(self, query: np.ndarray, entry: int, layer: int, ef: int) -> tuple[np.ndarray, np.ndarray]:
        """Query-time SearchLayer; a layer of at most ``exact_layer_size`` nodes, or not more than ``ef``
        (the list would hold all of it), is scored exactly instead of walked."""
        if self.layer_sizes[layer] <= max(ef, self.exact_layer_size):
            return self._exact(query, layer, ef)
        return self._best_first(query, [entry], layer, ef)

    def _check_layer(self, layer: int) -> None:
        if not isinstance(layer, (int, np.integer)) or not 0 <= layer < self.num_layers:
            raise ValueError(f"layer must be an integer in [0, {self.num_layers - 1}], got {layer!r}")

    def _check_query(self, query: np.ndarray, k: int, ef: int) -> np.ndarray:
        q = np.asarray(query, dtype=np.float32)
        if q.ndim == 2 and q.shape[0] == 1:
            q = q[0]
        if q.ndim != 1 or q.shape[0] != self.dim:
            raise ValueError(f"query must be a vector of dimension {self.dim}, got shape {np.shape(query)}")
        if not np.isfinite(q).all():
            raise ValueError("query contains NaN or infinite values")
        if not isinstance(k, (int, np.integer)) or k < 1:
            raise ValueError(f"k must be a positive integer, got {k!r}")
        if not isinstance(ef, (int, np.integer)) or ef < 1:
            raise ValueError(f"ef must be a positive integer, got {ef!r}")
        return unit_rows(q)

    @staticmethod
    def _top(sims: np.ndarray, ids: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
        return np.asarray(ids[:k], np.int64), np.asarray(sims[:k], np.float32)

    def search_layer(self, query: np.ndarray, layer: int, k: int, ef: int = 64
                     ) -> tuple[np.ndarray, np.ndarray]:
        """Algorithm 2: the ``k`` nearest nodes of ``layer`` (rows of that layer, cosines), best first.

        Greedy descent from the top layer through inter-layer links, then best-first search with a list
        of size ``max(ef, k)`` on ``layer``. ``k`` larger than the layer returns the whole layer.
        """
        self._check_layer(layer)
        q = self._check_query(query, k, ef)
        _, entry = self._descend(q, layer, exact_small=True)
        if entry < 0:  # query layer is the top one
            entry = self._entry
        sims, ids = self._search(q, entry, layer, ef=max(ef, k))
        return self._top(sims, ids, k)

    def search_all_layers(self, query: np.ndarray, k: int, ef: int = 64
                          ) -> list[tuple[np.ndarray, np.ndarray]]:
        """Hierarchical search (Section 3.2.1): every layer's top ``k`` in one descent; index = layer.

        Each layer is searched with a list of size ``max(ef, k)``, entering through the inter-layer link
        of the best result on the layer above.
        """
        q = self._check_query(query, k, ef)
        results: list[tuple[np.ndarray, np.ndarray]] = []
        entry = self._entry
        for layer in range(self.num_layers - 1, -1, -1):
            sims, ids = self._search(q, entry, layer, ef=max(ef, k))
            results.append(self._top(sims, ids, k))
            if layer > 0:
                entry = int(self._down[layer][ids[0]])
        return results[::-1]
