"""Per-query cost graphs over a fixed edge list, without re-sorting the graph or pricing every edge per query.

AGRAG prices every edge by its similarity to the query (Eq. 14), so the costs change with each query
while the graph does not. :class:`PairCostIndex` does the sorting once: it groups the edges by unordered
node pair and lays out the symmetric CSR structure (every pair twice, columns sorted per row).

Each edge's cost is ``min(w[slot_a], w[slot_b])`` for a per-query vector ``w`` of *slot* costs (by
default one slot per edge, so ``w`` is simply the edge costs). AGRAG's Eq. 14 fits this with far fewer
slots than edges: a fact edge reads its fact's slot, a synonym edge the min of its two entities' slots
(``(1 - max cos) / 2`` is the smaller of the two ``(1 - cos) / 2``), a contains edge its chunk's slot.
A pair's cost is the cheapest of its parallel edges, so a CSR entry of a one-edge pair reads two slots and
an entry of a multi-edge pair reads one extra slot holding that pair's minimum (computed per query when a
search first reads the pair). :meth:`PairCostIndex.query` therefore costs next to nothing, and the entries a
search actually reads are priced on demand (:meth:`QueryCosts.entry_costs`) instead of all 2 x pairs of them.

:class:`CostGraph` is what the Steiner tree and MCMI expansion read: a CSR structure whose entry costs
come from a function. :class:`CSRCosts` wraps a plain scipy CSR matrix; :class:`QueryCosts` is one
query's costs over a :class:`PairCostIndex`. Costs are stored as ``max(cost, 0) + ZERO_COST`` (scipy's
csgraph reads a stored 0 as "no edge"), exactly what :meth:`PairCostIndex.matrix` puts in its matrix.
"""

from __future__ import annotations

import mmap
import threading
import weakref

import numpy as np
import scipy.sparse as sp

from .cosine_slots import CosineSlots

ZERO_COST = 1e-12  # scipy's csgraph reads a stored 0 as "no edge": free edges get this instead
_BLOCK = 1 << 16  # entries per slice when pricing the whole graph
_MAX_IDLE_BUFFERS = 2  # entry-cost buffers kept for reuse per index (2 x pairs x 8 bytes each)


def _scattered_buffer(size: int) -> np.ndarray:
    """An uninitialised float64 array for scattered writes, in small pages where the OS allows choosing.

    With transparent huge pages, the first write into each 2 MB page zeroes all of it; a query that prices
    a few thousand rows spread over a 55 MB buffer would pay for zeroing the whole buffer.
    """
    nbytes = max(size, 1) * 8
    if hasattr(mmap, "MADV_NOHUGEPAGE"):
        try:
            region = mmap.mmap(-1, nbytes)
            region.madvise(mmap.MADV_NOHUGEPAGE)
            return np.frombuffer(region, np.float64, count=size)
        except (OSError, ValueError):
            pass
    return np.empty(size)


