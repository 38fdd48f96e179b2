"""Indexing on Ray (index/distributed.py) builds the index a single process builds.

One local Ray instance (2 CPUs, no dashboard) serves the module. The shards are made small (4 texts) so the 40
passages of examples/data are split over several tasks and the driver really merges shards.
"""

from __future__ import annotations

import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from llama_index.core import Document
from llama_index.core.base.embeddings.base import BaseEmbedding

from llama_index_graphrag_suite import GraphRAGIndex
from llama_index_graphrag_suite.config import IndexConfig
from llama_index_graphrag_suite.documents import load_documents
from llama_index_graphrag_suite.embeddings import HashEmbedding, bundled_minilm_path
from llama_index_graphrag_suite.registry import get_retriever

ray = pytest.importorskip("ray")

from llama_index_graphrag_suite.index import distributed  # noqa: E402
from llama_index_graphrag_suite.index.distributed import embedder_spec, ray_build  # noqa: E402

CORPUS = Path(__file__).resolve().parents[1] / "examples" / "data" / "corpus.jsonl"
QUERIES = ["Which river flows through the capital of Kestria?", "Who founded the observatory?",
           "What is the population of the republic?"]
METHODS = ["dense", "bm25", "hybrid", "hipporag", "agrag", "pathrag"]


@pytest.fixture(scope="module")
def ray_session():
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    yield
    ray.shutdown()


@pytest.fixture(scope="module")
def docs():
    return load_documents(CORPUS)


def _builds(docs, entities: str, embed: str, staging=None):
    config = IndexConfig(entities=entities, chunk_size=128, chunk_overlap=16)  # more chunks, more shards
    local = GraphRAGIndex.from_documents(docs, embed_model=embed, config=config)
    sharded = GraphRAGIndex(embed_model=embed, config=config)
    with ray_build(sharded, "local", staging=staging) as runner:  # Ray is already up (the fixture): used, left running
        runner.min_shard = 4
        sharded.insert(docs)
    assert sharded.executor.name == "local"  # the Ray executor was for the block only
    ran = {fn.__name__ for fn in runner._remote}  # the work really went to Ray tasks
    # "local": the workers write their vector shards into a staging folder, removed afterwards
    assert {"_chunk_shard", "_count_shard", "_embed_shard" if staging is False else "_embed_shard_to_file"} <= ran
    if staging is not False:
        assert runner.staging is not None and not Path(runner.staging).exists()
    assert {"statistical": {"_score_shard", "_link_shard"}, "ner": {"_parse_shard"},
            "both": {"_score_shard", "_link_shard", "_parse_shard"}}[entities] <= ran
    return local, sharded


def _assert_same(local: GraphRAGIndex, sharded: GraphRAGIndex) -> None:
    assert list(sharded.chunks) == list(local.chunks)
    for cid, rec in local.chunks.items():
        other = sharded.chunks[cid]
        assert (other.text, other.doc_id, other.title, other.entities) == (rec.text, rec.doc_id, rec.title, rec.entities)
    assert list(sharded.entities) == list(local.entities)
    assert sharded.entities == local.entities  # surfaces, types, supporting chunks
    assert sharded.facts == local.facts
    assert sharded.synonyms == local.synonyms
    assert sharded.entity_statistics().n_chunks == local.entity_statistics().n_chunks
    assert dict(sharded.entity_statistics().doc_freq) == dict(local.entity_statistics().doc_freq)
    for table in ("chunk_vectors", "entity_vectors", "fact_vectors"):
        a, b = getattr(local, table), getattr(sharded, table)
        assert b.ids == a.ids, table
        np.testing.assert_allclose(b.vectors(), a.vectors(), atol=1e-5, err_msg=table)
    snap_a, snap_b = local.snapshot, sharded.snapshot
    assert snap_b.node_ids == snap_a.node_ids
    for name in ("node_kind", "edge_src", "edge_dst", "edge_kind", "edge_fact", "edge_weight"):
        np.testing.assert_array_equal(getattr(snap_b, name), getattr(snap_a, name), err_msg=name)
    for method in METHODS:
        for query in QUERIES:
            got = [(n.node.node_id, round(n.score, 5)) for n in get_retriever(sharded, method, top_k=5).retrieve(query)]
            want = [(n.node.node_id, round(n.score, 5)) for n in get_retriever(local, method, top_k=5).retrieve(query)]
            assert got == want, (method, query)


