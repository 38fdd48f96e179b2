"""Document batches in bfloat16: close to the float32 vectors, the same bits whatever a text is embedded beside, and
chosen only where the CPU computes bfloat16 natively."""

from __future__ import annotations

import numpy as np
import pytest

from llama_index_graphrag_suite.embeddings import bundled_minilm_path
from llama_index_graphrag_suite.embeddings_bf16 import Bf16Encoder, batch_width, resolve_precision

MODEL = bundled_minilm_path()
needs_model = pytest.mark.skipif(MODEL is None, reason="the bundled MiniLM (extra `offline`) is not installed")

TEXTS = [
    "Teutberga (died 11 November 875) was a queen of Lotharingia by marriage to Lothair II.",
    "Orrin Theatre",
    "",
    "A much longer passage. " * 120,  # beyond 256 tokens: truncated like the float32 path
    "Ça va? Straße, naïve café — 東京",
] + [f"item {i} " * (1 + (i * 7) % 23) for i in range(40)]


def test_batch_width_pads_under_an_eighth():
    assert [batch_width(n) for n in (0, 1, 7, 15)] == [1, 1, 7, 15]
    for n in range(1, 300):
        assert n <= batch_width(n) < n + max(1, n / 8)
    assert len({batch_width(n) for n in range(1, 257)}) < 60  # few widths: few part-filled batches


def test_a_texts_batch_shape_depends_only_on_its_length():
    encoder = Bf16Encoder.__new__(Bf16Encoder)  # batches() reads only the token budget
    encoder.max_batch_tokens = 256
    alone = {w for w, batch in encoder.batches([5, 40, 40, 200])}
    crowd = encoder.batches([40] * 9 + [5] * 100 + [200] * 3)
    assert alone == {w for w, _ in crowd} == {5, 40, 208}
    for width, batch in crowd:
        assert len(batch) <= max(1, 256 // width)


def test_precision_setting_and_environment(monkeypatch):
    import llama_index_graphrag_suite.embeddings_bf16 as bf16

    native = bf16.bf16_native
    monkeypatch.delenv("GRAPHRAG_SUITE_EMBED_PRECISION", raising=False)
    monkeypatch.setattr(bf16, "bf16_native", lambda: False)
    assert resolve_precision() == resolve_precision("auto") == "float32"
    monkeypatch.setattr(bf16, "bf16_native", lambda: True)
    assert resolve_precision("auto") == "bfloat16"
    assert resolve_precision("float32") == "float32"  # an explicit setting wins over the environment
    monkeypatch.setenv("GRAPHRAG_SUITE_EMBED_PRECISION", "float32")
    assert resolve_precision() == "float32"
    assert resolve_precision("bfloat16") == "bfloat16"
    monkeypatch.setenv("GRAPHRAG_SUITE_EMBED_PRECISION", "fp8")
    with pytest.raises(ValueError, match="auto, float32, bfloat16"):
        resolve_precision()
    monkeypatch.setattr(bf16.importlib.util, "find_spec", lambda name: None)
    assert native() is False
    with pytest.raises(ImportError, match="PyTorch"):
        resolve_precision("bfloat16")


@pytest.fixture(scope="module")
def models(tmp_path_factory):
    pytest.importorskip("onnxruntime")
    pytest.importorskip("torch")
    from llama_index_graphrag_suite.embeddings_onnx import OnnxSentenceEmbedding, export_onnx

    path = str(export_onnx(MODEL, tmp_path_factory.mktemp("onnx-cache")))
    fp32 = OnnxSentenceEmbedding(MODEL, onnx_path=path, bulk_precision="float32")
    bf16 = OnnxSentenceEmbedding(MODEL, onnx_path=path, bulk_precision="bfloat16")
    bf16.encode_documents(["load the encoder"])
    bf16._bulk.max_batch_tokens = 256  # several batches of a width among TEXTS
    return fp32, bf16


@needs_model
def test_bfloat16_documents_are_close_to_float32_and_queries_stay_float32(models):
    fp32, bf16 = models
    ours = np.asarray(bf16.get_text_embedding_batch(TEXTS))
    exact = np.asarray(fp32.get_text_embedding_batch(TEXTS))
    assert type(bf16._bulk).__name__ == "Bf16Encoder" and fp32._bulk is False
    assert np.allclose(np.linalg.norm(ours, axis=1), 1.0, atol=1e-5)
    assert float((ours * exact).sum(axis=1).min()) > 0.999
    assert not np.array_equal(ours, exact)  # it did run in bfloat16
    query = "Who was Lothair II's queen?"
    assert bf16.get_query_embedding(query) == fp32.get_query_embedding(query)


@needs_model
def test_a_text_gets_the_same_bits_whatever_it_is_embedded_beside(models):
    import torch

    _, bf16 = models
    threads = torch.get_num_threads()
    together = bf16.encode_documents(TEXTS)
    reversed_ = bf16.encode_documents(TEXTS[::-1])[::-1]
    alone = np.stack([bf16.encode_documents([t])[0] for t in TEXTS[:6]])
    bf16._bulk.workers, before = 1, bf16._bulk.workers
    try:
        one_worker = bf16.encode_documents(TEXTS)
    finally:
        bf16._bulk.workers = before
    np.testing.assert_array_equal(together, reversed_)
    np.testing.assert_array_equal(together[:6], alone)
    np.testing.assert_array_equal(np.asarray(bf16.get_text_embedding(TEXTS[0]), np.float32), together[0])
    np.testing.assert_array_equal(together, one_worker)
    assert torch.get_num_threads() == threads  # the encoder gives PyTorch its thread count back


def test_embed_few_uses_the_models_batch_for_other_models():
    from llama_index_graphrag_suite.embeddings import HashEmbedding, embed_few

    model = HashEmbedding(dim=16)
    got = embed_few(model, ["alpha beta", "gamma"])
    assert got.dtype == np.float32
    np.testing.assert_array_equal(got, np.asarray(model.get_text_embedding_batch(["alpha beta", "gamma"]), np.float32))


@needs_model
def test_a_loaded_index_answers_without_the_bfloat16_encoder(models, tmp_path):
    """Loading checks vectors and PathRAG embeds its key phrases: a few texts, on ONNX Runtime in float32, so a query
    process never loads PyTorch's encoder (seconds) for them."""
    from llama_index.core import Document

    from llama_index_graphrag_suite import IndexConfig
    from llama_index_graphrag_suite.index.graph_index import GraphRAGIndex
    from llama_index_graphrag_suite.registry import get_retriever

    fp32, bf16 = models
    docs = [Document(text=f"Ada Lovelace wrote notes on the Analytical Engine in {1840 + i}. Charles Babbage "
                          f"designed the engine in London. Item {i}.", doc_id=f"d{i}") for i in range(6)]
    GraphRAGIndex.from_documents(docs, embed_model=bf16, config=IndexConfig(entities="statistical")).persist(tmp_path)
    reader = fp32.model_copy(update={"bulk_precision": "bfloat16"})
    reader._session, reader._tokenizer, reader._bulk = fp32._session, fp32._tokenizer, None
    index = GraphRAGIndex.load(tmp_path, embed_model=reader)
    pathrag = get_retriever(index, "pathrag:paper")  # the method itself, not the guard around it
    assert pathrag.retrieve("Who designed the Analytical Engine?")
    phrases = pathrag._phrase_vectors(["Analytical Engine", "London"])  # an LLM's key phrases take this path
    np.testing.assert_allclose(phrases, fp32.encode_float32(["Analytical Engine", "London"]), atol=1e-6)
    assert reader._bulk is None
