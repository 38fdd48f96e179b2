"""The fast form of :mod:`.ppr` for large symmetric graphs: Chebyshev iteration on the reordered adjacency.

Every index snapshot's adjacency is symmetric, so ``P^T y = A (y / deg)``: the adjacency ``A`` itself is
stored (:class:`SymmetricForm`), in float32 when that is exact (snapshot weights are float32 and ``"ones"``
counts are integers; otherwise float64), without values when every weight is 1 (A2RAG's binary matrix),
with nodes renumbered by reverse Cuthill-McKee so that a row's neighbours sit close in memory (the
permutation stays inside; scores come back in node order). :func:`solve` runs Chebyshev semi-iteration,
exact to the same error bound as the power iteration (its docstring). With numba, one step is one compiled
pass over the rows (mat-vec, residual and update fused), its row chunks shared by up to 4 threads
(``nogil`` kernels on a small thread pool); without numba, the same iteration runs on scipy/numpy in float64.
Products and sums are float64 in both.
"""

from __future__ import annotations

import logging
import os
import threading
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from functools import cached_property, lru_cache

import numpy as np
import scipy.sparse as sp
from scipy.sparse.csgraph import reverse_cuthill_mckee

log = logging.getLogger(__name__)

#: Fixed work split of the fast form's loops: partial sums are per chunk, so results do not depend on threads.
_CHUNKS = 32


def _default_threads() -> int:
    cpus = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
    return max(1, min(4, cpus))  # the mat-vec is memory-bound: more than 4 threads gains little


#: Threads that share the numba mat-vec (the calling thread and THREADS - 1 pool threads).
THREADS = _default_threads()
#: Below this many stored entries a step runs on the calling thread alone. On 2wiki_retrieval101's graph (211k
#: entries) a step takes about 0.3 ms: handing chunks to a pool thread and waiting for it costs more than the
#: second core gives back, and far more when another job holds that core (AGRAG's PageRank, 60 real-size resets
#: on a shared 2-core machine: p50 11.5 ms with 2 threads, 7.3 ms with 1).
PARALLEL_MIN_ENTRIES = 1_000_000
#: Set to ``0`` to run the fast form on scipy although numba is installed. A process that answers one question
#: (``graphrag-suite query`` sets it) would spend 0.3-0.4 s importing numba and loading its compiled kernels for
#: solves that scipy does in milliseconds; the iteration and its float64 products are the same (on the five
#: shared sets every PageRank method's top 5 and scores were identical either way).
NUMBA_ENV = "GRAPHRAG_SUITE_NUMBA"


@dataclass(frozen=True, eq=False)
class SymmetricForm:
    """The symmetric adjacency ``A`` with positions renumbered, and what the solver needs with it."""

    order: np.ndarray  # order[k] = node at position k
    indptr: np.ndarray  # CSR of A over positions (numba: uint64 offsets and uint32 columns; scipy: its own)
    indices: np.ndarray
    data: np.ndarray | None  # float32 if exact, else float64; None when every weight is 1
    inv_degree: np.ndarray  # float64 1 / weighted degree per position, 0 for dangling nodes
    row_chunks: np.ndarray  # uint64: _CHUNKS + 1 position bounds with about equal numbers of entries
    matrix: sp.csr_matrix | None  # the scipy fallback's float64 A (None: the numba kernels run)

    @property
    def num_nodes(self) -> int:
        return self.order.size

    @cached_property
    def degree(self) -> np.ndarray:
        """Weighted degree per position (0 for dangling nodes), for the local push (:mod:`.ppr_push`)."""
        return np.divide(1.0, self.inv_degree, out=np.zeros_like(self.inv_degree), where=self.inv_degree > 0)

    @cached_property
    def position(self) -> np.ndarray:
        """``position[node]``: where ``node`` sits in the renumbered order (the inverse of :attr:`order`)."""
        out = np.empty(self.order.size, np.int64)
        out[self.order] = np.arange(self.order.size)
        return out

    def adjacency_t(self) -> sp.csr_matrix:
        """``P^T`` (float64 CSR) in node order, rebuilt: ``(D^-1 A)^T = A D^-1`` for a symmetric ``A``."""
        n = self.order.size
        data = np.ones(self.indices.size) if self.data is None else self.data.astype(np.float64)
        a = sp.csr_matrix((data, self.indices.astype(np.int64), self.indptr.astype(np.int64)), shape=(n, n))
        position = self.position
        a = a[position][:, position]  # back to node order
        inv = np.zeros(n)
        inv[self.order] = self.inv_degree
        return (a @ sp.diags(inv)).tocsr()


