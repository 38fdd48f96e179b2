"""Embedding in blocks (``executors.LocalExecutor.embed``) gives the same table as one batch, row for row."""

from __future__ import annotations

import numpy as np
from llama_index.core import Document

from llama_index_graphrag_suite import GraphRAGIndex, IndexConfig
from llama_index_graphrag_suite.embeddings import HashEmbedding
from llama_index_graphrag_suite.index import executors

TEXTS = ["Ada Lovelace wrote notes on the Analytical Engine designed by Charles Babbage in London.",
         "Charles Babbage was an English mathematician; the Analytical Engine was never finished.",
         "London hosted the Great Exhibition of 1851, which Babbage wrote about.",
         "Ada Lovelace was the daughter of Lord Byron, the poet."]


class CountingHash(HashEmbedding):
    """The hash embedding, counting how many texts each batch call gets."""

    def __init__(self, **kw):
        super().__init__(**kw)
        object.__setattr__(self, "calls", [])

    def get_text_embedding_batch(self, texts, show_progress=False, **kw):
        self.calls.append(len(texts))
        return super().get_text_embedding_batch(texts, show_progress=show_progress, **kw)


def _build(monkeypatch, block: int):
    monkeypatch.setattr(executors, "EMBED_BLOCK", block)
    model = CountingHash(dim=32)
    docs = [Document(text=t, id_=f"d{i}") for i, t in enumerate(TEXTS)]
    return GraphRAGIndex.from_documents(docs, embed_model=model, config=IndexConfig(entities="statistical")), model


def test_blocks_give_the_same_vectors_in_the_same_rows(monkeypatch):
    whole, whole_model = _build(monkeypatch, 10_000)
    blocked, blocked_model = _build(monkeypatch, 2)
    assert max(blocked_model.calls) <= 2 < max(whole_model.calls)  # really in blocks
    for table in ("chunk_vectors", "entity_vectors", "fact_vectors"):
        a, b = getattr(whole, table), getattr(blocked, table)
        assert list(a.ids) == list(b.ids) and len(a.ids) > 0
        np.testing.assert_array_equal(a.vectors(), b.vectors())
