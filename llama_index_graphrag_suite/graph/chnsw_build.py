"""C-HNSW construction (ArchRAG Appendix A.2, Algorithm 3): top-down insertion, link selection, inter-layer links.

The build half of :class:`graph.chnsw.CHNSW` (see that module's docstring for the rules: HNSW's
neighbour-selection heuristic, the ``2M`` capacity rule, Appendix A.2's two inter-layer update cases and
the final link refinement). Two builders make the same structure:

* ``"faiss"`` (default): each layer's links are the bottom level of a faiss ``IndexHNSWFlat`` built over that
  layer alone (inner product on unit rows; the same neighbour-selection heuristic, ``2M`` links per node), and
  each node's inter-layer link is its nearest node one layer down, searched in that layer's index. This is the
  "one HNSW per layer plus nearest-lower-layer cross links" emulation of the authors' C++ ``IndexHCHNSW``; faiss
  runs single-threaded here so that builds repeat exactly. About 6x faster than the Python insertion at
  50,000 / 12,000 / 3,000 nodes with the same search recall per layer (``studies/perf/chnsw_builders.py``).
* ``"insertion"``: Algorithm 3 itself in numpy, each node inserted top-down through the query procedure of
  ``chnsw_search.py``.
"""

from __future__ import annotations

import numpy as np

from .chnsw_search import CHNSWSearch, unit_rows

NEIGHBOUR_RULES = ("heuristic", "nearest")
FINITE_BLOCK = 65_536  # rows checked for NaN at once (a whole mask is a quarter of the layer's size again)
BUILDERS = ("faiss", "insertion")

__all__ = ["BUILDERS", "CHNSWBuild", "NEIGHBOUR_RULES", "faiss_layers", "hnsw_layer", "hnsw_rows", "hnsw_search"]


def hnsw_layer(x: np.ndarray, M: int, ef_construction: int):
    """A faiss ``IndexHNSWFlat`` (inner product) over one layer's unit rows, as the faiss builder makes it."""
    import faiss

    threads = faiss.omp_get_max_threads()
    faiss.omp_set_num_threads(1)  # HNSW insertion in several threads depends on their timing
    try:
        index = faiss.IndexHNSWFlat(x.shape[1], M, faiss.METRIC_INNER_PRODUCT)
        index.hnsw.efConstruction = ef_construction
        index.add(x)
    finally:
        faiss.omp_set_num_threads(threads)
    return index


class _StoredRows:
    """The rows a faiss flat-storage index holds, offered to numpy without a copy; numpy keeps this object (and
    through it the index, which owns the memory) alive as the array's base."""

    def __init__(self, index):
        import faiss

        flat = faiss.rev_swig_ptr(faiss.downcast_index(index.storage).get_xb(), index.ntotal * index.d)
        self._index = index
        self.__array_interface__ = {"shape": (index.ntotal, index.d), "typestr": "<f4", "version": 3,
                                    "data": (flat.__array_interface__["data"][0], True)}  # read-only


def hnsw_rows(index) -> np.ndarray:
    """The unit rows an :func:`hnsw_layer` index stores, as a read-only float32 array sharing its memory: the
    layer's vectors need not be kept twice (the array keeps the index alive)."""
    if index.ntotal == 0:
        return np.zeros((0, index.d), np.float32)
    return np.asarray(_StoredRows(index))


SEARCH_BATCH = 65_536  # query rows searched at once (bounded result buffers)


def hnsw_search(index, queries: np.ndarray, k: int, ef: int) -> tuple[np.ndarray, np.ndarray]:
    """(similarities, rows) of each query's ``k`` nearest rows in a :func:`hnsw_layer` index, best first."""
    index.hnsw.efSearch = ef
    parts = [index.search(queries[start:start + SEARCH_BATCH], k) for start in range(0, queries.shape[0], SEARCH_BATCH)]
    return np.concatenate([p[0] for p in parts]), np.concatenate([p[1] for p in parts])


LINK_BLOCK = 65_536  # nodes whose bottom-level links are gathered at once


