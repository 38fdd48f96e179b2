"""C-HNSW vs exact search: time to get every layer's top-k (ArchRAG hierarchical search, Section 3.2.1).

    python benchmarks/chnsw_bench.py --n 20000 --dim 384 --queries 300
    python benchmarks/chnsw_bench.py --index-dir /tmp/dev/2wiki_retrieval101   # real entity vectors

Layers: ``--layers`` of them, each ``--ratio`` times smaller than the one below (20k / 1000 / 50 by
default, like ArchRAG's communities of ≤ 15 members over ~20k entities). Synthetic data (default) is a
hierarchy of clusters: every node is a noisy copy of a random node one layer up. With ``--index-dir``
the bottom layer is the index's entity vectors and the upper layers are spherical k-means centroids of
the layer below (faiss), standing in for community embeddings. Queries are held-out points drawn like
the bottom layer (synthetic) or perturbed entity vectors (real).

Timed per query (median): C-HNSW ``search_all_layers`` (exact scoring on layers of at most
``exact_layer_size`` nodes, the default), C-HNSW walking the graph on every layer, exact numpy search
over all nodes (one matrix-vector product over every layer's vectors, then a top-k per layer) and faiss
``IndexFlatIP`` (one per layer, every node scored). Everything runs on ``--threads`` threads (default 1:
the machine is shared, and a single query is too small to split well). Recall@k is against exact search.
"""

from __future__ import annotations

import argparse
import math
import statistics
import time

import faiss
import numpy as np

from llama_index_graphrag_suite.graph.chnsw import CHNSW


def unit(x: np.ndarray) -> np.ndarray:
    return (x / np.linalg.norm(x, axis=-1, keepdims=True)).astype(np.float32)


def synthetic(sizes: list[int], dim: int, queries: int, seed: int, spread: float):
    """Hierarchical clusters, top layer uniform on the sphere; queries drawn like the bottom layer."""
    rng = np.random.default_rng(seed)
    layers = [unit(rng.standard_normal((sizes[-1], dim)))]
    for n in reversed(sizes[:-1]):
        parents = layers[0][rng.integers(len(layers[0]), size=n)]
        layers.insert(0, unit(parents + spread * rng.standard_normal((n, dim)) / math.sqrt(dim)))
    parents = layers[1][rng.integers(len(layers[1]), size=queries)] if len(layers) > 1 else layers[0][:queries]
    qs = unit(parents + spread * rng.standard_normal((queries, dim)) / math.sqrt(dim))
    return layers, qs


