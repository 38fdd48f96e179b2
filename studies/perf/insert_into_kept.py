"""Insert the 1,000 passages ``benchmarks/scale.py`` inserts into a kept index's build version, and time ``insert``.

    python studies/perf/insert_into_kept.py KEEP/index-100000            # this checkout's code
    PYTHONPATH=OLD_CHECKOUT python studies/perf/insert_into_kept.py ...  # another commit's, for an A/B

Loads version 1 (the build, before the bench's own insert), so runs repeat on the same index; prints the insert's
wall seconds and the stage seconds the index accumulates (``build_info["stage_seconds"]``: the build's plus this
insert's). Run the two commits in turn, several times each, on the same machine.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))
import synth  # noqa: E402

from llama_index_graphrag_suite.documents import make_document  # noqa: E402
from llama_index_graphrag_suite.index.graph_index import GraphRAGIndex  # noqa: E402


def main() -> None:
    index = GraphRAGIndex.load(sys.argv[1], embed_model="hash", version=1)
    docs = [make_document(f"inserted-{i}", p["text"], p["title"])
            for i, p in enumerate(synth.Synth(1000, seed=1).passages()) if i < 1000]
    start, cpu = time.perf_counter(), time.process_time()
    index.insert(docs)
    print(f"insert {time.perf_counter() - start:.2f} s ({time.process_time() - cpu:.2f} CPU s)",
          index.build_info.get("stage_seconds"))


if __name__ == "__main__":
    main()
