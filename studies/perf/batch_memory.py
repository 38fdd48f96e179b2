"""Where in one batch of a batched build the process's memory grows: RSS (anonymous and file-backed, i.e. mapped
index pages) and the peak so far at the end of each build stage, of the save and of the load after it.

``INDEX`` is changed (pass a copy, ``cp -al``: a save writes new files only): ``--passages`` passages of
``--corpus`` (ids prefixed, so they are new) are inserted into it, it is saved and loaded again, as a batch of
``index/batched.py`` does. One JSON line per point.

    PYTHONPATH=. python studies/perf/batch_memory.py INDEX --corpus C.jsonl --passages 30000
"""

from __future__ import annotations

import argparse
import contextlib
import gc
import itertools
import json
import resource
import time


def memory() -> dict:
    out = {}
    with open("/proc/self/status") as f:
        for line in f:
            key, _, value = line.partition(":")
            if key in ("VmHWM", "VmRSS", "RssAnon", "RssFile"):
                out[key] = round(int(value.split()[0]) / 1024)
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("index")
    ap.add_argument("--corpus", required=True)
    ap.add_argument("--offset", type=int, default=0)
    ap.add_argument("--passages", type=int, default=30000)
    args = ap.parse_args()
    from llama_index_graphrag_suite.documents import document_key, iter_jsonl_documents, make_document
    from llama_index_graphrag_suite.index.graph_index import GraphRAGIndex

    start = time.process_time()

    def point(name: str) -> None:
        print(json.dumps({"at": name, "cpu_s": round(time.process_time() - start, 1), **memory()}), flush=True)

    original = GraphRAGIndex._stage

    @contextlib.contextmanager
    def stage(self, name: str):
        with original(self, name):
            yield
        point(name)

    GraphRAGIndex._stage = stage
    docs = [make_document(f"m{args.offset}-{document_key(d)[0]}", d.text, d.metadata.get("title", ""))
            for d in itertools.islice(iter_jsonl_documents(args.corpus), args.offset, args.offset + args.passages)]
    point("documents read")
    index = GraphRAGIndex.load(args.index, embed_model="hash")
    point("load")
    index.insert(docs)
    index.persist(args.index)
    point("persist")
    del index
    gc.collect()
    point("dropped")
    GraphRAGIndex.load(args.index, embed_model="hash")
    point("load again")
    print(json.dumps({"peak_rss_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024)}))


if __name__ == "__main__":
    main()
