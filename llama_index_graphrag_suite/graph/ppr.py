"""Personalized PageRank on a sparse weighted graph (pure numpy/scipy, numba when installed).

AGRAG Eq. 10 (as in HippoRAG 2, which AGRAG follows)::

    PPR^i = (1 - d) * p + d * P^T . PPR^(i-1)

``p`` is the reset (personalization) vector, ``P`` the row-normalised weighted transition matrix
(``P[u, v] = w(u, v) / sum_x w(u, x)``) and ``d`` the damping factor: the probability that the walker
follows an edge at each step, so ``1 - d`` is the probability that it restarts from ``p``. The papers
use ``d = 0.5`` and stop when the scores change by less than ``1e-7``.

Dangling nodes (no edges, or only zero-weight ones) have an empty row in ``P``; the mass that reaches them
is sent back according to ``p``, as if they linked to the reset distribution. This is networkx's
``pagerank(..., dangling=None)`` behaviour; it keeps all mass on what the reset vector can reach.
(AGRAG's Eq. 12 writes a uniform ``1/|V|`` jump instead. In the shared index every entity has a
``contains`` edge, so the only dangling nodes are passages without entities and the choice rarely
matters.) With that rule the scores are ``y / sum(y)`` for the solution ``y`` of the linear system
``(I - d P^T) y = p``: the returned mass is scaled by the same factor on every node.

Two forms, chosen once by :func:`transition_matrix` (build it once and reuse it across queries):

* **plain** (graphs with fewer than :data:`FAST_MIN_NNZ` stored entries, non-symmetric adjacencies, and a
  raw adjacency passed straight to :func:`personalized_pagerank`): ``P^T`` in CSR and the power iteration
  above, one scipy mat-vec per iteration, until the L1 change between two iterates is below ``tol``. Small
  graphs keep exactly the scores they always had.
* **fast** (large symmetric adjacencies, i.e. every index snapshot; :mod:`.ppr_fast`): the adjacency
  itself, nodes renumbered by reverse Cuthill-McKee for memory locality, float32 values when that is exact,
  and Chebyshev semi-iteration instead of the power iteration (fewer mat-vecs for the same error bound:
  it stops when its residual guarantees the L1 error bound ``d / (1 - d) * tol`` that the power
  iteration's stopping rule gives). The steps are numba-compiled loops over row chunks shared by up to 4
  threads when numba is importable, scipy/numpy in float64 otherwise (same iteration, same results to
  ~1e-16).

A third path, for large graphs only: when the fast form's graph has at least :data:`PUSH_MIN_NNZ` entries and
the reset sits on at most :data:`PUSH_MAX_RESET_SHARE` of the nodes, :mod:`.ppr_push`'s local forward push
answers instead. It reads the reset's neighbourhood, not the graph, and every node's score is below the exact
one by at most ``PUSH_EPS * degree / (1 - d)`` before normalising.

Measured on the 100k-passage index (229,528 nodes, 6.69M stored entries; 30 real AGRAG reset sets;
``python studies/perf/ppr_bench.py --rounds 3``, output in ``studies/perf/results/ppr.md``; 2-core machine
shared with other jobs, load average 4-5, so medians of runs interleaved reset by reset), damping 0.5, tol
1e-7: the old power iteration took 19 mat-vecs, 160 ms CPU (240 ms wall) per PPR. Reverse Cuthill-McKee
alone: 102 ms CPU (the mat-vec's gathers hit cache more often). Chebyshev: 16 mat-vecs instead of 19, max
L1 error against the exact scores 4e-8 instead of 8e-8 (conjugate gradients needed 14, but its extra vector
passes cost more than they saved). Float32 values and 2 threads: no measurable gain with the second core
busy. Committed form: 103 ms CPU, 152 ms wall (1.58x), same top-100 on all 30 resets; without numba 133 ms
CPU (1.21x). On A2RAG's binary matrix (no values stored, tol 1e-4) 1.8x; with ArchRAG's damping 0.85 (28
mat-vecs instead of 52) 3.4x.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp

from .ppr_fast import SymmetricForm, solve, symmetric_form
from .ppr_push import forward_push, forward_push_reached, pairwise_total

log = logging.getLogger(__name__)

#: Adjacencies with at least this many stored entries (and symmetric) get the fast form.
FAST_MIN_NNZ = 100_000
#: From this many stored entries on, a reset on few nodes is solved by the local push (:mod:`.ppr_push`), whose
#: cost does not grow with the graph. No shared benchmark graph comes near (2wiki_retrieval101's has 211,000), so
#: their rankings are the global solver's; on the 100,000-passage synthetic index (2 million entries) the push
#: at ``PUSH_EPS`` gave the same top 20 chunks for random six-entity resets at a third of the time.
PUSH_MIN_NNZ = 1_000_000
#: A reset on more than this share of the nodes (HippoRAG 2 weighs every passage) is solved globally.
PUSH_MAX_RESET_SHARE = 0.01
#: The push's per-degree residual bound: each node's score is at most ``PUSH_EPS * degree / (1 - d)`` below exact.
PUSH_EPS = 1e-7


@dataclass(frozen=True, eq=False)
class Transition:
    """What :func:`personalized_pagerank` iterates on, from :func:`transition_matrix`; reuse it across queries.

    ``dangling`` are the rows of the nodes with no outgoing weight; :attr:`matrix_t` is ``P^T`` (CSR, each
    non-dangling column sums to 1) in node order, as stored by the plain form or rebuilt on demand.
    """

    dangling: np.ndarray  # int64 rows of the nodes with no outgoing weight
    plain: sp.csr_matrix | None = None  # P^T for the power iteration (plain form)
    fast: SymmetricForm | None = None

    @property
    def num_nodes(self) -> int:
        return self.plain.shape[0] if self.plain is not None else self.fast.num_nodes

    @property
    def matrix_t(self) -> sp.csr_matrix:
        return self.plain if self.plain is not None else self.fast.adjacency_t()

    @property
    def pushes(self) -> bool:
        """Whether a reset on few nodes is answered by the local push here (a graph of :data:`PUSH_MIN_NNZ`+
        entries); a caller may then keep its reset sparse on purpose."""
        return self.fast is not None and self.fast.indices.size >= PUSH_MIN_NNZ


def transition_matrix(adjacency: sp.spmatrix | sp.sparray) -> Transition:
    """Row-normalise a weighted adjacency matrix for :func:`personalized_pagerank` (built once, reused).

    Row ``u`` holds ``u``'s edge weights; an undirected graph is a symmetric matrix, as
    :meth:`GraphSnapshot.adjacency` returns. Parallel edges are expected to be summed already. A symmetric
    adjacency with at least :data:`FAST_MIN_NNZ` entries gets the fast form (module docstring).
    """
    a = _checked(adjacency)
    out_weight = np.asarray(a.sum(axis=1)).ravel()
    dangling = np.flatnonzero(out_weight <= 0)
    if a.nnz >= FAST_MIN_NNZ and (a != a.T).nnz == 0:
        return Transition(dangling=dangling, fast=symmetric_form(a, out_weight))
    return Transition(dangling=dangling, plain=_plain_form(a, out_weight))


def _checked(adjacency) -> sp.csr_matrix:
    a = sp.csr_matrix(adjacency, dtype=np.float64)
    if a.shape[0] != a.shape[1]:
        raise ValueError(f"adjacency must be square, got shape {a.shape}")
    if a.nnz and a.data.min() < 0:
        raise ValueError("adjacency has negative edge weights")
    return a


def _plain_form(a: sp.csr_matrix, out_weight: np.ndarray) -> sp.csr_matrix:
    inv = np.divide(1.0, out_weight, out=np.zeros_like(out_weight), where=out_weight > 0)
    p = sp.diags(inv) @ a  # row-stochastic, dangling rows all zero
    return p.T.tocsr()


def personalized_pagerank(
    adjacency: sp.spmatrix | sp.sparray | Transition,
    reset: np.ndarray,
    damping: float = 0.5,
    tol: float = 1e-7,
    max_iter: int = 200,
) -> np.ndarray:
    """PPR scores of every node (summing to 1) for the reset vector ``reset`` (AGRAG Eq. 10).

    ``adjacency`` is a square weighted adjacency matrix (one query: the plain power iteration, cheapest
    without reuse), or a :class:`Transition` from :func:`transition_matrix` to reuse across queries.
    ``reset`` needs no normalisation (it is scaled to sum 1) but must be non-negative with a positive sum.
    ``damping`` is the probability of following an edge. The plain form stops when the L1 change between
    two iterates is below ``tol``; the fast form when its residual guarantees the same error bound,
    ``d / (1 - d) * tol`` in L1. If that takes more than ``max_iter`` iterations, the last iterate is
    returned with a warning (the error shrinks by a factor ``damping`` or better per iteration, so it is
    still close).
    """
    if isinstance(adjacency, Transition):
        transition = adjacency
    else:
        a = _checked(adjacency)
        out_weight = np.asarray(a.sum(axis=1)).ravel()
        transition = Transition(dangling=np.flatnonzero(out_weight <= 0), plain=_plain_form(a, out_weight))
    n = transition.num_nodes
    p = np.asarray(reset, dtype=np.float64).ravel()
    if p.shape != (n,):
        raise ValueError(f"reset has {p.shape[0]} entries for {n} nodes")
    # the checks read the nonzero entries only (NaN and inf are nonzero): a large graph's reset sits on a few
    seeds = np.flatnonzero(p)
    nonzero = p[seeds]
    if not np.all(np.isfinite(nonzero)) or nonzero.min(initial=0.0) < 0:
        raise ValueError("reset must be finite and non-negative")
    total = p.sum()
    if total <= 0:
        raise ValueError("reset sums to 0: nothing to personalise on")
    if not 0.0 <= damping < 1.0:
        raise ValueError(f"damping must be in [0, 1), got {damping}")
    if transition.pushes and seeds.size <= PUSH_MAX_RESET_SHARE * n:  # a large graph, a reset on few nodes
        return _pushed(transition.fast, seeds, nonzero / total, damping)
    p = p / total

    if transition.fast is not None:
        f = transition.fast
        y = solve(f, p[f.order], damping, tol, max_iter)
        x = np.empty(n)
        x[f.order] = np.maximum(y, 0.0)  # the Chebyshev extrapolation may leave tiny negatives on far nodes
        return x / x.sum()

    pt, dangling = transition.plain, transition.dangling
    x = p
    for _ in range(max_iter):
        previous = x
        x = damping * (pt @ x + x[dangling].sum() * p) + (1.0 - damping) * p
        if np.abs(x - previous).sum() < tol:
            break
    else:
        log.warning("personalized PageRank did not converge to %g in %d iterations", tol, max_iter)
    return x / x.sum()


def _pushed(f: SymmetricForm, seeds: np.ndarray, weights: np.ndarray, damping: float) -> np.ndarray:
    """The local push's scores in node order, summing to 1 (its shortfall is spread like the rest)."""
    y, _ = forward_push(f.indptr, f.indices, f.data, f.degree, f.position[seeds], weights, damping, PUSH_EPS)
    # back to node order: only the pushed positions hold mass, so they are scattered instead of every node gathered
    reached = np.flatnonzero(y)
    x = np.zeros(y.size)
    x[f.order[reached]] = y[reached]
    return x / x.sum()


