"""Shared fixtures: a small hand-written corpus and the deterministic hashing embedding."""

from __future__ import annotations

from pathlib import Path

import pytest

from llama_index_graphrag_suite.documents import make_document
from llama_index_graphrag_suite.embeddings import HashEmbedding

CORPUS = [
    ("p-ada", "Ada Lorne",
     "Ada Lorne was a painter born in Marlow. Ada Lorne painted The Grey Harbour in 1901. "
     "Ada Lorne studied at Kell Academy under Tomas Brey."),
    ("p-marlow", "Marlow",
     "Marlow is a town on the Esk River. Marlow is known for its harbour and its glassworks. "
     "The Esk River reaches the sea at Marlow."),
    ("p-harbour", "The Grey Harbour",
     "The Grey Harbour is a painting by Ada Lorne. The Grey Harbour hangs in the Vant Gallery. "
     "The Grey Harbour shows fishing boats at dawn."),
    ("p-vant", "Vant Gallery",
     "The Vant Gallery is a museum in Dunmore. The Vant Gallery was founded by Piers Vant in 1880. "
     "The Vant Gallery holds works by Ada Lorne and Tomas Brey."),
    ("p-kell", "Kell Academy",
     "Kell Academy is an art school in Dunmore. Kell Academy was founded in 1850. "
     "Tomas Brey taught painting at Kell Academy for thirty years."),
    ("p-brey", "Tomas Brey",
     "Tomas Brey was a painter and teacher. Tomas Brey was born in Dunmore in 1840. "
     "Tomas Brey taught Ada Lorne at Kell Academy."),
]


@pytest.fixture
def embed():
    return HashEmbedding(dim=128)


@pytest.fixture
def documents():
    return [make_document(i, text, title) for i, title, text in CORPUS]


@pytest.fixture(scope="module")
def graph_index():
    """The corpus indexed with a low entity threshold: six passages are too few for tau=0.5 to keep any
    entity, and tests of the graph methods must run on a real graph."""
    from llama_index_graphrag_suite import GraphRAGIndex, IndexConfig

    docs = [make_document(i, text, title) for i, title, text in CORPUS]
    index = GraphRAGIndex.from_documents(docs, embed_model=HashEmbedding(dim=128), config=IndexConfig(entities="statistical", entity_threshold=0.1))
    assert index.stats()["entities"] >= 20 and index.stats()["relations"] >= 20
    return index


@pytest.fixture
def evidence_in_retrieve(monkeypatch):
    """``retrieve()`` appends the evidence node, as ``include_evidence=True`` makes it (for tests that read it)."""
    from llama_index_graphrag_suite.methods.base import GraphIndexRetriever

    monkeypatch.setattr(GraphIndexRetriever, "_assemble",
                        lambda self, chunks, evidence: chunks + ([evidence] if evidence is not None else []))


DEMO_DATA = Path(__file__).resolve().parents[1] / "examples" / "data"


def index_demo_corpus(out: Path) -> Path:
    """Index examples/data/corpus.jsonl into ``out`` through the CLI (hash embedding, statistical entities: seconds,
    no model); the CLI and serve tests each keep their own copy, since some of them write artefacts into it."""
    from llama_index_graphrag_suite.cli import main

    assert main(["index", str(DEMO_DATA / "corpus.jsonl"), "--out", str(out), "--embed", "hash",
                 "--entities", "statistical", "--quiet"]) == 0
    return out


# Passages that name nothing of the others: a question about them links no entity of the rest of a corpus.
# Three linked passages (a painter, a gallery, its founder) the guard's tests ask two-hop questions of.
GALLERY_TEXTS = {
    "ada": "Ada Lorne was a painter born in Grey Harbour. She studied at the Vant Gallery school.",
    "vant": "The Vant Gallery was founded by Tomas Reed in Grey Harbour in 1890.",
    "reed": "Tomas Reed was a merchant who collected paintings by Ada Lorne.",
}
UNRELATED_TEXTS = {
    "tea": "Green tea is brewed at low temperature; black tea needs boiling water.",
    "bread": "Sourdough bread rises slowly because wild yeast ferments the dough.",
    "rain": "Rain gauges measure how much water falls during a storm.",
}


def index_of_texts(texts: dict[str, str], config=None, dim: int = 64, spread: int | None = None):
    """A default (NER) index of ``{doc id: text}``, each document titled by its capitalised id, hash embedding."""
    from llama_index.core import Document

    from llama_index_graphrag_suite import GraphRAGIndex, IndexConfig

    docs = [Document(text=t, doc_id=k, metadata={"title": k.title()}) for k, t in texts.items()]
    embed = HashEmbedding(dim=dim) if spread is None else HashEmbedding(dim=dim, spread=spread)
    return GraphRAGIndex.from_documents(docs, embed_model=embed, config=config or IndexConfig())


def saved_tables(version: Path, snapshot=None) -> dict:
    """A saved version's tables as JSON text in their saved order, and its vectors as bytes (``tables.version_rows``);
    with ``snapshot`` (the index's), its arrays too (the snapshot is rebuilt from the tables on load)."""
    import json

    from llama_index_graphrag_suite.index.audit import version_rows

    rows = version_rows(version)
    out = {name: json.dumps(rows[name]) for name in ("chunks", "entities", "facts", "synonyms", "vector_ids")}
    out["vectors"] = {name: matrix.tobytes() for name, matrix in rows["vectors"].items()}
    if snapshot is not None:
        out["graph"] = {k: v.tolist() for k, v in snapshot.to_arrays().items()}
    return out


def embedding_down(index):
    """A context in which the index's embed model fails as a server that is down would (ConnectionError)."""
    import contextlib

    @contextlib.contextmanager
    def down():
        def fail(*args, **kwargs):
            raise ConnectionError("embedding server down")

        embed = index.embed_model
        original = embed.get_text_embedding_batch
        object.__setattr__(embed, "get_text_embedding_batch", fail)
        try:
            yield
        finally:
            object.__setattr__(embed, "get_text_embedding_batch", original)

    return down()
