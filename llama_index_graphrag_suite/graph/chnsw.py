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

**Construction.** By default each layer's links come from a faiss HNSW over that layer and every inter-layer
link is the nearest node one layer down (``builder="faiss"``, see ``chnsw_build.py``); ``builder="insertion"``
is Algorithm 3 itself, described here. **Algorithm 3, top-down.** Layers are filled from the top; within a layer nodes are
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
Persisted as one ``.npy`` per array plus one ``.json`` (no pickle), each written to a temporary file and renamed.

Code: the query procedures in ``chnsw_search.py``, the construction in ``chnsw_build.py``, the files in
``chnsw_io.py``; every public name is importable from this module.
"""

from __future__ import annotations

import os
import threading

import numpy as np

from .chnsw_build import BUILDERS, NEIGHBOUR_RULES, CHNSWBuild, faiss_layers, hnsw_layer, hnsw_rows, hnsw_search
from .chnsw_io import (ARRAYS_FILE, FORMAT_VERSION, META_FILE, CHNSWNotFoundError, CorruptCHNSWError, read_chnsw,
                       save_chnsw)
from .chnsw_search import EXACT_LAYER_SIZE, EXPAND_BATCH

__all__ = [
    "ARRAYS_FILE", "CHNSW", "CHNSWNotFoundError", "CorruptCHNSWError", "EXACT_LAYER_SIZE", "EXPAND_BATCH",
    "FORMAT_VERSION", "META_FILE", "NEIGHBOUR_RULES", "faiss_layers", "hnsw_layer", "hnsw_rows", "hnsw_search",
]


class CHNSW(CHNSWBuild):
    """Layer 0 = bottom (entities); layer ``L-1`` = top. Each node lives on exactly one layer.

    Nodes are addressed by ``(layer, row)`` where ``row`` is the row of ``layers[layer]`` given to
    :meth:`build`. Build with :meth:`build`, query with :meth:`search_layer` / :meth:`search_all_layers`.
    The query procedures live in ``chnsw_search.py``, the construction in ``chnsw_build.py``, the files
    in ``chnsw_io.py``; this class holds the arrays they share.
    """

    def __init__(self, vectors: list[np.ndarray], links: list[np.ndarray], down: list[np.ndarray],
                 entry: int, M: int, ef_construction: int, seed: int, neighbour_rule: str = "heuristic"):
        # Internal constructor; arrays are trusted (build() and load() check them).
        self._vectors = vectors          # per layer: (n_l, dim) float32, unit rows
        # per layer: (n_l, 2M) rows on the same layer, -1 padded; int32 on disk. A build's are intp (numpy fancy
        # indexing with intp skips a conversion on every expansion of the search); a loaded index's stay as mapped,
        # int32: widened into RAM they held 338 MB per serving process at 1,000,000 entities
        self._links = [lk if isinstance(lk, np.memmap) else np.ascontiguousarray(lk, dtype=np.intp) for lk in links]
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

    def layer_vectors(self, layer: int) -> np.ndarray:
        """The unit vectors of one layer (read-only; memory-mapped in a loaded index)."""
        self._check_layer(layer)
        return self._vectors[layer]

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
              neighbour_rule: str = "heuristic", refine_links: bool = True, builder: str = "faiss",
              copy: bool = True, prebuilt: dict | None = None) -> "CHNSW":
        """Build the index over ``layers``: by one faiss HNSW per layer (``builder="faiss"``) or by inserting every
        node top-down through the query procedure (``"insertion"``, Algorithm 3; see ``chnsw_build.py``).

        ``layers[l]`` is an ``(n_l, dim)`` array for layer ``l`` (0 = entities). ``M`` = links a new node
        makes (16, HNSW's usual value; a node holds at most ``2M``); ``ef_construction`` = candidate list
        size while inserting (64: recall ≥ 0.95 per layer in the tests at modest build cost); ``seed`` fixes
        the top-layer entry node and (insertion) the insertion order, so builds repeat exactly.
        ``neighbour_rule`` and ``refine_links`` are the insertion builder's. ``copy=False``: the caller gives
        ``layers`` up, and each float32 C-contiguous one is scaled to unit rows in place and kept as the index's own
        (one copy of the entity vectors less at build time; the same numbers as with a copy). ``prebuilt`` (faiss
        builder): layer -> a ``chnsw_build.hnsw_layer`` index built over exactly that layer's unit rows with these
        ``M`` and ``ef_construction`` (ArchRAG's KNN step searched it); reused, and its rows are kept as given.
        """
        if neighbour_rule not in NEIGHBOUR_RULES:
            raise ValueError(f"neighbour_rule must be one of {NEIGHBOUR_RULES}, got {neighbour_rule!r}")
        if builder not in BUILDERS:
            raise ValueError(f"builder must be one of {BUILDERS}, got {builder!r}")
        if builder == "faiss" and neighbour_rule != "heuristic":
            raise ValueError("the faiss builder selects links by HNSW's heuristic; neighbour_rule='nearest' needs "
                             "builder='insertion'")
        if not isinstance(M, (int, np.integer)) or not 1 <= M <= 1024:
            raise ValueError(f"M must be an integer in [1, 1024], got {M!r}")
        if not isinstance(ef_construction, (int, np.integer)) or ef_construction < 1:
            raise ValueError(f"ef_construction must be a positive integer, got {ef_construction!r}")
        if prebuilt and builder != "faiss":
            raise ValueError("prebuilt layer indexes need builder='faiss'")
        vectors = cls._check_layers(layers, in_place=not copy, as_given=frozenset(prebuilt or ()))
        rng = np.random.default_rng(seed)
        top = len(vectors) - 1
        entry = int(rng.integers(vectors[top].shape[0]))
        if builder == "faiss":
            links, down = faiss_layers(vectors, int(M), int(ef_construction), prebuilt)
            return cls(vectors=vectors, links=links, down=down, entry=entry, M=M, ef_construction=ef_construction,
                       seed=seed, neighbour_rule=neighbour_rule)
        index = cls(
            vectors=vectors,
            links=[np.full((v.shape[0], 2 * M), -1, np.intp) for v in vectors],
            down=[np.full(v.shape[0], -1, np.int32) for v in vectors],
            entry=entry, M=M, ef_construction=ef_construction, seed=seed, neighbour_rule=neighbour_rule,
        )
        index._build(rng, refine_links)
        return index

    # ------------------------------------------------------------------ persistence
    def save(self, folder: str | os.PathLike) -> None:
        """Write one ``.npy`` per array and ``chnsw.json`` into ``folder`` (created if needed).

        Each file goes to a temporary name first and is renamed into place; the JSON, written last,
        records the arrays' SHA-256, so a half-finished set is detected on load.
        """
        arrays = {}
        for l in range(self.num_layers):
            arrays[f"vectors_{l}"] = self._vectors[l]
            arrays[f"links_{l}"] = self._links[l].astype(np.int32)
            arrays[f"down_{l}"] = self._down[l]
        save_chnsw(folder, arrays, {
            "num_layers": self.num_layers, "layer_sizes": self.layer_sizes,
            "dim": self.dim, "M": self.M, "ef_construction": self.ef_construction, "seed": self.seed,
            "neighbour_rule": self.neighbour_rule, "entry": self._entry,
            "exact_layer_size": self.exact_layer_size, "expand_batch": self.expand_batch,
        })

    @classmethod
    def load(cls, folder: str | os.PathLike) -> "CHNSW":
        """Read an index written by :meth:`save` (vectors and links memory-mapped; a format-1 ``.npz`` is read
        too); clear errors when missing, corrupt or inconsistent."""
        parts = read_chnsw(folder, NEIGHBOUR_RULES)
        meta = parts["meta"]
        index = cls(parts["vectors"], parts["links"], parts["down"], parts["entry"], parts["M"],
                    parts["ef_construction"], parts["seed"], parts["neighbour_rule"])
        index.exact_layer_size = int(meta.get("exact_layer_size", EXACT_LAYER_SIZE))
        index.expand_batch = max(1, int(meta.get("expand_batch", EXPAND_BATCH)))
        return index