def _bottom_links(index) -> np.ndarray:
    """(n, 2M) intp: each node's neighbour slots on the bottom level of a faiss HNSW (-1 padded), gathered a block of
    nodes at a time into the result (the slot numbers and an int32 copy of every node's links were each as large)."""
    import faiss

    hnsw = index.hnsw
    offsets = faiss.vector_to_array(hnsw.offsets).astype(np.int64)
    neighbours = faiss.vector_to_array(hnsw.neighbors)
    width = hnsw.nb_neighbors(0)
    columns = hnsw.cum_nb_neighbors(0) + np.arange(width)
    out = np.empty((offsets.size - 1, width), np.intp)
    for start in range(0, out.shape[0], LINK_BLOCK):
        stop = min(start + LINK_BLOCK, out.shape[0])
        out[start:stop] = neighbours[offsets[start:stop, None] + columns[None, :]]
    return out


def faiss_layers(layers: list[np.ndarray], M: int, ef_construction: int, prebuilt: dict | None = None
                 ) -> tuple[list[np.ndarray], list[np.ndarray]]:
    """(links, down) per layer from one faiss HNSW per layer: a node's links are its bottom-level neighbours
    there (``2M`` slots, -1 padded), its inter-layer link the nearest node one layer down (layer 0: all -1).
    ``prebuilt``: layer -> its :func:`hnsw_layer` index, already built over exactly these rows (not built again)."""
    import faiss

    threads = faiss.omp_get_max_threads()
    indexes, links = [], []
    faiss.omp_set_num_threads(1)  # HNSW insertion in several threads depends on their timing
    try:
        for layer, x in enumerate(layers):
            index = (prebuilt or {}).get(layer)
            if index is None:
                index = hnsw_layer(x, M, ef_construction)
            elif (index.ntotal != x.shape[0] or index.d != x.shape[1] or index.hnsw.nb_neighbors(0) != 2 * M
                  or index.hnsw.efConstruction != ef_construction):
                raise ValueError(f"the prebuilt HNSW of layer {layer} was built over other rows or settings")
            links.append(_bottom_links(index))
            indexes.append(index)
    finally:
        faiss.omp_set_num_threads(threads)
    down = [np.full(layers[0].shape[0], -1, np.int32)]
    for below, x in zip(indexes, layers[1:]):  # searches are independent per query: every thread may take part
        below.hnsw.efSearch = 2 * ef_construction  # one nearest neighbour, searched a little wider
        down.append(below.search(x, 1)[1][:, 0].astype(np.int32))
    return links, down


