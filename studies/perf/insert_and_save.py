"""Load a kept index, insert 1,000 new synthetic passages, save into the same folder: the seconds of each step.

The passages are ``benchmarks/synth.py``'s with seed 2 under new ids (``more-N``), so they are new to an index built
from the seed-0 corpus and to one that already holds the bench's own insert (``inserted-N``, seed 1). Run it on a
hard-linked copy of the index (``cp -al KEEP COPY``: a save writes new files and never changes old ones), once per
code tree, in turns:

    cp -al KEEP/index-1000000 /tmp/ab-before; cp -al KEEP/index-1000000 /tmp/ab-after
    PYTHONPATH=OLD_TREE python studies/perf/insert_and_save.py /tmp/ab-before before
    PYTHONPATH=.        python studies/perf/insert_and_save.py /tmp/ab-after after
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
    folder, label = Path(sys.argv[1]), sys.argv[2] if len(sys.argv) > 2 else ""
    start = time.perf_counter()
    index = GraphRAGIndex.load(folder, embed_model="hash")
    load = time.perf_counter() - start
    docs = [make_document(f"more-{i}", p["text"], p["title"])
            for i, p in enumerate(synth.Synth(1000, seed=2).passages()) if i < 1000]
    start = time.perf_counter()
    index.insert(docs)
    insert = time.perf_counter() - start
    start = time.perf_counter()
    index.persist(folder)
    print(f"{label}: load {load:.2f} s, insert {insert:.2f} s, save {time.perf_counter() - start:.2f} s", flush=True)


if __name__ == "__main__":
    main()
