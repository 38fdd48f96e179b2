"""A question's dense and BM25 scores over every chunk, computed once per retrieval.

A guarded graph method needs them twice: the method ranks with them, then the hybrid guard fuses its ranking
with hybrid's (``guard.fusion.hybrid_ranking``). Inside :func:`shared_query_scores` (which every retrieval opens,
the guard's around the method's) the second call returns the first call's arrays; outside it nothing is kept, so
no score outlives an index update.

The hybrid base may take a third score, a chunk's best sentence (:func:`sentence_scores`), inside
:func:`sentence_base` (the guard opens it when its ``guard_best_sentence`` is on): then :func:`hybrid_scores`,
which the guard fuses with and AGRAG and A2RAG read, is the equal-weight fusion of dense, BM25 and best sentence.
Outside that block (the ``hybrid`` baseline, the ``:paper`` methods) it is AGRAG's Eq. 21 as published.
"""

from __future__ import annotations

import contextvars
from contextlib import contextmanager
from typing import Callable, Iterator

import numpy as np

from .scoring import hybrid, minmax, top_k

__all__ = ["best_sentence", "bm25_scores", "dense_scores", "fusable_dense", "hybrid_scores", "listed_chunks",
           "sentence_base", "sentence_chunk_pairs", "sentence_scores", "shared_query_scores", "three_way",
           "top_ranked"]

_MEMO: contextvars.ContextVar[dict | None] = contextvars.ContextVar("graphrag_query_scores", default=None)
_SENTENCES: contextvars.ContextVar[bool] = contextvars.ContextVar("graphrag_sentence_base", default=False)


@contextmanager
def sentence_base(enabled: bool = True) -> Iterator[None]:
    """Within this block :func:`hybrid_scores` fuses the best-sentence score as a third (:func:`three_way`) when
    ``enabled``; a block inside it may switch it back off."""
    token = _SENTENCES.set(bool(enabled))
    try:
        yield
    finally:
        _SENTENCES.reset(token)


@contextmanager
def shared_query_scores() -> Iterator[None]:
    """Within this block, each (index, question, kind) is scored once; a block opened inside another (the method's
    retrieval inside the guard's) shares the outer one's scores."""
    if _MEMO.get() is not None:
        yield
        return
    token = _MEMO.set({})
    try:
        yield
    finally:
        _MEMO.reset(token)


def _memoised(index, kind: str, question: str, compute: Callable[[], np.ndarray]) -> np.ndarray:
    memo = _MEMO.get()
    if memo is None:
        return compute()
    # the index and its snapshot are kept with the scores and checked by identity: an id() reused by another object,
    # or an insert since (a new snapshot), computes afresh even inside a block that was never closed
    key, snapshot = (kind, id(index), question), getattr(index, "snapshot", None)
    hit = memo.get(key)
    if hit is None or hit[0] is not index or hit[1] is not snapshot:
        hit = memo[key] = (index, snapshot, compute())
    return hit[2]


#: On a chunk table large enough to keep vector lists, the BM25 leaders whose dense cosine is computed exactly
#: (far more than any method fuses: the hybrid score of a chunk BM25 ranks high must not rest on an estimate).
BM25_LEADERS = 256


def dense_scores(index, question: str) -> np.ndarray:
    """Cosine of the question's embedding with every chunk, in ``index.chunk_order`` (on a listed chunk table:
    exact near the query and for the BM25 leaders, estimated elsewhere; ``VectorTable.scores``)."""
    return _memoised(index, "dense", question, lambda: fusable_dense(index, question, index.embed_query(question)))


def fusable_dense(index, question: str, query_vec: np.ndarray) -> np.ndarray:
    """The cosine of ``query_vec`` with every chunk, exact wherever it is fused with BM25: on a listed chunk table
    the question's :data:`BM25_LEADERS` chunks by BM25 are read exactly (``VectorTable.scores``)."""
    if not listed_chunks(index):
        return index.chunk_dense_scores(query_vec)
    return index.chunk_dense_scores(query_vec, top_k(bm25_scores(index, question), BM25_LEADERS))


def listed_chunks(index) -> bool:
    """Whether the index's chunk vectors answer through lists (a large table; ``VectorTable.listed``)."""
    return bool(getattr(getattr(index, "chunk_vectors", None), "listed", False))


def bm25_scores(index, question: str) -> np.ndarray:
    """BM25 score of every chunk for the question, in ``index.chunk_order``."""
    return _memoised(index, "bm25", question, lambda: index.bm25.scores(question))


