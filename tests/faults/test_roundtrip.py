"""Insert then delete of the same documents restores the index exactly.

An insert links the entities it extracts first to older chunks that mention them (and, with the
statistical extractor, recomputes those chunks' co-occurrence relations); before these records (``index/journal.py``) the
delete left all that behind and changed about half the query results. Compared here: every method's
results and scores, and every persisted table (as sets of rows; faiss and graph arrays byte for byte).
"""

from __future__ import annotations

import json
import logging
from pathlib import Path

import numpy as np
import pytest

from llama_index_graphrag_suite import GraphRAGIndex, IndexConfig
from llama_index_graphrag_suite.documents import make_document
from llama_index_graphrag_suite.embeddings import HashEmbedding
from llama_index_graphrag_suite.registry import available_methods, get_retriever

# The NER extractor reads "Salt Wind" as the name in Mira's passage; the song's article (inserted later)
# makes "Salt Wind Rising" a title, which the insert links to her passage by its capitalised mention.
SAILORS = [
    ("mira", "Mira Dunn", ("Mira Dunn was a sailor from Orrin. Every evening she drank at the Glass Lantern with her "
                           "crew. She kept the Black Ledger in her cabin and sang Salt Wind Rising at dawn. Her ship, "
                           "the Grey Gull, sank in 1902.")),
    ("orrin", "Orrin", ("Orrin is a port on the Velm estuary. Sailors and traders meet at the Glass Lantern near the "
                        "quay. Mira Dunn sailed from Orrin for twenty years.")),
]
SAILORS_NEW = [
    ("ledger", "Black Ledger", ("The Black Ledger is a logbook kept by the captains of Orrin since 1850. It lists "
                                "every ship that left the quay.")),
    ("song", "Salt Wind Rising", ("Salt Wind Rising is a sea shanty from the Velm estuary. Sailors sing it when "
                                  "they raise the anchor.")),
]
QUESTIONS = ["Where did Mira Dunn drink?", "Which song did Mira Dunn sing at dawn?", "Who taught Ada Lorne?",
             "Where is the Vant Gallery?"]


def _results(index: GraphRAGIndex) -> dict:
    return {(m, q): [(n.node.node_id, n.score or 0.0) for n in get_retriever(index, m, top_k=3).retrieve(q)]
            for m in sorted(available_methods()) for q in QUESTIONS}


def _same(got: dict, expected: dict) -> bool:
    """Same ids in the same order and the same scores up to float32 rounding (a loaded index multiplies its
    memory-mapped vectors in another order than the built one, which can move the last bit)."""
    return got.keys() == expected.keys() and all(
        [i for i, _ in got[k]] == [i for i, _ in expected[k]]
        and all(abs(a - b) <= 1e-5 for (_, a), (_, b) in zip(got[k], expected[k])) for k in got)


def _tables(folder: Path, index: GraphRAGIndex) -> dict:
    """A version folder's tables, up to row order (the manifest's build timings are left out), and the
    index's store mirror (the simple store is derived: not in the folder, filled on first use)."""
    from llama_index_graphrag_suite.index.audit import version_rows

    rows = version_rows(folder)
    out = {name: sorted(json.dumps(row, sort_keys=True) for row in rows[name])
           for name in ("chunks", "entities", "facts", "synonyms")}
    out["vector_ids"] = rows["vector_ids"]
    out["vectors"] = {name: matrix.tobytes() for name, matrix in rows["vectors"].items()}
    out["graph"] = {k: v.tolist() for k, v in index.snapshot.to_arrays().items()}
    assert not (folder / "property_graph_store.json").exists()
    store = json.loads(index.property_graph_store.graph.model_dump_json())
    out["store"] = (store["nodes"], store["relations"], sorted(map(tuple, store["triplets"])))
    out["counts"] = json.loads((folder / "manifest.json").read_text())["counts"]
    out["provenance"] = (folder / "provenance.json").exists()
    return out


CASES = {
    # the default build (NER), and AGRAG's statistical graph whose co-occurrence relations are recomputed
    "ner": (IndexConfig(), SAILORS, SAILORS_NEW),
    "statistical": (IndexConfig(entities="statistical", entity_threshold=0.1), None, None),
}


@pytest.mark.parametrize("case", list(CASES))
def test_insert_then_delete_restores_results_and_tables(case, documents, tmp_path, caplog):
    caplog.set_level(logging.ERROR)  # tiny corpora warn; not the point here
    config, base, new = CASES[case]
    if base is None:  # two passages first; the other four mention their names
        docs = {d.id_: d for d in documents}
        base_docs, new_docs = [docs["p-vant"], docs["p-kell"]], [docs[i] for i in ("p-ada", "p-brey", "p-harbour")]
    else:
        base_docs = [make_document(i, text, title) for i, title, text in base]
        new_docs = [make_document(i, text, title) for i, title, text in new]
    index = GraphRAGIndex.from_documents(base_docs, embed_model=HashEmbedding(dim=128), config=config)
    before_results, before_tables = _results(index), _tables(index.persist(tmp_path / "idx"), index)

    index.insert(new_docs[:1])
    index.insert(new_docs[1:])  # two inserts; the first one's documents are deleted first
    assert index.state.provenance  # the inserts did change older chunks (else this test proves nothing)
    changed = _results(index)
    saved_between = index.persist(tmp_path / "idx")  # the records survive a save and a load
    index = GraphRAGIndex.load(tmp_path / "idx", embed_model=HashEmbedding(dim=128))
    assert _same(_results(index), changed) and _tables(saved_between, index)["provenance"]  # fills the loaded store
    assert index.property_graph_store.materialised  # so the deletes below keep it in step
    for doc in new_docs:
        index.delete(doc.id_)

    assert _same(_results(index), before_results)
    assert _tables(index.persist(tmp_path / "idx"), index) == before_tables
    assert index.state.provenance == []