def test_statistical_build_on_ray_equals_local(ray_session, docs):
    local, sharded = _builds(docs, "statistical", "hash")
    assert len(local.chunks) > 8 and local.entities and local.facts  # a real corpus, several shards
    _assert_same(local, sharded)


def test_vectors_through_the_object_store_equal_local_too(ray_session, docs):
    local, sharded = _builds(docs, "statistical", "hash", staging=False)
    _assert_same(local, sharded)


def test_staged_vector_shards_are_joined_in_order_and_removed(tmp_path, ray_session):
    from llama_index_graphrag_suite.index.distributed_embed import _embed_shard_to_file, join_staged

    spec = embedder_spec(HashEmbedding(dim=16), ray)
    texts = [f"text number {i}" for i in range(10)]
    shards = [_embed_shard_to_file(texts[:4], spec, str(tmp_path)), _embed_shard_to_file(texts[4:], spec, str(tmp_path))]
    joined = join_staged(tmp_path, shards)
    want = np.asarray(HashEmbedding(dim=16).get_text_embedding_batch(texts), np.float32)
    assert isinstance(joined, np.memmap) and not joined.flags.writeable
    np.testing.assert_array_equal(np.asarray(joined), want)
    assert not list(tmp_path.iterdir())  # shards and the joined file are gone (the mapping keeps the data)
    bad = _embed_shard_to_file(texts[:3], spec, str(tmp_path))
    with pytest.raises(ValueError, match="expected \\(2, dim\\) float32"):
        join_staged(tmp_path, [(bad[0], 2)])  # a task that reported other rows than it wrote


def test_ner_build_on_ray_equals_local(ray_session, docs):
    pytest.importorskip("spacy")
    embed = "all-MiniLM-L6-v2" if bundled_minilm_path() else "hash"  # the bundled model loads on the workers
    local, sharded = _builds(docs, "ner", embed)
    assert local.entities and local.facts
    _assert_same(local, sharded)


def test_both_extractors_on_ray_equal_local(ray_session, docs):
    pytest.importorskip("spacy")
    _assert_same(*_builds(docs, "both", "hash"))


@pytest.mark.parametrize("entities,terms", [("statistical", False), ("ner", False), ("ner", True)])
def test_insert_into_an_index_on_ray_equals_local(ray_session, docs, entities, terms):
    """An insert is scored against the whole corpus and links old chunks to new names (and terms), on Ray as here."""
    if entities == "ner":
        pytest.importorskip("spacy")
    config = IndexConfig(entities=entities, chunk_size=128, chunk_overlap=16, terms=terms)
    local = GraphRAGIndex.from_documents(docs[:20], embed_model="hash", config=config)
    local.insert(docs[20:])
    sharded = GraphRAGIndex.from_documents(docs[:20], embed_model="hash", config=config)
    with ray_build(sharded, "local") as runner:
        runner.min_shard = 4
        sharded.insert(docs[20:])
    _assert_same(local, sharded)


def test_from_documents_ray_address(ray_session, docs):
    config = IndexConfig(entities="statistical")
    local = GraphRAGIndex.from_documents(docs[:10], embed_model="hash", config=config)
    sharded = GraphRAGIndex.from_documents(docs[:10], embed_model="hash", config=config, ray_address="local")
    assert ray.is_initialized()  # the caller's Ray stays up
    assert sharded.entities == local.entities and sharded.facts == local.facts
    with pytest.raises(ValueError, match="already in the index"):
        with ray_build(sharded, "local"):
            sharded.insert(docs[:1])


def test_shards_are_contiguous_and_cover_everything(ray_session):
    runner = distributed.RayRunner(ray)
    runner.min_shard = 3
    items = list(range(20))
    shards = runner.shards(items, weights=[1 + i for i in items])
    assert [x for s in shards for x in s] == items and len(shards) == 2


class _Client:
    def __init__(self) -> None:
        self.lock = threading.Lock()  # cannot be pickled


class _Unsendable(BaseEmbedding):
    """A user's embed model whose client Ray cannot serialise (LlamaIndex drops it on the way)."""

    client: Any = None

    def _vec(self) -> list[float]:
        return [1.0, 0.0] if self.client is not None else [0.0, 1.0]

    def _get_query_embedding(self, query):
        return self._vec()

    async def _aget_query_embedding(self, query):
        return self._vec()

    def _get_text_embedding(self, text):
        return self._vec()