def from_index(index_dir: str, num_layers: int, ratio: int, queries: int, seed: int):
    """Entity vectors of a saved GraphRAGIndex (read-only) and k-means centroids above them."""
    from llama_index_graphrag_suite.index.storage import open_version

    folder, _ = open_version(index_dir, verify=False)
    flat = faiss.read_index(str(folder / "entities.faiss"))
    bottom = faiss.rev_swig_ptr(flat.get_xb(), flat.ntotal * flat.d).reshape(flat.ntotal, flat.d).copy()
    layers = [unit(bottom)]
    for _ in range(num_layers - 1):
        n = max(1, len(layers[-1]) // ratio)
        kmeans = faiss.Kmeans(layers[-1].shape[1], n, niter=8, seed=seed, spherical=True, verbose=False,
                              min_points_per_centroid=1)
        kmeans.train(layers[-1])
        layers.append(unit(kmeans.centroids))
    rng = np.random.default_rng(seed)
    base = layers[0][rng.integers(len(layers[0]), size=queries)]
    qs = unit(base + 0.3 * rng.standard_normal(base.shape) / math.sqrt(base.shape[1]))
    return layers, qs


def median_ms(fn, queries: np.ndarray) -> tuple[float, list]:
    fn(queries[0])  # warm-up
    times, outputs = [], []
    for q in queries:
        start = time.perf_counter()
        outputs.append(fn(q))
        times.append(time.perf_counter() - start)
    return statistics.median(times) * 1000, outputs


def recall(found: list[list[np.ndarray]], truth: list[list[np.ndarray]], layer: int) -> float:
    return float(np.mean([len(set(f[layer].tolist()) & set(t[layer].tolist())) / len(t[layer])
                          for f, t in zip(found, truth)]))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=20000, help="bottom-layer nodes (synthetic data)")
    parser.add_argument("--dim", type=int, default=384)
    parser.add_argument("--layers", type=int, default=3)
    parser.add_argument("--ratio", type=int, default=20, help="nodes per node one layer up")
    parser.add_argument("--queries", type=int, default=300)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--k", type=int, default=5)
    parser.add_argument("--ef", type=int, default=64)
    parser.add_argument("--M", type=int, default=16)
    parser.add_argument("--ef-construction", type=int, default=64)
    parser.add_argument("--spread", type=float, default=1.5, help="synthetic cluster noise (0 = points on parents)")
    parser.add_argument("--index-dir", help="use this GraphRAGIndex's entity vectors as the bottom layer")
    parser.add_argument("--threads", type=int, default=1)
    args = parser.parse_args()

    from threadpoolctl import threadpool_limits

    threadpool_limits(args.threads)
    faiss.omp_set_num_threads(args.threads)
    if args.index_dir:
        layers, qs = from_index(args.index_dir, args.layers, args.ratio, args.queries, args.seed)
        source = f"entity vectors of {args.index_dir} + k-means layers"
    else:
        sizes = [max(1, args.n // args.ratio**i) for i in range(args.layers)]
        layers, qs = synthetic(sizes, args.dim, args.queries, args.seed, args.spread)
        source = f"synthetic clusters (spread {args.spread})"
    sizes = [len(v) for v in layers]
    k = args.k

    wall, cpu = time.perf_counter(), time.process_time()
    index = CHNSW.build(layers, M=args.M, ef_construction=args.ef_construction, seed=args.seed)
    build_wall, build_cpu = time.perf_counter() - wall, time.process_time() - cpu

    everything = np.ascontiguousarray(np.concatenate(layers))
    bounds = np.cumsum([0] + sizes)

    def exact_numpy(q):
        sims = everything @ q
        out = []
        for lo, hi in zip(bounds[:-1], bounds[1:]):
            part = sims[lo:hi]
            top = np.argpartition(-part, k - 1)[:k] if hi - lo > k else np.arange(hi - lo)
            out.append(top[np.argsort(-part[top], kind="stable")])
        return out

    flats = []
    for v in layers:
        flat = faiss.IndexFlatIP(v.shape[1])
        flat.add(v)
        flats.append(flat)

    def exact_faiss(q):
        q2 = q[None, :]
        return [flat.search(q2, min(k, flat.ntotal))[1][0] for flat in flats]

    def chnsw(q):
        return [ids for ids, _ in index.search_all_layers(q, k, ef=args.ef)]

    numpy_ms, truth = median_ms(exact_numpy, qs)
    faiss_ms, _ = median_ms(exact_faiss, qs)
    auto_ms, found_auto = median_ms(chnsw, qs)
    exact_size = index.exact_layer_size
    index.exact_layer_size = 0
    walk_ms, found_walk = median_ms(chnsw, qs)
    index.exact_layer_size = exact_size

    print(f"## C-HNSW benchmark: {source}\n")
    print(f"layers (bottom → top): {' / '.join(map(str, sizes))} nodes, dim {layers[0].shape[1]}; "
          f"{len(qs)} queries, k={k}, ef={args.ef}, M={args.M}, ef_construction={args.ef_construction}, "
          f"seed {args.seed}, {args.threads} thread(s)\n")
    print(f"build: {build_wall:.1f} s wall, {build_cpu:.1f} s CPU\n")
    print("| search (every layer's top-k) | median ms / query | exact numpy ÷ this | recall@k per layer (0 = bottom) |")
    print("|---|---:|---:|---|")
    rows = [
        (f"C-HNSW search_all_layers (exact on layers ≤ {exact_size} nodes)", auto_ms, found_auto),
        ("C-HNSW search_all_layers, graph walk on every layer", walk_ms, found_walk),
        ("exact numpy (one product over all nodes)", numpy_ms, truth),
        ("exact faiss IndexFlatIP (per layer, all nodes)", faiss_ms, None),
    ]
    for name, ms, found in rows:
        rec = ", ".join(f"{recall(found, truth, l):.3f}" for l in range(len(sizes))) if found is not None else "1 (exact)"
        print(f"| {name} | {ms:.3f} | {numpy_ms / ms:.2f}× | {rec} |")
    print(f"\nSpeed-up of C-HNSW (default) over exact search of all nodes: {numpy_ms / auto_ms:.2f}× (numpy), "
          f"{faiss_ms / auto_ms:.2f}× (faiss IndexFlatIP); walking every layer: {numpy_ms / walk_ms:.2f}× / "
          f"{faiss_ms / walk_ms:.2f}×.")


if __name__ == "__main__":
    main()
