"""Personalized PageRank (graph/ppr.py) at 100k passages: the old power iteration against the candidates.

    python benchmarks/ppr_bench.py --adjacency /tmp/probe/adj100k_weight.npz --seeds /tmp/probe/seeds100k.npz
    python benchmarks/ppr_bench.py ... --rounds 5 --out benchmarks/results/ppr.md

Inputs: ``--adjacency`` is ``scipy.sparse.save_npz`` of ``snapshot.adjacency("weight")`` of an index (the
100k-passage synthetic index: 229,528 nodes, 6.69M stored entries); ``--seeds`` an ``np.savez`` of reset
sets (node rows; the reset vector is 1.0 on them), AGRAG's terminals for 30 real questions.

Every variant runs the 30 resets once per round, interleaved reset by reset (so a busy neighbour on a shared
machine slows all variants alike); the table gives the median wall ms per PPR and the median CPU ms (all
threads of the process) over all runs, the median number of mat-vecs, and against the old code (float64
scipy power iteration, the same tol): the largest L1 difference and how many of the 30 top-100 node
rankings are identical, plus the largest L1 error against a tight solution (old code at tol 1e-14).
Variants:

* ``old``: graph/ppr.py before this change (plain form: scipy float64 P^T, power iteration).
* ``power f32`` / ``power rcm`` / ``power f32 rcm``: the same iteration with P^T stored (and x iterated) in
  float32, with nodes renumbered by reverse Cuthill-McKee, or both (L1 change computed in float64).
* ``power numba f32 rcm 1t/2t``: the power iteration as one fused numba loop over A (float32) on 1 / 2 threads.
* ``cg scipy f64 rcm``: conjugate gradients (the first candidate for fewer mat-vecs) on the fast form's A.
* ``cheb scipy f64 rcm (fallback)``: graph/ppr_fast.py's Chebyshev iteration without numba (its fallback).
* ``cheb numba f64/f32 orig/degree/rcm 1t/2t``: graph/ppr_fast.py with numba, the adjacency values in float64
  or float32, nodes in their original order, sorted by degree, or RCM, on 1 or 2 threads.
  ``cheb numba f32 rcm 2t`` is what ``transition_matrix`` builds on a 2-core machine.

Also timed: building the transition (old, and the fast form with its RCM ordering); and the binary (A2RAG,
d = 0.5, tol 1e-4) graph, and the binary graph with ArchRAG's ppr_refine settings (d = 0.85, tol 1e-6), old code
against the fast form.
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import platform
import shlex
import sys
import time
from pathlib import Path

import numpy as np
import scipy
import scipy.sparse as sp
from scipy.sparse.csgraph import reverse_cuthill_mckee

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))

from llama_index_graphrag_suite.graph import ppr, ppr_fast  # noqa: E402


# ---------------------------------------------------------------------- the old code, verbatim


def old_transition(adjacency):
    a = sp.csr_matrix(adjacency, dtype=np.float64)
    out_weight = np.asarray(a.sum(axis=1)).ravel()
    inv = np.divide(1.0, out_weight, out=np.zeros_like(out_weight), where=out_weight > 0)
    p = sp.diags(inv) @ a
    return p.T.tocsr(), np.flatnonzero(out_weight <= 0)


def old_ppr(pt, dangling, p, damping=0.5, tol=1e-7, max_iter=200, dtype=np.float64):
    """The old loop (``dtype=float32``: P^T and x in float32, the L1 change in float64)."""
    p = p / p.sum()
    pd = p.astype(dtype)
    x = pd
    for it in range(1, max_iter + 1):
        previous = x
        x = damping * (pt @ x + x[dangling].sum() * pd) + (1.0 - damping) * pd
        if np.abs(x.astype(np.float64) - previous).sum() < tol:
            break
    x = x.astype(np.float64)
    return x / x.sum(), it


# ---------------------------------------------------------------------- a fused numba power iteration


def _power_kernel(indptr, indices, data, w, p, damping, c, x, y, lo, hi):
    """``y = d * A w + c * p`` (w = x / deg) on rows [lo, hi); returns sum |y - x| there."""
    diff = 0.0
    for i in range(lo, hi):
        s = 0.0
        for j in range(indptr[i], indptr[i + 1]):
            s += data[j] * w[indices[j]]
        yi = damping * s + c * p[i]
        y[i] = yi
        diff += abs(yi - x[i])
    return diff


def numba_power(form, threads):
    import numba

    kernel = numba.njit(nogil=True)(_power_kernel)
    indices = form.indices
    data = form.data if form.data is not None else np.ones(form.indices.size, np.float32)
    split = np.searchsorted(form.indptr, np.linspace(0, form.indices.size, threads + 1))
    split[0], split[-1] = 0, form.order.size
    split = split.astype(np.uint64)
    dangling = np.flatnonzero(form.inv_degree == 0)

    def run(p, damping=0.5, tol=1e-7, max_iter=200):
        p = p[form.order] / p.sum()
        x, y = p.copy(), np.empty_like(p)
        for it in range(1, max_iter + 1):
            w = x * form.inv_degree
            c = damping * x[dangling].sum() + (1.0 - damping)
            futures = [ppr_fast._pool(threads - 1).submit(kernel, form.indptr, indices, data, w, p, damping, c, x, y,
                                                     split[t], split[t + 1]) for t in range(1, threads)]
            diff = kernel(form.indptr, indices, data, w, p, damping, c, x, y, split[0], split[1])
            diff += sum(f.result() for f in futures)
            x, y = y, x
            if diff < tol:
                break
        out = np.empty_like(x)
        out[form.order] = x
        return out / out.sum(), it

    return run


# ---------------------------------------------------------------------- graph/ppr.py's fast form


class MatvecCounter:
    """Counts the fast form's steps (one mat-vec each; both backends) while installed."""

    def __init__(self):
        self.count = 0
        self.saved = []

    def __enter__(self):
        for cls in (ppr_fast._ScipyStep, ppr_fast._NumbaStep):
            original = cls.__call__
            self.saved.append((cls, original))

            def counted(obj, *args, _original=original):
                self.count += 1
                return _original(obj, *args)

            cls.__call__ = counted
        return self

    def __exit__(self, *exc):
        for cls, original in self.saved:
            cls.__call__ = original