def symmetric_form(a: sp.csr_matrix, out_weight: np.ndarray, order: np.ndarray | None = None) -> SymmetricForm:
    """The fast form of a symmetric ``a``; ``order`` (positions to nodes) defaults to reverse Cuthill-McKee."""
    n = a.shape[0]
    if order is None:
        order = reverse_cuthill_mckee(a, symmetric_mode=True)
    order = np.asarray(order, dtype=np.int64)
    b = a[order][:, order]  # new arrays: the caller's matrix is not touched
    b.sum_duplicates()
    b.eliminate_zeros()
    b.sort_indices()
    degree = out_weight[order]
    inv = np.divide(1.0, degree, out=np.zeros_like(degree), where=degree > 0)
    row_chunks = np.searchsorted(b.indptr, np.linspace(0, b.nnz, _CHUNKS + 1), side="left")
    row_chunks[0], row_chunks[-1] = 0, n
    row_chunks = np.maximum.accumulate(row_chunks).astype(np.uint64)
    kernels = _kernels() if os.environ.get(NUMBA_ENV, "1") != "0" else None
    if kernels is None:  # scipy fallback: float64 values (scipy would upcast float32 on every product)
        return SymmetricForm(order, b.indptr, b.indices, b.data, inv, row_chunks, b)
    if b.nnz and np.all(b.data == 1.0):
        data = None
    else:
        data32 = b.data.astype(np.float32)
        data = data32 if np.array_equal(data32, b.data) else b.data
    # unsigned offsets: numba then emits no negative-index wrap-around test in the inner loop
    indices = b.indices.astype(np.uint32 if n <= 2**32 else np.uint64)
    form = SymmetricForm(order, b.indptr.astype(np.uint64), indices, data, inv, row_chunks, None)
    _NumbaStep(form, kernels).warm_up()
    return form


def solve(f: SymmetricForm, p: np.ndarray, damping: float, tol: float, max_iter: int) -> np.ndarray:
    """``y`` with ``y = p + d A D^-1 y`` (positions order) by Chebyshev semi-iteration.

    ``G = d A D^-1`` is similar to the symmetric ``d D^-1/2 A D^-1/2``, so its eigenvalues are real, in
    ``[-d, d]``; the Chebyshev recurrence for that interval (Golub & Varga) is::

        y_1 = G y_0 + p,    y_k+1 = w_k+1 (G y_k + p - y_k-1) + y_k-1,
        w_2 = 1 / (1 - d^2 / 2),    w_k+1 = 1 / (1 - d^2 w_k / 4)

    and shrinks the error by about ``d / (1 + sqrt(1 - d^2))`` per step (0.27 for d = 0.5, against 0.5 for the
    power iteration). Each step is one pass over the rows: the mat-vec gathers ``v = y_k / deg``, and the same
    pass yields ``r_k = G y_k + p - y_k`` (the residual of ``y_k``), ``y_k+1`` and ``v_k+1``. It returns the
    first ``y_k`` with ``2 ||r_k||_1 <= d * tol * sum(y_k)``: then ``||y_k - y*||_1 <= ||r_k||_1 / (1 - d)``
    and the normalised scores are within ``d / (1 - d) * tol`` of the exact ones. Dangling nodes have no
    entries in ``A``, so their ``y`` is ``p`` throughout.
    """
    y = p.copy()
    if damping == 0.0:
        return y
    step = _ScipyStep(f) if f.matrix is not None else _NumbaStep(f, _kernels())
    stop = max(damping * tol, 64 * np.finfo(np.float64).eps) / 2
    y_next = np.zeros_like(y)  # y_k-1, overwritten by y_k+1 (w_1 = 1 ignores it)
    v = f.inv_degree * y
    v_next = np.empty_like(y)
    omega, rho2 = 1.0, damping * damping
    for k in range(max_iter):
        if k:
            omega = 1.0 / (1.0 - rho2 / 2.0) if k == 1 else 1.0 / (1.0 - rho2 * omega / 4.0)
        residual, total = step(v, y, y_next, v_next, p, damping, omega)
        if residual <= stop * total:
            return y
        y, y_next = y_next, y
        v, v_next = v_next, v
    log.warning("personalized PageRank did not converge to %g in %d iterations", tol, max_iter)
    return y


