"""What searching an insert's new names in the entity vector lists costs and misses, against the exact search.

    python studies/perf/listed_synonyms.py INDEX_DIR [--queries 1600] [--runs 3]

Loads a saved index's entity name vectors, takes ``--queries`` rows at random as "new names" (an insert of about
1,000 passages adds ~1,600 on the synthetic corpus), and finds their synonym pairs (Eq. 5: cosine above the
index's threshold, at most its per-entity cap) twice: exactly (``synonym_pairs``: every query against every row),
and in the rows of each query's nearest lists (``listed_synonym_pairs``, the insert path from
``index.vectors.LISTED_MIN_ROWS`` rows on). Prints the seconds of each (medians; the lists' training and
assignment of every row timed apart: an index saved with its lists pays them at build time, not per insert),
and the listed pairs' recall and precision against the exact ones.
"""

from __future__ import annotations

import argparse
import statistics
import time

import numpy as np

from llama_index_graphrag_suite.graph.synonyms import listed_synonym_pairs, synonym_pairs
from llama_index_graphrag_suite.graph.vector_lists import train_lists
from llama_index_graphrag_suite.index.graph_index import GraphRAGIndex


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("index")
    ap.add_argument("--queries", type=int, default=1600)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--nlist", type=int, default=None, help="lists to train (default √n; √(n/2): lists a batched "
                    "build has outgrown as far as it lets them, vectors.REFIT_GROWTH)")
    ap.add_argument("--ivf", action="store_true", help="also time and score the inverted file trained anew over "
                    "every name (the insert path for 20,000+ new names before the lists were searched for them)")
    args = ap.parse_args()
    index = GraphRAGIndex.load(args.index, embed_model="hash")
    table, config = index.entity_vectors, index.config
    x = np.ascontiguousarray(table.vectors(), np.float32)
    rows = np.sort(np.random.default_rng(0).choice(len(x), min(args.queries, len(x)), replace=False))
    kw = {"threshold": config.synonym_threshold, "max_per_node": config.synonym_max_per_entity}
    timings = {"exact": [], "lists (train and assign every row)": [], "listed search": []}
    if args.ivf:
        timings["ivf (trained over every name, then searched)"] = []
    for _ in range(args.runs):
        start = time.perf_counter()
        exact = synonym_pairs(x, query_rows=rows, approx_rows=0, **kw)
        timings["exact"].append(time.perf_counter() - start)
        start = time.perf_counter()
        lists = train_lists(x, args.nlist)
        timings["lists (train and assign every row)"].append(time.perf_counter() - start)
        start = time.perf_counter()
        listed = listed_synonym_pairs(lists, lambda r: x[r], rows, **kw)
        timings["listed search"].append(time.perf_counter() - start)
        if args.ivf:
            start = time.perf_counter()
            ivf = synonym_pairs(x, query_rows=rows, approx_rows=1, **kw)
            timings["ivf (trained over every name, then searched)"].append(time.perf_counter() - start)
    exact_pairs, listed_pairs = set(zip(*[a.tolist() for a in exact[:2]])), set(zip(*[a.tolist() for a in listed[:2]]))
    both = len(exact_pairs & listed_pairs)
    print(f"{len(x):,} name vectors (dim {x.shape[1]}), {len(rows):,} query names, {len(lists.centroids):,} lists")
    for name, values in timings.items():
        print(f"  {name}: {statistics.median(values):.3f} s (median of {len(values)})")
    print(f"  exact pairs {len(exact_pairs):,}, listed pairs {len(listed_pairs):,}; recall "
          f"{both / max(len(exact_pairs), 1):.4f}, precision {both / max(len(listed_pairs), 1):.4f}")
    if args.ivf:
        ivf_pairs = set(zip(*[a.tolist() for a in ivf[:2]]))
        both = len(exact_pairs & ivf_pairs)
        print(f"  ivf pairs {len(ivf_pairs):,}; recall {both / max(len(exact_pairs), 1):.4f}, precision "
              f"{both / max(len(ivf_pairs), 1):.4f}")


if __name__ == "__main__":
    main()
