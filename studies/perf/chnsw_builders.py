"""The two C-HNSW builders side by side: build time and search recall per layer.

    python studies/perf/chnsw_builders.py --sizes 50000,12000,3000 --dim 64 --runs 3

``faiss`` (one faiss HNSW per layer, single-threaded, nearest node one layer down as the inter-layer link) and
``insertion`` (Algorithm 3 in numpy) build the same C-HNSW over the same synthetic hierarchy (``chnsw_bench.py``'s:
every node a noisy copy of a random node one layer up). Build seconds are the median of ``--runs`` builds, in one process, the two
builders alternating. Recall@10 per layer: the graph walk on every layer (``exact_layer_size = 0``) against exact
search, over 200 held-out queries; "down exact": share of inter-layer links that are the true nearest node below.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

import numpy as np

from llama_index_graphrag_suite.graph.chnsw import CHNSW

sys.path.insert(0, str(Path(__file__).parent))
from chnsw_bench import synthetic  # noqa: E402  (the same clustered hierarchy as the search benchmark)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", default="50000,12000,3000", help="nodes per layer, bottom first")
    ap.add_argument("--dim", type=int, default=64)
    ap.add_argument("--runs", type=int, default=3)
    args = ap.parse_args()
    layers, queries = synthetic([int(s) for s in args.sizes.split(",")], args.dim, 200, seed=0, spread=1.2)
    seconds: dict[str, list[float]] = {"faiss": [], "insertion": []}
    built = {}
    for _ in range(args.runs):
        for builder in seconds:
            start = time.perf_counter()
            built[builder] = CHNSW.build(layers, seed=0, builder=builder)
            seconds[builder].append(time.perf_counter() - start)
    print(f"layers {args.sizes}, dim {args.dim}, median of {args.runs} builds")
    print("| builder | build s | recall@10 per layer | inter-layer links exact |")
    print("|---|---:|---|---|")
    for builder, index in built.items():
        index.exact_layer_size = 0
        recall = []
        for layer, vectors in enumerate(layers):
            truth = np.argsort(-(vectors @ queries.T), axis=0)[:10].T
            found = [index.search_layer(q, layer, 10)[0] for q in queries]
            recall.append(np.mean([len(set(f.tolist()) & set(t.tolist())) / 10 for f, t in zip(found, truth)]))
        exact = [np.mean(index.inter_layer_links(l) == np.argmax(layers[l - 1] @ layers[l].T, axis=0))
                 for l in range(1, len(layers))]
        print(f"| {builder} | {statistics.median(seconds[builder]):.2f} | "
              f"{' / '.join(f'{r:.3f}' for r in recall)} | {' / '.join(f'{e:.3f}' for e in exact)} |")
    print(f"ratio insertion / faiss: {statistics.median(seconds['insertion']) / statistics.median(seconds['faiss']):.1f}x")


if __name__ == "__main__":
    main()