class _ScipyStep:
    """One Chebyshev step on scipy/numpy (float64), when numba is not importable."""

    def __init__(self, f: SymmetricForm):
        self.a, self.inv = f.matrix, f.inv_degree

    def __call__(self, v, y, y_next, v_next, p, damping, omega) -> tuple[float, float]:
        t = self.a @ v
        t *= damping
        t += p  # the Jacobi step G y + p
        residual = float(np.abs(t - y).sum())
        t -= y_next
        t *= omega
        y_next += t
        np.multiply(self.inv, y_next, out=v_next)
        return residual, float(y.sum())


class _NumbaStep:
    """One Chebyshev step as one compiled pass over ``_CHUNKS`` row chunks, each claimed by whichever of this
    thread and ``THREADS - 1`` pool threads is free first (a thread that the OS parks on a busy machine
    delays the step by at most one chunk). Sums are per chunk, added in chunk order: the result does not
    depend on which thread ran what."""

    def __init__(self, f: SymmetricForm, kernels):
        self.f, self.k = f, kernels
        self.parts = np.zeros((_CHUNKS, 2))
        self.threads = THREADS if f.indices.size >= PARALLEL_MIN_ENTRIES else 1

    def __call__(self, v, y, y_next, v_next, p, damping, omega) -> tuple[float, float]:
        f = self.f
        if f.data is None:
            _claimed(self.k.step_ones, (f.indptr, f.indices, v, y, y_next, v_next, p, f.inv_degree, damping, omega,
                                        f.row_chunks, self.parts), self.threads)
        else:
            _claimed(self.k.step, (f.indptr, f.indices, f.data, v, y, y_next, v_next, p, f.inv_degree, damping, omega,
                                   f.row_chunks, self.parts), self.threads)
        residual, total = self.parts.sum(axis=0)
        return float(residual), float(total)

    def warm_up(self) -> None:
        """Compile (or load from numba's cache) the kernel for this form's dtypes: the call covers no chunk."""
        f, x = self.f, np.zeros(1)
        if f.data is None:
            self.k.step_ones(f.indptr, f.indices, x, x, x, x, x, x, 0.5, 1.0, f.row_chunks, self.parts, 0, 0)
        else:
            self.k.step(f.indptr, f.indices, f.data, x, x, x, x, x, x, 0.5, 1.0, f.row_chunks, self.parts, 0, 0)


def _claimed(kernel, args: tuple, threads: int) -> None:
    """``kernel(*args, c, c + 1)`` for every chunk c, each claimed by whichever of ``threads`` is free first."""
    threads = max(1, min(threads, _CHUNKS))
    if threads == 1:
        kernel(*args, 0, _CHUNKS)
        return
    lock, chunks = threading.Lock(), iter(range(_CHUNKS))

    def work() -> None:
        while True:
            with lock:
                c = next(chunks, None)
            if c is None:
                return
            kernel(*args, c, c + 1)

    futures = [_pool(threads - 1).submit(work) for _ in range(threads - 1)]
    try:
        work()
    finally:
        for future in futures:
            future.result()


