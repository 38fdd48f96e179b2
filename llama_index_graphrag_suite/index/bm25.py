"""BM25 over chunks (bm25s: sparse matrices, fast) with the project's word tokeniser."""

from __future__ import annotations

import bm25s
import numpy as np

from ..text import STOP_WORDS, normalize_entity, words


def bm25_tokens(text: str) -> list[str]:
    """Lower-cased word tokens without stop words (no stemming: names must match as written)."""
    out = []
    for w in words(text):
        key = normalize_entity(w)
        for part in key.split():
            if part not in STOP_WORDS:
                out.append(part)
    return out


class BM25Table:
    """BM25 scores of a query against every chunk, in chunk order.

    Rebuilt from the chunk texts whenever the chunk set changes (document frequencies change with
    every insert or delete, so an honest BM25 recomputes them; it takes well under a second for
    10^4 chunks). Not persisted: rebuilt on load from the stored chunk texts, so it can never
    disagree with them.
    """

    def __init__(self, texts: list[str], k1: float = 1.5, b: float = 0.75):
        self.k1, self.b = k1, b
        self.size = len(texts)
        self._model = None
        tokenized = [bm25_tokens(t) for t in texts]
        vocab: dict[str, int] = {}
        ids = [[vocab.setdefault(tok, len(vocab)) for tok in doc] for doc in tokenized]
        if vocab and self.size:
            self._vocab = vocab
            self._model = bm25s.BM25(k1=k1, b=b)
            self._model.index(bm25s.tokenization.Tokenized(ids=ids, vocab=vocab), show_progress=False)

    def scores(self, query: str) -> np.ndarray:
        if self._model is None:
            return np.zeros(self.size, np.float32)
        q = [self._vocab[t] for t in bm25_tokens(query) if t in self._vocab]
        if not q:
            return np.zeros(self.size, np.float32)
        return np.asarray(self._model.get_scores(q), dtype=np.float32)