class CHNSWBuild(CHNSWSearch):
    """Construction methods of :class:`graph.chnsw.CHNSW` (the search methods it inserts with are inherited)."""

    @staticmethod
    def _check_layers(layers: list[np.ndarray], in_place: bool = False, as_given: frozenset = frozenset()
                      ) -> list[np.ndarray]:
        if not isinstance(layers, (list, tuple)) or not layers:
            raise ValueError("layers must be a non-empty list of (n, dim) arrays, bottom layer first")
        out, dim = [], None
        for l, layer in enumerate(layers):
            arr = np.asarray(layer)
            if arr.ndim != 2:
                raise ValueError(f"layer {l}: expected a 2-D (n, dim) array, got shape {arr.shape}")
            if arr.shape[0] == 0:
                raise ValueError(f"layer {l} is empty: every layer needs at least one node")
            if arr.shape[1] == 0:
                raise ValueError(f"layer {l}: vectors have dimension 0")
            if dim is None:
                dim = arr.shape[1]
            elif arr.shape[1] != dim:
                raise ValueError(f"layer {l}: dimension {arr.shape[1]} differs from layer 0's {dim}")
            arr = arr.astype(np.float32, copy=False)
            if not all(np.isfinite(arr[i:i + FINITE_BLOCK]).all() for i in range(0, arr.shape[0], FINITE_BLOCK)):
                raise ValueError(f"layer {l} contains NaN or infinite values")
            if l in as_given:  # the rows a prebuilt index holds: already unit rows, kept bit for bit
                out.append(np.ascontiguousarray(arr))
                continue
            out.append(np.ascontiguousarray(unit_rows(arr, in_place=in_place and arr.flags.c_contiguous)))
        return out

    def _build(self, rng: np.random.Generator, refine_links: bool) -> None:
        top = self.num_layers - 1
        for layer in range(top, -1, -1):
            order = rng.permutation(self._vectors[layer].shape[0])
            if layer == top:  # the query entry node goes in first, so it is always reachable
                order = np.concatenate([[self._entry], order[order != self._entry]])
            # Similarity of each node one layer up to its current inter-layer link (for case 2).
            down_sim = None if layer == top else np.full(self.layer_sizes[layer + 1], -np.inf, np.float32)
            first = int(order[0])
            for i, row in enumerate(order.tolist()):
                entry = self._enter(layer, row, down_sim)
                if i > 0:  # the first node of a layer has nobody to link to yet
                    self._insert(layer, row, entry if entry >= 0 else first)
            if layer < top:
                self._finish_down_links(layer, first, refine_links)

    def _insert(self, layer: int, row: int, entry: int) -> None:
        """Link a new node into its layer: search from ``entry``, select links, add the reverse links."""
        vecs = self._vectors[layer]
        x = vecs[row]
        sims, ids = self._best_first(x, [entry], layer, ef=self.ef_construction)
        chosen = self._select(layer, np.asarray(sims, np.float32), np.asarray(ids, np.intp), self.M)
        links, degree = self._links[layer], self._degree[layer]
        links[row, : chosen.size] = chosen
        degree[row] = chosen.size
        cap = links.shape[1]
        for nb in chosen.tolist():  # undirected: add x to each chosen neighbour, pruning on overflow
            d = degree[nb]
            if d < cap:
                links[nb, d] = row
                degree[nb] = d + 1
                continue
            pool = np.append(links[nb], row)
            pool_sims = vecs[pool] @ vecs[nb]
            order = np.argsort(-pool_sims, kind="stable")
            kept = self._select(layer, pool_sims[order], pool[order], cap)
            links[nb] = -1
            links[nb, : kept.size] = kept
            degree[nb] = kept.size

    def _enter(self, layer: int, row: int, down_sim: np.ndarray | None) -> int:
        """Descend towards a new node, apply Appendix A.2's two update cases; its entry point (or -1)."""
        if down_sim is None:  # top layer: enter at the fixed entry node
            return self._entry
        u, entry = self._descend(self._vectors[layer][row], layer)
        sim = float(self._vectors[layer + 1][u] @ self._vectors[layer][row])
        if self._down[layer + 1][u] < 0 or sim > down_sim[u]:  # case 1: no link yet; case 2: closer
            self._down[layer + 1][u] = row
            down_sim[u] = sim
        return entry  # u's link before the update: a node already in the layer, or -1

    def _finish_down_links(self, layer: int, first: int, refine: bool) -> None:
        """After ``layer`` is complete, give every node above a link (and, if ``refine``, its best one)."""
        upper = self._vectors[layer + 1]
        down = self._down[layer + 1]
        rows = np.arange(upper.shape[0]) if refine else np.flatnonzero(down < 0)
        for u in rows.tolist():
            start = int(down[u]) if down[u] >= 0 else first
            _, ids = self._best_first(upper[u], [start], layer, ef=self.ef_construction)
            down[u] = ids[0]

    def _select(self, layer: int, sims: np.ndarray, ids: np.ndarray, m: int) -> np.ndarray:
        """Pick at most ``m`` links from candidates sorted nearest first (see the module docstring)."""
        if ids.size <= m:
            return ids
        if self.neighbour_rule == "nearest":
            return ids[:m]
        cand = self._vectors[layer][ids]
        closest_kept = np.full(ids.size, -np.inf, np.float32)  # each candidate's best sim to a kept one
        kept = []
        for i, sim in enumerate(sims.tolist()):
            if sim > closest_kept[i]:  # closer to the base node than to every kept neighbour
                kept.append(i)
                if len(kept) == m:
                    break
                # One matrix-vector product per kept link (a full Gram matrix would be a small GEMM,
                # which multi-threaded BLAS makes slow on a busy machine).
                np.maximum(closest_kept, cand @ cand[i], out=closest_kept)
        return ids[kept]