def test_unserialisable_embed_model_is_refused_clearly():
    with pytest.raises(TypeError, match="cannot be sent to Ray workers"):
        embedder_spec(_Unsendable(client=_Client()), ray)
    assert embedder_spec(HashEmbedding(dim=32), ray) == {"kind": "hash", "dim": 32, "spread": 8}


def test_missing_ray_names_the_extra(monkeypatch):
    monkeypatch.setitem(sys.modules, "ray", None)  # "import ray" now raises ImportError
    with pytest.raises(ImportError, match=r"\[ray\]"):
        distributed.import_ray()


def test_importing_the_package_does_not_import_ray():
    code = ("import sys, llama_index_graphrag_suite, llama_index_graphrag_suite.cli, "
            "llama_index_graphrag_suite.index.graph_index; print('ray' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


def test_cli_ray_without_the_extra_is_one_line(monkeypatch, tmp_path, capsys):
    import importlib.util

    from llama_index_graphrag_suite.cli import main

    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "ray" else real(name, *a))
    code = main(["index", str(CORPUS), "--out", str(tmp_path / "idx"), "--ray", "local", "--embed", "hash", "--quiet"])
    err = capsys.readouterr().err.strip()
    assert code == 2 and "'ray' extra" in err and len(err.splitlines()) == 1


def test_an_insert_on_ray_links_a_term_an_earlier_insert_left_unlinked_as_here(ray_session):
    pytest.importorskip("spacy")
    term = [Document(text=f"The viral load of patient {i} fell after a week of rest at home.", doc_id=f"d{i}",
                     metadata={"title": f"case {i}"}) for i in range(25)]
    filler = [Document(text=f"Visit {i} covered the diet plan and the walking routine of the week.", doc_id=f"f{i}",
                       metadata={"title": f"visit {i}"}) for i in range(30)]
    config = IndexConfig(terms=True, term_hub_share=0.5)  # 25 of 25 chunks: a hub; 25 of 55: a term
    indexes = []
    for on_ray in (False, True):
        index = GraphRAGIndex.from_documents(term[:10], embed_model="hash", config=config)
        index.insert(term[10:])
        if on_ray:
            with ray_build(index, "local") as runner:
                runner.min_shard = 4
                index.insert(filler)
        else:
            index.insert(filler)
        assert len(index.entities["viral load"].chunks) == 25
        indexes.append(index)
    _assert_same(*indexes)


def test_a_build_in_batches_on_ray_equals_the_same_batches_here(ray_session, docs, tmp_path, monkeypatch, capsys):
    """``build_in_batches(..., ray_address=...)`` and ``index --batch-size N --ray``: each batch's work on Ray, the
    saved index the one the same batches make in this process."""
    from llama_index_graphrag_suite.cli import main
    from llama_index_graphrag_suite.index.batched import build_in_batches

    monkeypatch.setattr(distributed, "_MIN_TEXTS_PER_SHARD", 4)  # each batch in several shards
    shards: list[int] = []
    real_init = distributed.RayRunner.__init__

    def counting_init(self, *args, **kwargs):
        real_init(self, *args, **kwargs)
        shards.append(id(self))
    monkeypatch.setattr(distributed.RayRunner, "__init__", counting_init)
    config = IndexConfig(entities="statistical", chunk_size=128, chunk_overlap=16)
    here = build_in_batches(iter(docs), tmp_path / "here", batch_size=15, embed_model="hash", config=config)
    assert not shards
    on_ray = build_in_batches(iter(docs), tmp_path / "ray", batch_size=15, embed_model="hash", config=config,
                              ray_address="local")
    assert len(shards) == 3  # one Ray executor per batch (40 passages in batches of 15), Ray started once: the fixture's
    assert ray.is_initialized()
    _assert_same(here, on_ray)

    corpus = tmp_path / "corpus.jsonl"
    corpus.write_text(CORPUS.read_text())
    assert main(["index", str(corpus), "--out", str(tmp_path / "cli"), "--batch-size", "15", "--ray", "local",
                 "--embed", "hash", "--entities", "statistical", "--chunk-size", "128", "--chunk-overlap", "16",
                 "--quiet"]) == 0
    assert len(shards) == 6
    from_cli = GraphRAGIndex.load(tmp_path / "cli", embed_model="hash")
    assert list(from_cli.chunks) == list(here.chunks) and from_cli.facts == here.facts
