"""The synonym step of an insert into a large index: searching new names in packed entity lists or gathered rows.

    python studies/perf/synonym_packed_lists.py INDEX_DIR [--names 30000] [--repeats 3] [--out MD]

An insert searches each new entity name in its nearest lists of the entity table (``graph/synonyms.py``,
``listed_synonym_pairs``). With the entity table packed (``index/vector_io.py``) each probed list is one contiguous
slice; stored in row order, its rows are gathered one by one. This times the search for the table's last
``--names`` rows (as a batch's new names) both ways in one process, in turns, on a loaded index whose entity table
is packed ("gathered rows" reads the same rows through the row map), and checks the pairs are the same.
"""

from __future__ import annotations

import argparse
import statistics
import time
from pathlib import Path

import numpy as np

from llama_index_graphrag_suite.graph.synonyms import listed_synonym_pairs
from llama_index_graphrag_suite.graph.vector_lists import VectorLists
from llama_index_graphrag_suite.index.graph_index import GraphRAGIndex

from _report import cpu, print_and_write  # studies/perf/_report.py (this folder is on sys.path)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("index")
    ap.add_argument("--names", type=int, default=30_000)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--out", type=Path)
    args = ap.parse_args()
    index = GraphRAGIndex.load(args.index, embed_model="hash")
    table, config = index.entity_vectors, index.config
    if not table.listed or table.lists.packed is None:
        raise SystemExit(f"{args.index}: the entity table is not packed (compact it with this code first)")
    packed = table.lists
    ways = {"packed lists": packed,
            "gathered rows": VectorLists(packed.centroids, packed.lists, packed.moves)}
    rows = np.arange(len(table) - args.names, len(table), dtype=np.int64)
    seconds = {w: [] for w in ways}
    cpus = {w: [] for w in ways}
    found = {}
    for r in range(args.repeats):
        for way in (ways if r % 2 == 0 else dict(reversed(list(ways.items())))):
            c, w = cpu(), time.perf_counter()
            got = listed_synonym_pairs(ways[way], table.at, rows, config.synonym_threshold,
                                       config.synonym_max_per_entity)
            seconds[way].append(time.perf_counter() - w)
            cpus[way].append(cpu() - c)
            found[way] = got
    same = all(np.array_equal(a, b) for a, b in zip(found["packed lists"], found["gathered rows"]))
    lines = [f"Index `{args.index}`: {len(table):,} entity rows, {len(packed.centroids):,} lists; the last "
             f"{len(rows):,} rows searched as new names; {args.repeats} runs per way, in turns.", "",
             "| way | wall s (median) | CPU s (median) | runs (wall s) |", "|---|---:|---:|---|"]
    for way in ways:
        lines.append(f"| {way} | {statistics.median(seconds[way]):.2f} | {statistics.median(cpus[way]):.2f} | "
                     f"{', '.join(f'{s:.2f}' for s in seconds[way])} |")
    lines += ["", f"Pairs found: {len(found['packed lists'][0]):,}; the same both ways: {'yes' if same else 'NO'}."]
    print_and_write(lines, args.out, "The synonym step's list search: packed entity lists against gathered rows")


if __name__ == "__main__":
    main()
