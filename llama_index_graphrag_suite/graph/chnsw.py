"""C-HNSW: one navigable-small-world index over every layer of ArchRAG's community hierarchy.

ArchRAG (Section 3.1.3, Eq. 1-2; Appendix A.2, Algorithm 3; Section 3.2.1, Algorithm 2). Layer 0 holds
the entities, layer ``l >= 1`` the attributed communities of level ``l``; unlike HNSW, **each node lives
on exactly one layer**. Two kinds of links:

* intra-layer (Eq. 1): each node links to its nearest neighbours on its own layer;
* inter-layer (Eq. 2): each node on layer ``l >= 1`` links to its nearest neighbour on layer ``l - 1``.

**Query (Algorithm 2).** Start at a fixed, seeded random node of the top layer. On every layer above the
query layer, a greedy search (best-first with a list of size 1) finds the node nearest to the query and
its inter-layer link becomes the entry point one layer down. On the query layer, best-first search with a
dynamic list ``W`` of size ``max(ef, k)`` repeatedly expands the nearest unexpanded node of ``W``, scores
its unvisited neighbours, keeps the best ``ef`` in ``W`` and stops when every node of ``W`` has been
expanded (equivalent to HNSW's "nearest candidate farther than the farthest of ``W``" test; see
:meth:`CHNSW._best_first`). :meth:`CHNSW.search_all_layers` is the hierarchical search of Section 3.2.1:
every layer's top ``k`` in one descent, entering each layer through the inter-layer link of the best
result on the layer above.

Two speed measures for a pure-numpy walk, both documented where they act: up to ``EXPAND_BATCH`` (16)
nearest unexpanded nodes are expanded together, so one gather and one matrix-vector product score all
their new neighbours (a batch of 1 is the textbook procedure; recall is the same or slightly higher);
and at query time a layer of at most ``exact_layer_size`` (2048) nodes is scored exactly, because one
product over a couple of thousand vectors costs less than the fixed overhead of a Python graph walk
(about 0.05 ms for 1000 nodes against 0.5-1 ms, measured on 384-d entity vectors). Set
``index.exact_layer_size = 0`` to walk the graph on every layer.

**Construction (Algorithm 3), top-down.** Layers are filled from the top; within a layer nodes are
inserted in a seeded random order (so rows sorted by cluster do not bias the graph), each through the
query procedure above with ``ef = ef_construction``:

* the greedy descent ends at ``u``, the node of layer ``l + 1`` nearest to the new node ``x``; ``u``'s
  inter-layer link is set to ``x`` if ``u`` has none yet (case 1) or ``x`` is closer to ``u`` than its
  current link (case 2);
* the ``ef_construction`` nearest nodes found on layer ``l`` are the candidates for ``x``'s intra-layer
  links. ``x`` keeps up to ``M`` of them chosen with HNSW's neighbour-selection heuristic (Malkov &
  Yashunin 2018, Algorithm 4; the authors' C++ ``shrink_neighbor_list`` does the same): walking the
  candidates nearest first, keep one if it is closer to ``x`` than to every neighbour kept so far. It
  always keeps the nearest neighbour and spends the other links on different directions, which keeps
  clustered data navigable (plain "M nearest" links, Eq. 1 read literally, can leave tight clusters
  linked only among themselves; Malkov & Yashunin, Section 4). ``neighbour_rule="nearest"`` gives the
  literal rule for comparison.
* links are undirected: ``x`` is added to each chosen neighbour's list. **Capacity rule:** a node holds
  at most ``2 * M`` links (HNSW's layer-0 capacity, used on every layer here because every C-HNSW layer is
  a query layer, not just a routing layer); when a list overflows, it is re-selected from its old links
  plus ``x`` with the same rule, down to ``2 * M``.

After a layer is complete, every node of the layer above without an inter-layer link gets one (the check
at the end of Appendix A.2), and with ``refine_links=True`` (default) every node of the layer above
re-searches the finished layer for its nearest neighbour, since the two update cases only ever consider
the new node whose greedy descent happened to end at it. The ``n_{l+1}`` extra searches are cheap
(upper layers are small) and make the inter-layer links the true nearest neighbours in nearly all cases.

Vectors are L2-normalised on the way in and similarity is the inner product (cosine). Pure numpy; the
search state (visited marks with a generation counter) is per thread, so concurrent queries are safe.
Persisted as one ``.npz`` plus one ``.json`` (no pickle), each written to a temporary file and renamed.
"""

from __future__ import annotations

import hashlib
import json
import os
import threading
from pathlib import Path

import numpy as np

FORMAT_VERSION = 1
ARRAYS_FILE = "chnsw_arrays.npz"
META_FILE = "chnsw.json"
NEIGHBOUR_RULES = ("heuristic", "nearest")
# At query time a layer of at most this many nodes is scored exactly (one matrix-vector product): a
# graph walk in Python costs about as much as scoring a few thousand vectors in one product (see
# benchmarks/chnsw_bench.py), so below this size exact search is both faster and exact.
EXACT_LAYER_SIZE = 2048
# Candidates expanded together in the best-first search (see CHNSW._best_first).
EXPAND_BATCH = 16
_POSITIONS = np.arange(1 << 14, dtype=np.intp)  # 0, 1, 2, ... for de-duplication (see _best_first)