def pushed_pagerank(transition: Transition, seeds: np.ndarray, weights: np.ndarray, damping: float = 0.5,
                    eps: float = PUSH_EPS) -> tuple[np.ndarray, np.ndarray] | None:
    """``(nodes, scores)``: :func:`personalized_pagerank` of the reset ``weights`` on ``seeds`` as the nodes it gives
    a positive score (ascending), when the local push answers it (``transition.pushes`` and a reset on few nodes;
    else None): the same bits as the dense path's scores at those nodes, for a caller that ranks a few of them (no
    copy of the scores of every node, no pass over every node to pick them). ``eps``: the push's per-degree
    residual bound (:data:`PUSH_EPS` as the dense path; a larger one reads fewer entries, less exactly)."""
    seeds = np.asarray(seeds, np.int64).ravel()
    weights = np.asarray(weights, np.float64).ravel()
    if seeds.shape != weights.shape or seeds.size == 0:
        raise ValueError("seeds and weights must be non-empty and of one length")
    if not np.all(np.isfinite(weights)) or weights.min() < 0 or np.unique(seeds).size != seeds.size:
        raise ValueError("weights must be finite and non-negative, on distinct seeds")
    if not 0.0 <= damping < 1.0:
        raise ValueError(f"damping must be in [0, 1), got {damping}")
    keep = weights > 0
    seeds, weights = seeds[keep], weights[keep]
    n = transition.num_nodes
    if seeds.size == 0:
        raise ValueError("reset sums to 0: nothing to personalise on")
    if seeds.min() < 0 or seeds.max() >= n:
        raise ValueError("seed row out of range")
    if not (transition.pushes and seeds.size <= PUSH_MAX_RESET_SHARE * n):
        return None
    order = np.argsort(seeds)  # the dense path's seeds: the reset's nonzero nodes, ascending
    seeds, weights = seeds[order], weights[order]
    # the reset's total summed as the dense path sums its vector (numpy's pairwise sum of every node's entry): a
    # total differing in its last bit moves the push's thresholds, and with them a few near-tied chunks
    f = transition.fast
    reached, values, _ = forward_push_reached(f.indptr, f.indices, f.data, f.degree, f.position[seeds],
                                              weights / pairwise_total(seeds, weights, n), damping, eps)
    # normalised as the dense path does, by the sum over every node (in node order)
    nodes = f.order[reached]
    order = np.argsort(nodes)
    nodes, values = nodes[order], values[order]
    return nodes, values / pairwise_total(nodes, values, n, ordered=True)