def gather_rows(indptr: np.ndarray, rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """CSR entry positions of ``rows`` (in that order) and, for each, the position in ``rows`` it came from."""
    rows = np.asarray(rows, np.int64)
    starts = indptr[rows].astype(np.int64)
    counts = indptr[rows + 1].astype(np.int64) - starts
    total = int(counts.sum())
    if total == 0:
        return np.empty(0, np.int64), np.empty(0, np.int64)
    owner = np.repeat(np.arange(rows.size), counts)
    offsets = np.cumsum(counts) - counts  # where each row's run starts in the output
    entries = np.arange(total, dtype=np.int64) + (starts - offsets)[owner]
    return entries, owner


class CostGraph:
    """A symmetric graph: a CSR structure (``indptr``, ``indices``, columns sorted per row) and entry costs.

    Costs are positive (``max(cost, 0) + ZERO_COST``). Subclasses implement :meth:`entry_costs`.
    """

    indptr: np.ndarray
    indices: np.ndarray  # int32
    num_nodes: int

    def entry_costs(self, entries: np.ndarray) -> np.ndarray:
        raise NotImplementedError

    def gather(self, rows: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """The entries of ``rows`` (in that order): ``(entries, owner, costs)``, ``owner`` the position in
        ``rows`` each entry belongs to (see :func:`gather_rows`)."""
        entries, owner = gather_rows(self.indptr, rows)
        return entries, owner, self.entry_costs(entries)

    def row(self, u: int) -> tuple[np.ndarray, np.ndarray]:
        """Neighbours of ``u`` and the costs of the edges to them."""
        lo, hi = int(self.indptr[u]), int(self.indptr[u + 1])
        return self.indices[lo:hi], self.entry_costs(np.arange(lo, hi))

    def entry(self, u: int, v: int) -> int:
        """CSR position of the pair (u, v); -1 if there is no edge."""
        lo, hi = int(self.indptr[u]), int(self.indptr[u + 1])
        at = lo + int(np.searchsorted(self.indices[lo:hi], v))
        return at if at < hi and self.indices[at] == v else -1

    def cost(self, u: int, v: int) -> float:
        at = self.entry(u, v)
        if at < 0:
            raise KeyError(f"no edge between {u} and {v}")
        return float(self.entry_costs(np.array([at]))[0])

    def to_csr(self) -> sp.csr_matrix:
        """The whole cost matrix (every entry priced), a copy."""
        return self.shared_csr().copy()

    def shared_csr(self) -> sp.csr_matrix:
        """The whole cost matrix, possibly sharing this graph's arrays: valid only while this object lives
        (and unchanged)."""
        n = self.num_nodes
        return sp.csr_matrix((self.entry_costs(np.arange(self.indices.size)), self.indices, self.indptr), shape=(n, n))


class CSRCosts(CostGraph):
    """A symmetric scipy CSR cost matrix (sorted indices) as a :class:`CostGraph`; its data are the costs."""

    def __init__(self, matrix: sp.csr_matrix):
        matrix = matrix.tocsr()
        if not matrix.has_sorted_indices:
            matrix = matrix.sorted_indices()
        self.matrix = matrix
        self.indptr, self.indices = matrix.indptr, matrix.indices
        self.data = matrix.data
        self.num_nodes = matrix.shape[0]

    def entry_costs(self, entries: np.ndarray) -> np.ndarray:
        return self.data[entries]

    def shared_csr(self) -> sp.csr_matrix:
        return self.matrix


def symmetric_min(costs: sp.spmatrix) -> sp.csr_matrix:
    """A symmetric CSR cost matrix keeping the cheapest of parallel edges (and of both directions)."""
    coo = sp.coo_matrix(costs)
    rows = np.concatenate([coo.row, coo.col])
    cols = np.concatenate([coo.col, coo.row])
    data = np.concatenate([coo.data, coo.data]).astype(np.float64)
    keep = rows != cols
    rows, cols, data = rows[keep], cols[keep], data[keep]
    order = np.lexsort((data, cols, rows))
    rows, cols, data = rows[order], cols[order], data[order]
    first = np.ones(rows.size, bool)
    first[1:] = (rows[1:] != rows[:-1]) | (cols[1:] != cols[:-1])
    n = costs.shape[0]
    return sp.csr_matrix((np.maximum(data[first], 0.0) + ZERO_COST, (rows[first], cols[first])), shape=(n, n))


def as_cost_graph(costs, symmetric: bool = False) -> CostGraph:
    """A :class:`CostGraph` as is; a sparse matrix through :func:`symmetric_min` (unless ``symmetric``)."""
    if isinstance(costs, CostGraph):
        return costs
    return CSRCosts(costs.tocsr() if symmetric else symmetric_min(costs))


class PairCostIndex:
    """Pairs, symmetric CSR layout and slot lookups of a fixed edge list (built once per graph snapshot).

    ``slot_a``/``slot_b`` (default: the edge id for both) say which entries of the per-query slot vector an
    edge's cost is the minimum of; ``num_slots`` is that vector's length (default: the number of edges).
    """

    def __init__(self, src: np.ndarray, dst: np.ndarray, num_nodes: int, slot_a: np.ndarray | None = None,
                 slot_b: np.ndarray | None = None, num_slots: int | None = None):
        src = np.asarray(src, np.int64)
        dst = np.asarray(dst, np.int64)
        if src.shape != dst.shape:
            raise ValueError("src and dst differ in length")
        self.num_nodes = num_nodes
        self.num_edges = src.size
        if slot_a is None:
            slot_a = np.arange(src.size, dtype=np.int32)
            num_slots = src.size if num_slots is None else num_slots
        slot_b = slot_a if slot_b is None else slot_b
        self.slot_a = np.asarray(slot_a, np.int32)
        self.slot_b = np.asarray(slot_b, np.int32)
        if self.slot_a.shape != src.shape or self.slot_b.shape != src.shape:
            raise ValueError("one slot per edge")
        self.num_slots = int(num_slots if num_slots is not None else max(self.slot_a.max(initial=-1),
                                                                          self.slot_b.max(initial=-1)) + 1)
        lo, hi = np.minimum(src, dst), np.maximum(src, dst)
        keep = lo != hi  # self-loops never help a path
        key = lo * num_nodes + hi
        order = np.argsort(np.where(keep, key, -1), kind="stable")
        order = order[keep[order]]
        sorted_keys = key[order]
        del key
        starts = np.flatnonzero(np.r_[True, sorted_keys[1:] != sorted_keys[:-1]]) if order.size else np.empty(0, np.int64)
        del sorted_keys
        # pair p's edges: _order[_bounds[p]:_bounds[p + 1]] (int32 while edge positions fit: half the bytes)
        self._bounds = np.r_[starts, order.size].astype(np.int32 if order.size < 2**31 else np.int64)
        self._starts = self._bounds[:-1]  # first position of each pair in _order
        self._ends = self._bounds[1:]
        node_type = np.int32 if num_nodes < 2**31 else np.int64
        pair_lo, pair_hi = lo[order[starts]].astype(node_type), hi[order[starts]].astype(node_type)
        del lo, hi
        self._order = order.astype(np.int32) if src.size < 2**31 else order  # edge ids grouped by pair (ascending within one)
        self.pair_lo, self.pair_hi = pair_lo, pair_hi
        # Symmetric CSR: every pair twice (lo->hi and hi->lo), rows sorted, columns sorted within a row.
        rows = np.concatenate([pair_lo, pair_hi]).astype(np.int64)
        cols = np.concatenate([pair_hi, pair_lo])
        entry_order = np.argsort(rows * num_nodes + cols)  # by row, then column: one key, all distinct
        del rows
        npairs = pair_lo.size
        pair_of_entry = np.concatenate([np.arange(npairs), np.arange(npairs)])[entry_order]
        self._pair_of_entry = pair_of_entry.astype(np.int32 if npairs < 2**31 else np.int64)
        self._indices = cols[entry_order].astype(np.int32)
        del cols, entry_order
        counts = np.bincount(np.concatenate([pair_lo, pair_hi]).astype(np.int64), minlength=num_nodes)
        # scipy's csgraph wants int32 indices and indptr (it copies others): for whole-matrix searches; one array
        indptr = np.r_[0, np.cumsum(counts)]
        self._indptr = self._indptr32 = indptr.astype(np.int32 if indptr[-1] < 2**31 else np.int64)
        # Slots per entry: a one-edge pair reads its edge's two slots; a multi-edge pair reads slot
        # num_slots + m (both), where the per-query vector holds pair m's minimum.
        sizes = self._ends - starts
        multi = np.flatnonzero(sizes > 1)
        first_edge = self._order[starts]
        pair_a, pair_b = self.slot_a[first_edge], self.slot_b[first_edge]
        extra = (self.num_slots + np.arange(multi.size)).astype(np.int64)
        if self.num_slots + multi.size >= 2**31:
            raise ValueError("too many slots")
        pair_a[multi] = extra
        pair_b[multi] = extra
        self._entry_a = pair_a[pair_of_entry]
        self._entry_b = pair_b[pair_of_entry]
        del pair_of_entry
        # Most entries read one slot twice (a fact edge its fact, a contains edge its chunk, a multi-edge pair
        # its minimum): pricing reads slot a everywhere and the second slot only where it differs (min(x, x) = x).
        self._two_slots = self._entry_a != self._entry_b
        self._two_slot_entries = np.flatnonzero(self._two_slots)
        # The edges of the multi-edge pairs, grouped by pair, for the per-query minimum.
        self._multi_pairs = multi
        multi_sizes = sizes[multi]
        self._multi_edges = self._order[np.repeat(starts[multi], multi_sizes)
                                  + np.arange(int(multi_sizes.sum())) - np.repeat(np.cumsum(multi_sizes) - multi_sizes, multi_sizes)]
        self._multi_starts = np.r_[0, np.cumsum(multi_sizes)[:-1]].astype(np.int64) if multi.size else np.empty(0, np.int64)
        self._buffers: list[np.ndarray] = []  # idle entry-cost buffers of finished queries (see QueryCosts)
        self._buffers_lock = threading.Lock()

    def _borrow_buffer(self) -> np.ndarray:
        """An entry-cost buffer (contents undefined) for one :class:`QueryCosts`; one per concurrent query."""
        with self._buffers_lock:
            if self._buffers:
                return self._buffers.pop()
        return _scattered_buffer(self._indices.size)

    def _return_buffer(self, buffer: np.ndarray) -> None:
        with self._buffers_lock:
            if len(self._buffers) < _MAX_IDLE_BUFFERS:
                self._buffers.append(buffer)

    @property
    def num_pairs(self) -> int:
        return int(self.pair_lo.size)

    @property
    def indptr(self) -> np.ndarray:
        return self._indptr

    @property
    def indices(self) -> np.ndarray:
        return self._indices

    # ------------------------------------------------------------------ per query

    def query(self, slot_costs: np.ndarray, cosine_slots: "CosineSlots | None" = None) -> "QueryCosts":
        """One query's costs from the ``num_slots`` ``slot_costs`` (float64 or float32; see :class:`QueryCosts`)."""
        return QueryCosts(self, slot_costs, cosine_slots)

    def edge_costs(self, slot_costs: np.ndarray) -> np.ndarray:
        """The cost of every edge (``min`` of its two slots), as a float64 array."""
        w = np.asarray(slot_costs, np.float64)
        return np.minimum(w[self.slot_a], w[self.slot_b])

    # ------------------------------------------------------------------ whole matrix (every entry priced)

    def cheapest(self, edge_costs: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Per pair: the lowest cost among its parallel edges, and the id of that edge (the first on ties)."""
        c = np.asarray(edge_costs, np.float64)[self._order]
        if c.size == 0:
            return c, self._order
        pair_cost = np.minimum.reduceat(c, self._starts)
        # the edge achieving it: first position in each group whose cost equals the group minimum
        group = np.repeat(np.arange(self._starts.size), self._ends - self._starts)
        is_min = c == pair_cost[group]
        first = np.full(self._starts.size, -1, np.int64)
        pos = np.flatnonzero(is_min)
        first[group[pos[::-1]]] = pos[::-1]  # reversed so the earliest position wins
        return pair_cost, self._order[first]

    def matrix(self, edge_costs: np.ndarray) -> tuple[sp.csr_matrix, np.ndarray]:
        """Symmetric CSR of the cheapest cost per pair (min ZERO_COST), and the edge id per pair."""
        pair_cost, best_edge = self.cheapest(edge_costs)
        data = np.maximum(pair_cost, 0.0)[self._pair_of_entry] + ZERO_COST
        n = self.num_nodes
        return sp.csr_matrix((data, self._indices, self._indptr), shape=(n, n)), best_edge

    def pair_id(self, u: int, v: int) -> int:
        """Index of the pair {u, v} (for mapping a tree edge back to its cheapest edge); -1 if absent."""
        lo, hi = min(u, v), max(u, v)
        start, end = self._indptr[lo], self._indptr[lo + 1]
        at = start + np.searchsorted(self._indices[start:end], hi)
        if at < end and self._indices[at] == hi:
            return int(self._pair_of_entry[at])
        return -1


class QueryCosts(CostGraph):
    """One query's edge costs over a :class:`PairCostIndex`, priced per entry on demand (one thread).

    Building it costs one array of the multi-edge pairs' minima (filled when read); every entry a search
    reads then costs two slot lookups. With ``cosine_slots`` the first ``cosine_slots.count`` slot costs are
    never read from ``slot_costs``: they are derived where read (:class:`~.cosine_slots.CosineSlots`). Entry costs are bit-identical to
    ``PairCostIndex.matrix(PairCostIndex.edge_costs(slot_costs))`` (min and ``max(., 0) + ZERO_COST``
    are monotone, so they commute).
    """

    def __init__(self, index: PairCostIndex, slot_costs: np.ndarray, cosine_slots: CosineSlots | None = None):
        w = np.asarray(slot_costs, np.float64)
        if w.shape != (index.num_slots,):
            raise ValueError(f"expected {index.num_slots} slot costs, got {w.shape}")
        self.index = index
        self.slot_costs = w
        self.cosine_slots = cosine_slots
        self.indptr, self.indices = index.indptr, index.indices
        self.num_nodes = index.num_nodes
        # Stored slot values (max(w, 0) + ZERO_COST) and the multi-edge pairs' minima are computed for the slots
        # an entry read needs, not for every slot: a bounded search reads a few thousand rows of millions.
        self._pair_min = np.full(index._multi_pairs.size, np.nan)
        # Rows priced so far and their entry costs: searches read the same rows several times. The entry
        # buffer is borrowed from the index and given back when this object goes: a fresh 2 x pairs float64
        # array per query would be paged in (huge pages zeroed, sometimes compacted) wherever rows are
        # priced, which costs more than the pricing. Only rows marked priced are read from it.
        self._priced = np.zeros(self.num_nodes, bool)
        self._data = index._borrow_buffer()
        weakref.finalize(self, index._return_buffer, self._data)

    def slot_values(self, slots: np.ndarray) -> np.ndarray:
        """The float64 values of ``slots`` (each below ``num_slots``): ``slot_costs``, or derived (``cosine_slots``)."""
        out = self.slot_costs[slots]
        derived = self.cosine_slots
        if derived is not None and derived.count:
            low = np.flatnonzero(slots < derived.count)
            if low.size:
                out[low] = derived.values(slots[low])
        return out

    def _stored(self, slots: np.ndarray) -> np.ndarray:
        """The stored values of ``slots`` (ids >= num_slots: a multi-edge pair's minimum, computed once)."""
        index, ns = self.index, self.index.num_slots
        out = np.maximum(self.slot_values(np.minimum(slots, ns - 1)), 0.0) + ZERO_COST
        multi = np.flatnonzero(slots >= ns)
        if multi.size:
            pairs = slots[multi] - ns
            todo = np.unique(pairs[np.isnan(self._pair_min[pairs])])
            if todo.size:  # min is exact: any grouping of a pair's edges gives the same value
                bounds = np.r_[index._multi_starts, index._multi_edges.size]
                at, owner = gather_rows(bounds, todo)
                e = index._multi_edges[at]
                value = self.slot_values
                per_edge = np.minimum(np.maximum(value(index.slot_a[e]), 0.0) + ZERO_COST,
                                      np.maximum(value(index.slot_b[e]), 0.0) + ZERO_COST)
                found = np.full(todo.size, np.inf)
                np.minimum.at(found, owner, per_edge)
                self._pair_min[todo] = found
            out[multi] = self._pair_min[pairs]
        return out

    def entry_costs(self, entries: np.ndarray) -> np.ndarray:
        index = self.index
        costs = self._stored(index._entry_a[entries])
        two = index._two_slots[entries]
        if two.any():
            both = entries[two]
            costs[two] = np.minimum(costs[two], self._stored(index._entry_b[both]))
        return costs

    def gather(self, rows: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        rows = np.asarray(rows, np.int64)
        entries, owner = gather_rows(self.indptr, rows)
        fresh = ~self._priced[rows]
        if fresh.all():
            costs = self.entry_costs(entries)
            self._data[entries] = costs
            self._priced[rows] = True
            return entries, owner, costs
        if fresh.any():
            new = entries[fresh[owner]]
            self._data[new] = self.entry_costs(new)
            self._priced[rows[fresh]] = True
        return entries, owner, self._data[entries]

    def shared_csr(self) -> sp.csr_matrix:
        """The whole cost matrix: every row not priced yet is priced now. It shares this object's entry
        buffer, which goes back to the index (for another query) when this object goes."""
        if not self._priced.all():
            # every entry, in slices: no index arrays, and temporaries small enough to stay in cache; the
            # minimum with the second slot only where it is another slot (min(x, x) is x)
            a, b, data = self.index._entry_a, self.index._entry_b, self._data
            s = self._stored(np.arange(self.index.num_slots + self._pair_min.size))
            for lo in range(0, data.size, _BLOCK):
                hi = min(lo + _BLOCK, data.size)
                np.take(s, a[lo:hi], out=data[lo:hi])
            two = self.index._two_slot_entries
            data[two] = np.minimum(data[two], s[b[two]])
            self._priced[:] = True
        n = self.num_nodes
        return sp.csr_matrix((self._data, self.indices, self.index._indptr32), shape=(n, n), copy=False)

    def best_edge(self, u: int, v: int) -> int:
        """The id of the cheapest edge between u and v (the first on ties, as ``cheapest``); -1 if none."""
        index = self.index
        pair = index.pair_id(u, v)
        if pair < 0:
            return -1
        edges = index._order[index._starts[pair]:index._ends[pair]]
        costs = np.minimum(self.slot_values(index.slot_a[edges]), self.slot_values(index.slot_b[edges]))
        return int(edges[int(np.argmin(costs))])
