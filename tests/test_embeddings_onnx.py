"""The ONNX Runtime path of the bundled embedder gives sentence-transformers' vectors, and survives a bad cache."""

from __future__ import annotations

import numpy as np
import pytest

from llama_index_graphrag_suite.embeddings import bundled_minilm_path, embed_model_name, resolve_embed_model

pytest.importorskip("onnxruntime")
pytest.importorskip("onnx")
MODEL = bundled_minilm_path()
pytestmark = pytest.mark.skipif(MODEL is None, reason="the bundled MiniLM (extra `offline`) is not installed")

TEXTS = [
    "Teutberga (died 11 November 875) was a queen of Lotharingia by marriage to Lothair II.",
    "Orrin Theatre",
    "",
    "A much longer passage. " * 120,  # beyond 256 tokens: both paths truncate the same way
    "Ça va? Straße, naïve café — 東京",
]


@pytest.fixture(scope="module")
def cache(tmp_path_factory):
    return tmp_path_factory.mktemp("onnx-cache")


@pytest.fixture(scope="module")
def onnx_model(cache):
    from llama_index_graphrag_suite.embeddings_onnx import OnnxSentenceEmbedding, export_onnx

    # float32 documents too: these tests are about the ONNX graph (test_embeddings_bf16.py: the bfloat16 path)
    return OnnxSentenceEmbedding(MODEL, onnx_path=str(export_onnx(MODEL, cache)), bulk_precision="float32")


def test_vectors_match_sentence_transformers(onnx_model, monkeypatch):
    monkeypatch.setenv("GRAPHRAG_SUITE_EMBED_BACKEND", "torch")
    torch_model = resolve_embed_model(None)
    assert type(torch_model).__name__ == "HuggingFaceEmbedding"
    ours = np.asarray(onnx_model.get_text_embedding_batch(TEXTS))
    theirs = np.asarray(torch_model.get_text_embedding_batch(TEXTS))
    assert ours.shape == theirs.shape == (len(TEXTS), 384)
    assert np.allclose(np.linalg.norm(ours, axis=1), 1.0, atol=1e-5)
    assert float((ours * theirs).sum(axis=1).min()) > 0.9999
    query = "Who was Lothair II's queen?"
    assert float(np.dot(onnx_model.get_query_embedding(query), torch_model.get_query_embedding(query))) > 0.9999


def test_batching_by_tokens_keeps_order(onnx_model):
    # A small token budget forces many batches over texts of mixed lengths; each vector must stay with its text.
    texts = [f"item {i} " * (1 + (i * 7) % 23) for i in range(40)]
    one_by_one = np.asarray([onnx_model.get_text_embedding(t) for t in texts])
    small = onnx_model.model_copy(update={"max_batch_tokens": 64})
    small._session, small._tokenizer = onnx_model._session, onnx_model._tokenizer
    batched = np.asarray(small.get_text_embedding_batch(texts))
    assert np.allclose(one_by_one, batched, atol=1e-5)


def test_default_model_uses_onnx_and_keeps_its_portable_name(monkeypatch, cache):
    monkeypatch.setenv("GRAPHRAG_SUITE_CACHE", str(cache.parent / "default-cache"))
    monkeypatch.setenv("GRAPHRAG_SUITE_EMBED_BACKEND", "auto")
    model = resolve_embed_model(None)
    assert type(model).__name__ == "OnnxSentenceEmbedding"
    assert embed_model_name(model) == "all-MiniLM-L6-v2"  # indexes built either way load with the other


def test_damaged_cache_file_is_exported_again(cache, monkeypatch):
    from llama_index_graphrag_suite.embeddings_onnx import OnnxSentenceEmbedding, export_onnx

    monkeypatch.setenv("GRAPHRAG_SUITE_CACHE", str(cache.parent / "damaged"))
    path = export_onnx(MODEL)
    path.write_bytes(b"not an onnx model")
    model = OnnxSentenceEmbedding(MODEL, onnx_path=str(path))
    assert len(model.get_text_embedding("still works")) == 384


def test_bad_backend_name_is_refused(monkeypatch):
    monkeypatch.setenv("GRAPHRAG_SUITE_EMBED_BACKEND", "tensorflow")
    with pytest.raises(ValueError, match="auto, onnx or torch"):
        resolve_embed_model(None)