def cg_scipy(transition):
    """Conjugate gradients on the fast form's float64 A (the candidate Chebyshev replaced): ``(I - d A D^-1) y
    = p`` is self-adjoint in the 1/deg inner product; same stopping rule as graph/ppr.py."""
    f = transition.fast
    a = sp.csr_matrix((f.data.astype(np.float64), f.indices.astype(np.int64), f.indptr.astype(np.int64)),
                      shape=(f.order.size,) * 2)
    inv = f.inv_degree

    def run(p, damping=0.5, tol=1e-7, max_iter=200):
        p = p[f.order] / p.sum()
        stop = damping * tol / 2
        y = p.copy()
        r = damping * (a @ (inv * p))
        rv = inv * r
        z, v, rr = r.copy(), rv.copy(), r @ rv
        for it in range(1, max_iter + 1):
            q = z - damping * (a @ v)
            alpha = rr / (q @ v)
            y += alpha * z
            r -= alpha * q
            rv = inv * r
            if np.abs(r).sum() <= stop * y.sum():
                break
            rr, beta = rv @ r, (rv @ r) / rr
            z, v = r + beta * z, rv + beta * v
        out = np.empty_like(y)
        out[f.order] = np.maximum(y, 0)
        return out / out.sum(), it

    return run


def fast_variant(transition, threads):
    def run(p, damping=0.5, tol=1e-7, max_iter=200):
        saved = ppr_fast.THREADS
        ppr_fast.THREADS = threads
        try:
            with MatvecCounter() as counter:
                x = ppr.personalized_pagerank(transition, p, damping=damping, tol=tol, max_iter=max_iter)
        finally:
            ppr_fast.THREADS = saved
        return x, counter.count

    return run


def fast_form(a, order=None, data="auto", scipy_fallback=False):
    """graph/ppr.py's fast form of ``a``: ``order`` None = RCM; ``data`` "auto" / "f64"; or the scipy fallback."""
    out_weight = np.asarray(a.sum(axis=1)).ravel()
    dangling = np.flatnonzero(out_weight <= 0)
    if scipy_fallback:
        saved = ppr_fast._kernels
        ppr_fast._kernels = lambda: None
        try:
            form = ppr_fast.symmetric_form(a, out_weight, order)
        finally:
            ppr_fast._kernels = saved
    else:
        form = ppr_fast.symmetric_form(a, out_weight, order)
        if data == "f64":
            values = np.ones(form.indices.size) if form.data is None else form.data.astype(np.float64)
            form = dataclasses.replace(form, data=values)
            ppr_fast._NumbaStep(form, ppr_fast._kernels()).warm_up()
    return ppr.Transition(dangling=dangling, fast=form)


