"""A question's dense and BM25 scores over every chunk, computed once per retrieval.

A guarded graph method needs them twice: the method ranks with them, then the hybrid guard fuses its ranking
with hybrid's (``guard.fusion.hybrid_ranking``). Inside :func:`shared_query_scores` (which every retrieval opens,
the guard's around the method's) the second call returns the first call's arrays; outside it nothing is kept, so
no score outlives an index update.
"""

from __future__ import annotations

import contextvars
from contextlib import contextmanager
from typing import Callable, Iterator

import numpy as np

from .scoring import hybrid, top_k

__all__ = ["bm25_scores", "dense_scores", "fusable_dense", "hybrid_scores", "listed_chunks", "shared_query_scores",
           "top_ranked"]

_MEMO: contextvars.ContextVar[dict | None] = contextvars.ContextVar("graphrag_query_scores", default=None)


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
    :func:`bm25_scores` (a guarded method and its guard fuse the same array: computed once per retrieval).
    Read-only: callers share it."""
    return _memoised(index, "hybrid", question, lambda: _read_only(hybrid(dense_scores(index, question),
                                                                         bm25_scores(index, question))))


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
