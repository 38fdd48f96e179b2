"""The hash embedding: unrelated words stay apart, shared words stay close, and indexes saved with the
one-dimension-per-word scheme load with it."""

from __future__ import annotations

import json
import random
import string

import numpy as np
import pytest

from llama_index_graphrag_suite import GraphRAGIndex, IndexConfig
from llama_index_graphrag_suite.documents import make_document
from llama_index_graphrag_suite.embeddings import (
    EmbedModelError,
    HashEmbedding,
    embed_model_name,
    manifest_embed_spec,
    resolve_embed_model,
)
from llama_index_graphrag_suite.index.storage import CURRENT, MANIFEST
from llama_index_graphrag_suite.registry import get_retriever


def _vectors(model: HashEmbedding, texts: list[str]) -> np.ndarray:
    return np.asarray(model.get_text_embedding_batch(texts), np.float32)


def _close_pairs(vectors: np.ndarray, threshold: float) -> int:
    sims = vectors @ vectors.T
    return int((np.triu(sims, 1) > threshold).sum())


def test_unrelated_one_word_names_are_not_synonyms():
    rng = random.Random(0)
    words = sorted({"".join(rng.choice(string.ascii_lowercase) for _ in range(7)) for _ in range(2000)})
    # one dimension per word: a pair lands on the same dimension with the same sign once in 2·dim
    collisions = _close_pairs(_vectors(HashEmbedding(spread=1), words), 0.8)
    assert collisions > len(words) ** 2 / 2 / 512 / 2
    assert _close_pairs(_vectors(HashEmbedding(), words), 0.5) <= 5
    assert _close_pairs(_vectors(HashEmbedding(), words), 0.8) == 0


def test_texts_sharing_words_stay_close():
    a, b, c = _vectors(HashEmbedding(), ["compass of hinnol", "compass of malbir", "river delta"])
    assert a @ b > 0.5 > abs(a @ c)
    assert _vectors(HashEmbedding(), ["Ada Lorne"])[0] @ _vectors(HashEmbedding(), ["ada lorne"])[0] == pytest.approx(1.0)


def test_model_names_round_trip():
    model = resolve_embed_model("hash")
    assert (model.dim, model.spread) == (256, 8) and embed_model_name(model) == "hash:256:8"
    assert (resolve_embed_model("hash:64").dim, resolve_embed_model("hash:64").spread) == (64, 8)
    assert resolve_embed_model("hash:64:1").spread == 1
    assert manifest_embed_spec("hash:64") == "hash:64:1"  # saved before the spread: one dimension per word
    assert manifest_embed_spec("hash:64:8") == "hash:64:8" and manifest_embed_spec("all-MiniLM-L6-v2") == "all-MiniLM-L6-v2"
    for bad in ("hash:64:0", "hash:64:17"):
        with pytest.raises(EmbedModelError, match="spreads a word over 1 to 16"):
            resolve_embed_model(bad)
    for bad in ("hash:64:x", "hash:1:2:3", "hash:"):
        with pytest.raises(EmbedModelError, match="hash:DIM takes a whole number"):
            resolve_embed_model(bad)


def test_an_index_saved_before_the_spread_loads_with_one_dimension_per_word(tmp_path):
    docs = [make_document(f"p{i}", text, f"t{i}") for i, text in enumerate([
        "Ada Lorne painted the harbour at Marlow.", "The Vant Gallery in Marlow shows Ada Lorne.",
        "Tomas Brey taught painting at Kell Academy."])]
    built = GraphRAGIndex.from_documents(docs, embed_model=HashEmbedding(dim=64, spread=1),
                                         config=IndexConfig(entities="statistical", entity_threshold=0.1))
    question = "Who painted the harbour?"
    before = [(n.node.node_id, round(n.score, 5)) for n in get_retriever(built, "dense", top_k=3).retrieve(question)]
    built.persist(tmp_path / "idx")
    manifest = tmp_path / "idx" / json.loads((tmp_path / "idx" / CURRENT).read_text())["version"] / MANIFEST
    data = json.loads(manifest.read_text())
    assert data["embed_model"] == "hash:64:1"
    data["embed_model"] = "hash:64"  # as an index saved before the spread existed names its model
    manifest.write_text(json.dumps(data))
    loaded = GraphRAGIndex.load(tmp_path / "idx")  # the model from the manifest; its vector rows are checked
    assert (loaded.embed_model.dim, loaded.embed_model.spread) == (64, 1)
    assert [(n.node.node_id, round(n.score, 5)) for n in get_retriever(loaded, "dense", top_k=3).retrieve(question)] == before