# ---------------------------------------------------------------------- measuring


def timed(fn, *args, **kw):
    t = time.perf_counter()
    out = fn(*args, **kw)
    return out, time.perf_counter() - t


def timed_cpu(fn, *args, **kw):
    """(result, wall s, CPU s of the whole process: all threads)."""
    c, t = time.process_time(), time.perf_counter()
    out = fn(*args, **kw)
    return out, time.perf_counter() - t, time.process_time() - c


def compare(variants, resets, rounds, damping, tol):
    """({name: wall ms list}, {name: CPU ms list}, {name: [(scores, iterations)]}), rounds interleaved."""
    times = {name: [] for name in variants}
    cpu = {name: [] for name in variants}
    outputs = {}
    for name, run in variants.items():  # warm-up (numba compile, page-in)
        run(resets[0], damping=damping, tol=tol)
    for _ in range(rounds):
        outputs = {name: [] for name in variants}
        for p in resets:  # every variant on one reset before the next: load changes hit all variants alike
            for name, run in variants.items():
                (x, it), seconds, cpu_seconds = timed_cpu(run, p, damping=damping, tol=tol)
                times[name].append(seconds * 1000)
                cpu[name].append(cpu_seconds * 1000)
                outputs[name].append((x, it))
    return times, cpu, outputs


def top(x, k=100):
    return np.argsort(-x, kind="stable")[:k]


def table(times, cpu, outputs, reference, exact):
    rows = ["| variant | ms / PPR (p50) | p90 | vs old | CPU ms (p50) | mat-vecs (p50) | max L1 vs old | "
            "top-100 same as old | max L1 vs tight |", "|---|---:|---:|---:|---:|---:|---:|---:|---:|"]
    old_ms = np.median(times[reference])
    for name in times:
        ms = np.median(times[name])
        its = [it for _, it in outputs[name]]
        l1_old = max(np.abs(x - o).sum() for (x, _), (o, _) in zip(outputs[name], outputs[reference]))
        same = sum(np.array_equal(top(x), top(o)) for (x, _), (o, _) in zip(outputs[name], outputs[reference]))
        l1_exact = max(np.abs(x - e).sum() for (x, _), e in zip(outputs[name], exact))
        rows.append(f"| {name} | {ms:.1f} | {np.percentile(times[name], 90):.1f} | {old_ms / ms:.2f}x | "
                    f"{np.median(cpu[name]):.1f} | {np.median(its):.0f} | {l1_old:.1e} | {same}/{len(exact)} | {l1_exact:.1e} |")
    return rows