# ---------------------------------------------------------------------- A2RAG Eq. 9-11


def binary_adjacency(adjacency: sp.spmatrix | sp.sparray) -> sp.csr_matrix:
    """A2RAG's ``A ∈ {0,1}^{n×n}``: 1 where any edge joins u and v (parallel edges and weights collapse)."""
    a = sp.csr_matrix(adjacency, dtype=np.float64, copy=True)
    a.sum_duplicates()
    a.eliminate_zeros()
    a.data[:] = 1.0
    return a


def degree_normalised_personalization(degree: np.ndarray, seeds: np.ndarray,
                                      weights: np.ndarray | None = None) -> np.ndarray:
    """A2RAG Eq. 10: ``p0(u) = deg(u)^-1 / Z`` on the seeds, 0 elsewhere, ``Z = Σ_{u∈S} deg(u)^-1``.

    A seed with few edges gets more of the restart mass, so a hub seed cannot flood the walk.
    ``weights`` (optional, one per seed, non-negative) multiply each seed's ``deg^-1`` before
    normalising; all ones is the paper's formula. Seeds without edges count as degree 1. Repeated
    seeds are counted once (the first weight wins).
    """
    degree = np.asarray(degree, dtype=np.float64).ravel()
    seeds = np.asarray(seeds, dtype=np.int64).ravel()
    if seeds.size == 0:
        raise ValueError("no seeds to personalise on")
    if seeds.min() < 0 or seeds.max() >= degree.size:
        raise ValueError("seed row out of range")
    w = np.ones(seeds.size) if weights is None else np.asarray(weights, dtype=np.float64).ravel()
    if w.shape != seeds.shape or not np.all(np.isfinite(w)) or w.min() < 0:
        raise ValueError("weights must be finite, non-negative and one per seed")
    seeds, first = np.unique(seeds, return_index=True)
    w = w[first]
    p = np.zeros(degree.size)
    p[seeds] = w / np.maximum(degree[seeds], 1.0)
    total = p.sum()
    if total <= 0:
        raise ValueError("seed weights sum to 0: nothing to personalise on")
    return p / total


def degree_normalised_ppr(transition: Transition, degree: np.ndarray, seeds: np.ndarray, alpha: float = 0.5,
                          weights: np.ndarray | None = None, tol: float = 1e-7, max_iter: int = 200) -> np.ndarray:
    """A2RAG Eq. 9-11: the fixed point of ``r = α p0 + (1 - α) Pᵀ r`` with ``p0`` from Eq. 10.

    ``transition`` is :func:`transition_matrix` of :func:`binary_adjacency` (Eq. 9: ``P_uv = A_uv /
    deg(u)``) and ``degree`` the row sums of that binary matrix. ``alpha`` is the teleport (restart)
    probability, i.e. ``1 - damping`` of :func:`personalized_pagerank`, which does the iteration
    (dangling mass returns through ``p0``).
    """
    if not 0.0 < alpha <= 1.0:
        raise ValueError(f"alpha must be in (0, 1], got {alpha}")
    p0 = degree_normalised_personalization(degree, seeds, weights)
    return personalized_pagerank(transition, p0, damping=1.0 - alpha, tol=tol, max_iter=max_iter)
