"""Is the index a build makes the same with this checkout as with another? Digests of what the index holds.

Builds the first ``--passages`` passages of a synthetic corpus (hash embedding, statistical entities, as the scale
run) in batches of ``--batch`` (``build_in_batches``, which compacts at its end) and, with ``--one-go``, in one
insert, with the code on ``PYTHONPATH``, and prints one JSON line per build: a SHA-256 per table (chunk, entity and
fact records in table order, synonym pairs, BM25's chunk order, the insert records) and per vector table (ids and float32 rows in row
order). Run it from two checkouts and compare the lines: layout (segments, files) is not part of the digests.

    PYTHONPATH=. python studies/perf/build_identity.py --corpus .../synth-10000/corpus.jsonl --passages 3000 \\
        --batch 250 --one-go --folder /tmp/ident
"""

from __future__ import annotations

import argparse
import hashlib
import itertools
import json
import shutil
from pathlib import Path


def digest(index) -> dict[str, str]:
    """SHA-256 of each table's rows and of each vector table's ids and rows, in their order."""
    out = {}
    for name in ("chunks", "entities", "facts"):
        h = hashlib.sha256()
        for rec in getattr(index, name).values():
            h.update(json.dumps(rec.to_json(), sort_keys=True, ensure_ascii=False).encode())
        out[name] = h.hexdigest()[:16]
    state = index.state
    out["synonyms"] = hashlib.sha256(json.dumps(sorted((a, b, round(s, 6)) for (a, b), s in state.synonyms.items()))
                                     .encode()).hexdigest()[:16]
    out["chunk_order"] = hashlib.sha256("\n".join(state.chunk_order).encode()).hexdigest()[:16]
    for name in ("chunk_vectors", "entity_vectors", "fact_vectors"):
        table = getattr(state, name)
        h = hashlib.sha256("\n".join(table.ids).encode())
        h.update(table.vectors().tobytes())
        out[name] = h.hexdigest()[:16]
    out["provenance"] = hashlib.sha256(json.dumps(list(state.provenance), sort_keys=True).encode()).hexdigest()[:16]
    out["counts"] = json.dumps(index.stats(), sort_keys=True)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--corpus", required=True)
    parser.add_argument("--passages", type=int, default=3000)
    parser.add_argument("--batch", type=int, default=250)
    parser.add_argument("--one-go", action="store_true", help="also build the same passages in one insert")
    parser.add_argument("--folder", required=True, help="where the indexes are built (replaced)")
    parser.add_argument("--small-limits", action="store_true",
                        help="tables keep lists from 500 rows and whole writes go 100 rows at a time (where the code "
                             "has that limit): the paths a million-passage build takes, on a small corpus")
    args = parser.parse_args()
    if args.small_limits:
        from llama_index_graphrag_suite.index import tables, vectors

        vectors.LISTED_MIN_ROWS = 500
        if hasattr(tables, "WHOLE_SLICE_ROWS"):
            tables.WHOLE_SLICE_ROWS = 100

    from llama_index_graphrag_suite import GraphRAGIndex, IndexConfig
    from llama_index_graphrag_suite.documents import iter_jsonl_documents
    from llama_index_graphrag_suite.index.batched import build_in_batches

    folder = Path(args.folder)
    shutil.rmtree(folder, ignore_errors=True)
    settings = {"embed_model": "hash", "config": IndexConfig(entities="statistical")}
    docs = list(itertools.islice(iter_jsonl_documents(args.corpus), args.passages))
    index = build_in_batches(iter(docs), folder / "batched", args.batch, **settings)
    print(json.dumps({"build": f"batches of {args.batch}", **digest(index)}), flush=True)
    if args.one_go:
        index = GraphRAGIndex.from_documents(docs, **settings)
        index.persist(folder / "one-go")
        index = GraphRAGIndex.load(folder / "one-go", embed_model="hash")
        print(json.dumps({"build": "one go", **digest(index)}), flush=True)


if __name__ == "__main__":
    main()
