"""ArchRAG's KNN step on a large index: how many of the exact above-threshold neighbours each search finds, and its CPU.

Loads an index read-only (hash embedding), computes the entities' attribute vectors as the hierarchy does, and for a
seeded sample of entities compares the ``search`` nearest rows (``1.5·k + 2``, k = mean degree, as ``knn_augment``)
found by the inverted-file search (``synonyms.ivf_index``, what the KNN step used from 20,000 rows on) and by a
faiss HNSW with the C-HNSW's settings (``hnsw_layer``, M 16, efConstruction 64) at several efSearch, against an
exact search. Recall counts the exact neighbours whose cosine is above the KNN threshold (the 80th percentile of
the real links' cosines): only those can become KNN edges. Full-search CPU is extrapolated from the sample.

    OMP_NUM_THREADS=1 nice -n 19 python studies/perf/archrag_knn_recall.py --index /work/scratch/keep3/index-100000
"""

from __future__ import annotations

import argparse
import time

import numpy as np


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--index", required=True)
    ap.add_argument("--sample", type=int, default=3000)
    ap.add_argument("--ef", type=int, nargs="+", default=[16, 24, 32, 48, 64])
    args = ap.parse_args()

    import faiss

    from llama_index_graphrag_suite.graph.chnsw import hnsw_layer, hnsw_search
    from llama_index_graphrag_suite.graph.chnsw_search import unit_rows
    from llama_index_graphrag_suite.graph.knn_augment import edge_cosines, unique_pairs
    from llama_index_graphrag_suite.graph.snapshot import RELATION
    from llama_index_graphrag_suite.graph.synonyms import ivf_index
    from llama_index_graphrag_suite.index.graph_index import GraphRAGIndex
    from llama_index_graphrag_suite.methods.archrag import attributes

    faiss.omp_set_num_threads(1)
    index = GraphRAGIndex.load(args.index, embed_model="hash")
    ids = list(index.entities)
    x = unit_rows(attributes.attribute_vectors(index, ids, attributes.fact_ends(index, ids)), in_place=True)
    n = x.shape[0]
    rel = index.snapshot.edge_kind == RELATION
    src, dst = unique_pairs(index.snapshot.edge_src[rel], index.snapshot.edge_dst[rel], n)
    degree = np.bincount(np.r_[src, dst], minlength=n)
    k = max(1, int(degree[degree > 0].mean()))
    search = min(n, int(1.5 * k) + 2)
    threshold = float(np.percentile(edge_cosines(x, src, dst), 80))
    print(f"entities {n}, k {k}, search {search}, threshold {threshold:.4f}")
    queries = np.sort(np.random.default_rng(0).choice(n, min(args.sample, n), replace=False))
    flat = faiss.IndexFlatIP(x.shape[1])
    flat.add(x)
    exact_sims, exact_rows = flat.search(x[queries], search)
    del flat

    def recall(sims, rows) -> float:
        hit = total = 0
        for q, es, er, fs, fr in zip(queries.tolist(), exact_sims, exact_rows, sims, rows):
            want = {j for c, j in zip(es.tolist(), er.tolist()) if c > threshold and j != q}
            hit += len(want & {j for c, j in zip(fs.tolist(), fr.tolist()) if c > threshold and j != q})
            total += len(want)
        return hit / max(total, 1)

    def timed(search_fn) -> tuple[float, float]:
        start = time.process_time()
        found = search_fn()
        per_query = (time.process_time() - start) / len(queries)
        return per_query * n, recall(*found)

    start = time.process_time()
    ivf = ivf_index(x)
    build = time.process_time() - start
    full, r = timed(lambda: ivf.search(x[queries], search))
    print(f"ivf: build {build:.1f} CPU s, full search ~{full:.1f} CPU s, recall {r:.4f}")
    del ivf
    start = time.process_time()
    hnsw = hnsw_layer(x, 16, 64)
    print(f"hnsw M 16 efConstruction 64: build {time.process_time() - start:.1f} CPU s")
    for ef in args.ef:
        full, r = timed(lambda: hnsw_search(hnsw, x[queries], search, ef))
        print(f"  efSearch {ef}: full search ~{full:.1f} CPU s, recall {r:.4f}")


if __name__ == "__main__":
    main()
