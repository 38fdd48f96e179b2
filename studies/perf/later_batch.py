"""One later batch of a batched build, run as ``build_in_batches`` runs it, on a kept index: where its CPU goes.

``batch_growth.py --into`` inserts a batch into a kept index with the collector on and each save written whole;
``build_in_batches`` pauses the collector through the batch and appends each save's rows (``appending_segments``).
This script runs one batch the second way: ``--passages`` passages from line ``--offset`` of ``--corpus``
inserted into ``--into`` (a copy: it is changed), saved, collected once, loaded back with the running counts
handed over. It prints one JSON line: CPU seconds of the first load, the insert (and each build stage in it), the
save, the collection and the load back; peak RSS. Run it from two checkouts in turns to compare them:

    cp -r KEPT COPY; PYTHONPATH=TREE python studies/perf/later_batch.py --into COPY \\
        --corpus synth-1000000/corpus.jsonl --offset 400000 --passages 100000
"""

from __future__ import annotations

import argparse
import gc
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from batch_growth import (  # noqa: E402
    count_cpu, cpu_seconds, later_batch_arguments, later_batch_documents, peak_rss_mb)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    later_batch_arguments(parser, "a kept index (a copy: it is changed)")
    args = parser.parse_args()

    from llama_index_graphrag_suite.index.batched import _load_back, _save
    from llama_index_graphrag_suite.index.collector import collector_paused
    from llama_index_graphrag_suite.index.compaction_hint import without_compaction_hint
    from llama_index_graphrag_suite.index.graph_index import GraphRAGIndex
    from llama_index_graphrag_suite.index.segment_files import appending_segments

    stages: dict[str, float] = {}
    cpu: dict[str, float] = {}
    start = cpu_seconds()
    index = GraphRAGIndex.load(args.into, embed_model="hash")
    cpu["first_load"] = cpu_seconds() - start
    docs = later_batch_documents(args)
    count_cpu(GraphRAGIndex, "_stage", stages, context=True)
    folder = Path(args.into)
    with appending_segments(), collector_paused():  # as build_in_batches runs a batch
        start = cpu_seconds()
        index.insert(docs)
        cpu["insert"] = cpu_seconds() - start
        start = cpu_seconds()
        saved = _save(index, folder, {})
        cpu["persist"] = cpu_seconds() - start
        del index
        start = cpu_seconds()
        gc.collect()
        cpu["gc"] = cpu_seconds() - start
        start = cpu_seconds()
        with without_compaction_hint():
            _load_back(folder, saved, {"llm": None, "store": None})
        cpu["load"] = cpu_seconds() - start
    print(json.dumps({"inserted": len(docs), "cpu_s": {k: round(v, 2) for k, v in cpu.items()},
                      "stages_cpu_s": {k: round(v, 2) for k, v in stages.items()},
                      "batch_cpu_s": round(cpu["insert"] + cpu["persist"] + cpu["gc"] + cpu["load"], 2),
                      "peak_rss_mb": round(peak_rss_mb())}), flush=True)


if __name__ == "__main__":
    main()