def hybrid_scores(index, question: str) -> np.ndarray:
    """AGRAG's hybrid score (Eq. 21) of every chunk, in ``index.chunk_order``, from :func:`dense_scores` and
    :func:`bm25_scores` (a guarded method and its guard fuse the same array: computed once per retrieval); inside
    :func:`sentence_base`, :func:`three_way` of those and :func:`sentence_scores`. Read-only: callers share it."""
    if _SENTENCES.get():
        return _memoised(index, "hybrid+sentence", question, lambda: _read_only(three_way(
            dense_scores(index, question), bm25_scores(index, question), sentence_scores(index, question))))
    return _memoised(index, "hybrid", question, lambda: _read_only(hybrid(dense_scores(index, question),
                                                                         bm25_scores(index, question))))


def three_way(dense: np.ndarray, sparse: np.ndarray, sentence: np.ndarray) -> np.ndarray:
    """Eq. 21 with a third score: the mean of the min-max-scaled dense, BM25 and best-sentence scores (equal
    weights, as Eq. 21 weighs its two), in [0, 1]."""
    return (minmax(dense) + minmax(sparse) + minmax(sentence)) / 3.0


def sentence_scores(index, question: str) -> np.ndarray:
    """Each chunk's best sentence: the highest cosine between the question and a sentence of the chunk that states a
    fact (the fact texts the index embeds for its facts anyway, ``index.fact_vectors``); a chunk stating none is
    read as one sentence, its own dense cosine. In ``index.chunk_order``."""
    def compute() -> np.ndarray:
        dense = dense_scores(index, question)
        if not index.facts:
            return dense
        starts, chunks, rows = sentence_chunk_pairs(index)
        return best_sentence(index.fact_vectors.scores(index.embed_query(question)), starts, chunks, rows, dense)
    return _memoised(index, "sentence", question, compute)


def best_sentence(sentence_sims: np.ndarray, starts: np.ndarray, chunks: np.ndarray, rows: np.ndarray,
                  fallback: np.ndarray) -> np.ndarray:
    """Per chunk, the largest of ``sentence_sims`` over its sentences: ``rows`` (sentence rows) grouped by chunk,
    ``chunks[i]`` the chunk position of group ``i``, which starts at ``starts[i]``; other chunks keep
    ``fallback``. Pure numpy (one gather, one reduceat)."""
    out = np.array(fallback, dtype=np.float32, copy=True)
    if rows.size:
        out[chunks] = np.maximum.reduceat(np.asarray(sentence_sims, np.float32)[rows], starts)
    return out


def sentence_chunk_pairs(index) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per snapshot (cached): which fact-text rows (``index.fact_vectors``) each chunk states, as
    :func:`best_sentence` reads them: the start of each chunk's group, the chunk positions, the rows by chunk."""
    def build() -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        position, facts = index.chunk_position, index.facts
        pairs = {(position[c], row)
                 for fid, row in zip(index.fact_ids, np.asarray(index.fact_text_rows, np.int64).tolist())
                 for c in facts[fid].chunks if c in position}
        if not pairs:
            empty = np.zeros(0, np.int64)
            return empty, empty, empty
        both = np.asarray(sorted(pairs), np.int64)
        starts = np.r_[0, np.flatnonzero(np.diff(both[:, 0])) + 1]
        return starts, both[starts, 0], both[:, 1]

    return index.cached("query_scores.sentence_pairs", build)


def _read_only(scores: np.ndarray) -> np.ndarray:
    scores.flags.writeable = False  # shared by the retrieval's steps (and ranked once, top_ranked)
    return scores


#: How deep :func:`top_ranked` ranks an array the first time (a later call asking for more ranks again).
RANK_DEPTH = 100


def top_ranked(scores: np.ndarray, k: int) -> np.ndarray:
    """``scoring.top_k(scores, k)`` for a read-only array several steps of one retrieval rank (the hybrid scores:
    the method's ranking, its restart seeds, the guard's). Inside :func:`shared_query_scores` the array is ranked
    once, to the deepest ``k`` asked (at least :data:`RANK_DEPTH`), and sliced: ``top_k(s, a)`` is
    ``top_k(s, b)[:a]`` for ``a <= b``."""
    memo = _MEMO.get()
    if memo is None or scores.flags.writeable:
        return top_k(scores, k)
    k = max(int(k), 0)
    key = ("ranked", id(scores))
    hit = memo.get(key)
    if hit is None or hit[0] is not scores or hit[1].size < min(k, scores.size):
        hit = memo[key] = (scores, top_k(scores, max(k, RANK_DEPTH)))
    return hit[1][:k]
