"""A compaction's whole writes of a loaded index's chunks, chunk_links and entities tables: from records
(``tables._whole_rows``) against from the loaded columns (``whole_columns.whole_columns``), alternated in one
process on the same loaded index; CPU seconds of each and whether the two give equal Arrow tables.

    PYTHONPATH=. python studies/perf/whole_columns_ab.py --index COPY_OF_A_KEPT_INDEX --repeats 2
"""

from __future__ import annotations

import argparse
import gc
import json
import statistics

from _report import cpu  # studies/perf/_report.py (this folder is on sys.path)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--index", required=True, help="a copy of a kept index (loading records verified files)")
    parser.add_argument("--repeats", type=int, default=2)
    args = parser.parse_args()

    from llama_index_graphrag_suite.index import tables
    from llama_index_graphrag_suite.index.graph_index import GraphRAGIndex
    from llama_index_graphrag_suite.index.whole_columns import whole_columns

    index = GraphRAGIndex.load(args.index, embed_model="hash")
    state = index.state
    names = ("chunks", "chunk_links", "entities")
    ways = {"records": lambda n: tables._whole_rows(state, n, list(tables._rows_dict(state, n))),
            "columns": lambda n: whole_columns(state, n, tables.SCHEMAS[n])}
    seconds: dict[str, list[float]] = {w: [] for w in ways}
    equal = {}
    for _ in range(args.repeats):
        made = {}
        for way, make in ways.items():  # alternated: records, columns, records, columns ...
            gc.collect()
            start = cpu()
            made[way] = {n: make(n) for n in names}
            seconds[way].append(cpu() - start)
        equal = {n: made["records"][n].combine_chunks().equals(made["columns"][n].combine_chunks()) for n in names}
        del made
    print(json.dumps({"chunks": len(state.chunks), "entities": len(state.entities), "equal": equal,
                      "cpu_s": {w: [round(s, 2) for s in v] for w, v in seconds.items()},
                      "median_s": {w: round(statistics.median(v), 2) for w, v in seconds.items()}}))


if __name__ == "__main__":
    main()