_pool_lock = threading.Lock()
_pool_state: dict[str, object] = {}


def _pool(workers: int) -> ThreadPoolExecutor:
    """A process-wide thread pool (made anew in a forked child, whose copy has no threads)."""
    key = (os.getpid(), workers)
    with _pool_lock:
        if _pool_state.get("key") != key:
            if _pool_state.get("key", (None,))[0] == os.getpid():  # THREADS changed: let the old threads end
                _pool_state["pool"].shutdown(wait=False)
            _pool_state["key"], _pool_state["pool"] = key, ThreadPoolExecutor(workers, thread_name_prefix="ppr")
        return _pool_state["pool"]


# Kernels: plain Python loops that numba compiles (nogil, so pool threads run them in parallel). Offsets and
# columns are unsigned, so numba emits no negative-index wrap-around test in the inner loop (with signed
# offsets that test made it ~1.5x slower than scipy's loop). Values are float32 or float64, sums float64.


def _kernel_step(indptr, indices, data, v, y, y_next, v_next, p, inv, damping, omega, chunks, parts,
                 c0, c1):  # pragma: no cover - compiled by numba
    """Chebyshev step over chunks [c0, c1): ``t = p + d A v``; ``parts[c] = (sum |t - y|, sum y)``;
    ``y_next = omega (t - y_next) + y_next``; ``v_next = y_next / deg``."""
    for c in range(c0, c1):
        residual = 0.0
        total = 0.0
        for i in range(chunks[c], chunks[c + 1]):
            s = 0.0
            for j in range(indptr[i], indptr[i + 1]):
                s += data[j] * v[indices[j]]
            t = p[i] + damping * s
            yi = y[i]
            residual += abs(t - yi)
            total += yi
            previous = y_next[i]
            new = omega * (t - previous) + previous
            y_next[i] = new
            v_next[i] = inv[i] * new
        parts[c, 0] = residual
        parts[c, 1] = total


def _kernel_step_ones(indptr, indices, v, y, y_next, v_next, p, inv, damping, omega, chunks, parts,
                      c0, c1):  # pragma: no cover - compiled by numba
    """:func:`_kernel_step` for an adjacency whose weights are all 1 (no values to read)."""
    for c in range(c0, c1):
        residual = 0.0
        total = 0.0
        for i in range(chunks[c], chunks[c + 1]):
            s = 0.0
            for j in range(indptr[i], indptr[i + 1]):
                s += v[indices[j]]
            t = p[i] + damping * s
            yi = y[i]
            residual += abs(t - yi)
            total += yi
            previous = y_next[i]
            new = omega * (t - previous) + previous
            y_next[i] = new
            v_next[i] = inv[i] * new
        parts[c, 0] = residual
        parts[c, 1] = total


class _Kernels:
    def __init__(self, jit):
        self.step = jit(_kernel_step)
        self.step_ones = jit(_kernel_step_ones)


@lru_cache(maxsize=None)
def cached_njit(fn):
    """``numba.njit(nogil=True)``, its compiled code cached next to the module (or in the user's cache) across
    processes; uncached where no cache can be written. Numba must be importable. One dispatcher per function for
    the process: a new one loads its code from the cache again at its first call (about 8 ms)."""
    import numba

    try:
        return numba.njit(nogil=True, cache=True)(fn)
    except Exception:  # nowhere to write a cache
        return numba.njit(nogil=True)(fn)


@lru_cache(maxsize=1)
def _kernels() -> _Kernels | None:
    """The numba-compiled kernels, or None when numba is not importable (then scipy does the work)."""
    try:
        import numba
    except Exception as e:  # not installed, or built for another numpy
        log.info("numba not available (%s): personalized PageRank runs on scipy", e)
        return None

    return _Kernels(cached_njit)