def resets_of(path, n):
    sets = np.load(path)
    out = []
    for key in sets.files:
        r = np.zeros(n)
        r[sets[key]] = 1.0
        out.append(r)
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--adjacency", default="/tmp/probe/adj100k_weight.npz")
    ap.add_argument("--seeds", default="/tmp/probe/seeds100k.npz")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--out", default=str(HERE / "results" / "ppr.md"))
    ap.add_argument("--quick", action="store_true", help="only old, the committed fast form on 1 and 2 threads and "
                    "its scipy fallback; no other graphs")
    args = ap.parse_args()

    a = sp.load_npz(args.adjacency).tocsr()
    n = a.shape[0]
    resets = resets_of(args.seeds, n)
    lines = [f"# Personalized PageRank at 100k passages (graph/ppr.py)", "",
             "Command (2-core machine shared with other engineers' jobs: timings are noisy; rounds interleaved):", "",
             "```bash", "python benchmarks/ppr_bench.py " + shlex.join(sys.argv[1:]), "```", "",
             f"Graph: {n:,} nodes, {a.nnz:,} stored entries (symmetric, weighted); {len(resets)} AGRAG reset sets; "
             f"{args.rounds} rounds; python {platform.python_version()}, numpy {np.__version__}, "
             f"scipy {scipy.__version__}, numba "
             f"{__import__('numba').__version__ if ppr_fast._kernels() else 'absent'}; ppr_fast.THREADS = {ppr_fast.THREADS}.", ""]

    # ---- builds
    (pt, dangling), t_old_build = timed(old_transition, a)
    order, t_rcm = timed(reverse_cuthill_mckee, a, True)
    new, t_new_build = timed(ppr.transition_matrix, a)
    assert new.fast is not None
    lines += ["## Building the transition (once per index snapshot and method)", "",
              "| step | s |", "|---|---:|",
              f"| old `transition_matrix` | {t_old_build:.2f} |",
              f"| new `transition_matrix` (symmetry check, RCM, permuted copy, kernel load) | {t_new_build:.2f} |",
              f"| of which reverse Cuthill-McKee alone | {t_rcm:.2f} |",
              ""]

    # ---- main comparison
    exact = [old_ppr(pt, dangling, p, tol=1e-14, max_iter=1000)[0] for p in resets]
    ptr = pt[order][:, order].tocsr()
    pos = np.empty(n, np.int64)
    pos[order] = np.arange(n)
    pt32, ptr32 = pt.astype(np.float32), ptr.astype(np.float32)

    def permuted(m, dtype=np.float64):
        def run(p, **kw):
            x, it = old_ppr(m, pos[dangling], p[order], dtype=dtype, **kw)
            return x[pos], it
        return run

    variants = {"old": lambda p, **kw: old_ppr(pt, dangling, p, **kw)}
    if not args.quick:
        variants.update({
            "power f32": lambda p, **kw: old_ppr(pt32, dangling, p, dtype=np.float32, **kw),
            "power rcm": permuted(ptr),
            "power f32 rcm": permuted(ptr32, np.float32),
            "power numba f32 rcm 1t": numba_power(new.fast, 1),
            "power numba f32 rcm 2t": numba_power(new.fast, 2),
            "cg scipy f64 rcm": cg_scipy(new),
            "cheb scipy f64 rcm (fallback)": fast_variant(fast_form(a, scipy_fallback=True), 1),
            "cheb numba f64 rcm 2t": fast_variant(fast_form(a, data="f64"), 2),
            "cheb numba f32 orig 2t": fast_variant(fast_form(a, order=np.arange(n)), 2),
            "cheb numba f32 degree 2t": fast_variant(fast_form(a, order=np.argsort(-np.diff(a.indptr), kind="stable")), 2),
            "cheb numba f32 rcm 1t": fast_variant(new, 1),
        })
    else:
        variants["cheb scipy f64 rcm (fallback)"] = fast_variant(fast_form(a, scipy_fallback=True), 1)
        variants["cheb numba f32 rcm 1t"] = fast_variant(new, 1)
    variants["cheb numba f32 rcm 2t (transition_matrix)"] = fast_variant(new, 2)
    load = os.getloadavg()[0]
    times, cpu, outputs = compare(variants, resets, args.rounds, 0.5, 1e-7)
    lines += ["## Weighted graph (HippoRAG, AGRAG): damping 0.5, tol 1e-7", "",
              f"Load average (1 min) before / after: {load:.1f} / {os.getloadavg()[0]:.1f} on "
              f"{os.cpu_count()} cores.", ""]
    lines += table(times, cpu, outputs, "old", exact) + [""]

    # ---- the other callers' graphs and settings
    others = () if args.quick else (
        ("binary adjacency (A2RAG): damping 0.5, tol 1e-4", ppr.binary_adjacency(a), 0.5, 1e-4),
        ("binary adjacency with ArchRAG ppr_refine's damping 0.85, tol 1e-6", ppr.binary_adjacency(a), 0.85, 1e-6))
    for label, adjacency, damping, tol in others:
        bpt, bdang = old_transition(adjacency)
        bnew = ppr.transition_matrix(adjacency)
        bexact = [old_ppr(bpt, bdang, p, damping=damping, tol=1e-14, max_iter=2000)[0] for p in resets]
        bvariants = {"old": lambda p, **kw: old_ppr(bpt, bdang, p, **kw),
                     "cheb scipy f64 rcm (fallback)": fast_variant(fast_form(adjacency, scipy_fallback=True), 1),
                     "cheb numba rcm 1t": fast_variant(bnew, 1),
                     "cheb numba rcm 2t (transition_matrix)": fast_variant(bnew, 2)}
        btimes, bcpu, bout = compare(bvariants, resets, max(1, args.rounds // 2), damping, tol)
        values = "no values (all weights 1)" if bnew.fast.data is None else f"{bnew.fast.data.dtype} values"
        lines += [f"## {label}; fast form stores {values}", ""] + table(btimes, bcpu, bout, "old", bexact) + [""]

    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