class CHNSWNotFoundError(FileNotFoundError):
    """No saved C-HNSW index in the folder."""


class CorruptCHNSWError(ValueError):
    """The saved C-HNSW files are unreadable, inconsistent or were written by an unknown format."""


def _normalise(vectors: np.ndarray) -> np.ndarray:
    norms = np.linalg.norm(vectors, axis=-1, keepdims=True)
    return (vectors / np.where(norms > 0, norms, 1.0)).astype(np.float32)


class CHNSW:
    """Layer 0 = bottom (entities); layer ``L-1`` = top. Each node lives on exactly one layer.

    Nodes are addressed by ``(layer, row)`` where ``row`` is the row of ``layers[layer]`` given to
    :meth:`build`. Build with :meth:`build`, query with :meth:`search_layer` / :meth:`search_all_layers`.
    """

    def __init__(self, vectors: list[np.ndarray], links: list[np.ndarray], down: list[np.ndarray],
                 entry: int, M: int, ef_construction: int, seed: int, neighbour_rule: str = "heuristic"):
        # Internal constructor; arrays are trusted (build() and load() check them).
        self._vectors = vectors          # per layer: (n_l, dim) float32, unit rows
        # per layer: (n_l, 2M) rows on the same layer, -1 padded; int32 on disk, intp in memory because
        # numpy fancy indexing with intp skips a conversion on every expansion of the search
        self._links = [np.ascontiguousarray(lk, dtype=np.intp) for lk in links]
        self._degree = [(lk >= 0).sum(axis=1).astype(np.int32) for lk in self._links]
        self._down = down                # per layer: (n_l,) int32 row on layer l-1; layer 0: all -1
        self._entry = int(entry)         # the fixed start node on the top layer
        self.M, self.ef_construction, self.seed = int(M), int(ef_construction), int(seed)
        self.neighbour_rule = neighbour_rule
        self.expand_batch = EXPAND_BATCH
        self.exact_layer_size = EXACT_LAYER_SIZE  # query-time only; set to 0 to walk every layer
        self._local = threading.local()

    # ------------------------------------------------------------------ properties
    @property
    def num_layers(self) -> int:
        return len(self._vectors)

    @property
    def layer_sizes(self) -> list[int]:
        return [v.shape[0] for v in self._vectors]

    @property
    def dim(self) -> int:
        return self._vectors[0].shape[1]

    @property
    def capacity(self) -> int:
        """Most intra-layer links a node holds (2M)."""
        return self._links[0].shape[1]

    def neighbours(self, layer: int, row: int) -> np.ndarray:
        """Intra-layer links of one node (rows on the same layer)."""
        self._check_layer(layer)
        return self._links[layer][row, : self._degree[layer][row]].copy()

    def inter_layer_links(self, layer: int) -> np.ndarray:
        """For each node of ``layer >= 1``, its linked row on ``layer - 1`` (Eq. 2)."""
        self._check_layer(layer)
        if layer == 0:
            raise ValueError("layer 0 is the bottom layer: it has no inter-layer links")
        return self._down[layer].copy()

    # ------------------------------------------------------------------ build
    @classmethod
    def build(cls, layers: list[np.ndarray], M: int = 16, ef_construction: int = 64, seed: int = 0,
              neighbour_rule: str = "heuristic", refine_links: bool = True) -> "CHNSW":
        """Build the index top-down by inserting every node through the query procedure (Algorithm 3).

        ``layers[l]`` is an ``(n_l, dim)`` array for layer ``l`` (0 = entities). ``M`` = links a new node
        makes (16, HNSW's usual value; a node holds at most ``2M``); ``ef_construction`` = candidate list
        size while inserting (64: recall ≥ 0.95 per layer in the tests at modest build cost); ``seed`` fixes
        the top-layer entry node and the insertion order, so builds repeat exactly.
        """
        if neighbour_rule not in NEIGHBOUR_RULES:
            raise ValueError(f"neighbour_rule must be one of {NEIGHBOUR_RULES}, got {neighbour_rule!r}")
        if not isinstance(M, (int, np.integer)) or not 1 <= M <= 1024:
            raise ValueError(f"M must be an integer in [1, 1024], got {M!r}")
        if not isinstance(ef_construction, (int, np.integer)) or ef_construction < 1:
            raise ValueError(f"ef_construction must be a positive integer, got {ef_construction!r}")
        vectors = cls._check_layers(layers)
        rng = np.random.default_rng(seed)
        top = len(vectors) - 1
        index = cls(
            vectors=vectors,
            links=[np.full((v.shape[0], 2 * M), -1, np.intp) for v in vectors],
            down=[np.full(v.shape[0], -1, np.int32) for v in vectors],
            entry=int(rng.integers(vectors[top].shape[0])),
            M=M, ef_construction=ef_construction, seed=seed, neighbour_rule=neighbour_rule,
        )
        index._build(rng, refine_links)
        return index

    @staticmethod
    def _check_layers(layers: list[np.ndarray]) -> list[np.ndarray]:
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
            if not np.isfinite(arr).all():
                raise ValueError(f"layer {l} contains NaN or infinite values")
            out.append(np.ascontiguousarray(_normalise(arr)))
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

    # ------------------------------------------------------------------ search
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
        return _normalise(q)

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

    # ------------------------------------------------------------------ persistence
    def save(self, folder: str | os.PathLike) -> None:
        """Write ``chnsw_arrays.npz`` and ``chnsw.json`` into ``folder`` (created if needed).

        Each file goes to a temporary name first and is renamed into place; the JSON, written last,
        records the arrays' SHA-256, so a half-finished pair is detected on load.
        """
        folder = Path(folder)
        folder.mkdir(parents=True, exist_ok=True)
        arrays = {}
        for l in range(self.num_layers):
            arrays[f"vectors_{l}"] = self._vectors[l]
            arrays[f"links_{l}"] = self._links[l].astype(np.int32)
            arrays[f"down_{l}"] = self._down[l]
        tmp_arrays = folder / f".{ARRAYS_FILE}.tmp"
        with open(tmp_arrays, "wb") as f:
            np.savez(f, **arrays)
            f.flush()
            os.fsync(f.fileno())
        meta = {
            "format_version": FORMAT_VERSION, "num_layers": self.num_layers, "layer_sizes": self.layer_sizes,
            "dim": self.dim, "M": self.M, "ef_construction": self.ef_construction, "seed": self.seed,
            "neighbour_rule": self.neighbour_rule, "entry": self._entry,
            "exact_layer_size": self.exact_layer_size, "expand_batch": self.expand_batch,
            "arrays_sha256": _sha256(tmp_arrays),
        }
        tmp_meta = folder / f".{META_FILE}.tmp"
        with open(tmp_meta, "w", encoding="utf-8") as f:
            json.dump(meta, f, indent=1)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp_arrays, folder / ARRAYS_FILE)
        os.replace(tmp_meta, folder / META_FILE)

    @classmethod
    def load(cls, folder: str | os.PathLike) -> "CHNSW":
        """Read an index written by :meth:`save`; clear errors when missing, corrupt or inconsistent."""
        folder = Path(folder)
        meta_path, arrays_path = folder / META_FILE, folder / ARRAYS_FILE
        for path in (meta_path, arrays_path):
            if not path.is_file():
                raise CHNSWNotFoundError(f"no C-HNSW index in {folder}: {path.name} is missing")
        try:
            meta = json.loads(meta_path.read_text(encoding="utf-8"))
        except (json.JSONDecodeError, UnicodeDecodeError) as exc:
            raise CorruptCHNSWError(f"{meta_path}: not valid JSON ({exc})") from exc
        if not isinstance(meta, dict) or meta.get("format_version") != FORMAT_VERSION:
            raise CorruptCHNSWError(f"{meta_path}: unknown format (expected format_version {FORMAT_VERSION})")
        if meta.get("arrays_sha256") != _sha256(arrays_path):
            raise CorruptCHNSWError(f"{arrays_path}: checksum does not match {META_FILE} (corrupt or half-written)")
        try:
            L, sizes, dim, M = int(meta["num_layers"]), list(meta["layer_sizes"]), int(meta["dim"]), int(meta["M"])
            with np.load(arrays_path, allow_pickle=False) as data:
                vectors = [data[f"vectors_{l}"] for l in range(L)]
                links = [data[f"links_{l}"] for l in range(L)]
                down = [data[f"down_{l}"] for l in range(L)]
            entry, ef_construction, seed = int(meta["entry"]), int(meta["ef_construction"]), int(meta["seed"])
            rule = str(meta.get("neighbour_rule", "heuristic"))
        except (KeyError, TypeError, ValueError, OSError) as exc:
            raise CorruptCHNSWError(f"corrupt C-HNSW index in {folder}: {exc}") from exc
        if len(sizes) != L or L < 1 or rule not in NEIGHBOUR_RULES:
            raise CorruptCHNSWError(f"corrupt C-HNSW index in {folder}: bad metadata in {META_FILE}")
        for l in range(L):
            n = sizes[l]
            ok = (vectors[l].shape == (n, dim) and vectors[l].dtype == np.float32
                  and links[l].shape == (n, 2 * M) and links[l].dtype == np.int32
                  and down[l].shape == (n,) and links[l].max(initial=-1) < n and links[l].min(initial=-1) >= -1
                  and (l == 0 or (down[l].min(initial=0) >= 0 and down[l].max(initial=-1) < sizes[l - 1])))
            if not ok:
                raise CorruptCHNSWError(f"corrupt C-HNSW index in {folder}: layer {l} arrays are inconsistent")
        if not 0 <= entry < sizes[-1]:
            raise CorruptCHNSWError(f"corrupt C-HNSW index in {folder}: entry node out of range")
        index = cls(vectors, links, down, entry, M, ef_construction, seed, rule)
        index.exact_layer_size = int(meta.get("exact_layer_size", EXACT_LAYER_SIZE))
        index.expand_batch = max(1, int(meta.get("expand_batch", EXPAND_BATCH)))
        return index


def _sha256(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()
