"""How far one later batch's link step reaches into a kept index: names new to it, older chunks its word filter
reads, and older chunks that really get a new name.

The link step (``index/rows.py``) first narrows the older chunks to those that write every word of a new name
(BM25's term columns), then reads each of them (its text tokenised again, the new names matched in it) and pairs
the sentences a new name is in. If the filter passed many chunks that match nothing, a finer filter would save the
reading; if most of them match, the reading is the work itself. This script inserts ``--passages`` passages from
line ``--offset`` of ``--corpus`` into ``--into`` as ``build_in_batches`` does (collector paused), stops the insert
right after its link step (the change is rolled back: nothing is saved, the index is not changed) and prints one
JSON line: new names, chunks the filter passed, chunks touched, the link step's CPU seconds.

    PYTHONPATH=TREE python studies/perf/link_reach.py --into KEPT_400K \\
        --corpus synth-1000000/corpus.jsonl --offset 400000 --passages 100000
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from batch_growth import later_batch_arguments, later_batch_documents  # noqa: E402


class _Stop(Exception):
    """Raised after the link step: the insert rolls back."""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    later_batch_arguments(parser, "a kept index (read, not changed)")
    args = parser.parse_args()

    from llama_index_graphrag_suite.index import rows
    from llama_index_graphrag_suite.index.collector import collector_paused
    from llama_index_graphrag_suite.index.graph_index import GraphRAGIndex

    seen: dict[str, float] = {}
    filter_chunks, link = rows.chunks_that_may_mention, rows.link_new_entities_to_old_chunks

    def counted_filter(state, keys, new_chunks):
        passed = filter_chunks(state, keys, new_chunks)
        seen["filter_passed"] = len(passed)
        return passed

    def counted_link(state, new_entities, new_chunks, extraction, new_facts):
        start = time.process_time()
        touched = link(state, new_entities, new_chunks, extraction, new_facts)
        seen.update(new_names=len(new_entities), touched=len(touched), link_cpu_s=round(time.process_time() - start, 1))
        raise _Stop

    rows.chunks_that_may_mention, rows.link_new_entities_to_old_chunks = counted_filter, counted_link
    index = GraphRAGIndex.load(args.into, embed_model="hash")
    docs = later_batch_documents(args)
    try:
        with collector_paused():
            index.insert(docs)
    except _Stop:
        pass
    print(json.dumps({"older_chunks": len(index.state.chunks), "inserted": len(docs), **seen}), flush=True)


if __name__ == "__main__":
    main()
