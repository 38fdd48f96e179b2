"""What a save that writes a loaded index's row tables whole costs, made all at once or a slice at a time.

Loads ``INDEX`` and makes the Arrow tables a whole write of its chunk, chunk-link and entity tables makes
(``tables._whole_rows``: ``WHOLE_SLICE_ROWS`` rows as records at a time), then the same all at once (``tables._rows``
over every key, what a compaction did before), each followed by a ``gc.collect``; prints the CPU seconds and the
process's peak RSS after each (the peak only grows: the sliced pass runs first).

    PYTHONPATH=. python studies/perf/whole_write_memory.py INDEX
"""

from __future__ import annotations

import gc
import json
import resource
import sys
import time


def peak_mb() -> int:
    return round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024)


def main() -> None:
    from llama_index_graphrag_suite.index import tables
    from llama_index_graphrag_suite.index.graph_index import GraphRAGIndex

    index = GraphRAGIndex.load(sys.argv[1], embed_model="hash")
    state = index.state
    gc.collect()
    out = {"passages": len(index.chunks), "peak_after_load_mb": peak_mb()}
    for name, make in (("sliced", tables._whole_rows), ("all_at_once", lambda s, t, k: tables._rows(s, t, k, []))):
        start = time.process_time()
        for table in ("chunks", "chunk_links", "entities"):
            made = make(state, table, list(tables._rows_dict(state, table))).combine_chunks()  # as write_arrow
            out[f"{name}_{table}_mb"] = round(made.nbytes / 2 ** 20)
            del made
            gc.collect()
        out[f"{name}_cpu_s"] = round(time.process_time() - start, 1)
        out[f"{name}_peak_mb"] = peak_mb()
    print(json.dumps(out), flush=True)


if __name__ == "__main__":
    main()
