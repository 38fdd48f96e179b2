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

from .query_kernels import hybrid, top_k  # scoring's, as one compiled pass over a large array (the same values)
from .scoring import minmax

__all__ = ["best_sentence", "bm25_scores", "dense_scores", "fact_text_cosines", "fusable_dense", "groups_of",
           "hybrid_scores", "listed_chunks", "sentence_base", "sentence_chunk_pairs", "sentence_scores",
           "sentences_carry_meaning", "shared_query_scores", "three_way", "top_ranked"]

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


def sentences_carry_meaning(index) -> bool:
    """Whether a chunk's best sentence is a signal of its own with the index's embedder: with any model, but not with
    the hash embedding (tests, demos, scale runs), a bag of hashed words, where a sentence's cosine to the question
    counts the words they share, as BM25 does but without its weights (on the synthetic scale corpus dense finds 6.5
    % of the gold passages with it and the best sentence 2.8 %; docs/guard.md)."""
    from ..embeddings import HashEmbedding

    return not isinstance(getattr(index, "embed_model", None), HashEmbedding)


def three_way(dense: np.ndarray, sparse: np.ndarray, sentence: np.ndarray) -> np.ndarray:
    """Eq. 21 with a third score: the mean of the min-max-scaled dense, BM25 and best-sentence scores (equal
    weights, as Eq. 21 weighs its two), in [0, 1]."""
    return (minmax(dense) + minmax(sparse) + minmax(sentence)) / 3.0


#: On a fact table large enough to keep vector lists, the chunks whose best sentence is read: the leaders of dense
#: and of BM25 (the only chunks a third score can lift into any fused top; elsewhere a list's estimate would rank).
SENTENCE_LEADERS = BM25_LEADERS


def sentence_scores(index, question: str) -> np.ndarray:
    """Each chunk's best sentence: the highest cosine between the question and a sentence of the chunk that states a
    fact (the fact texts the index embeds for its facts anyway, ``index.fact_vectors``); a chunk stating none is
    read as one sentence, its own dense cosine. In ``index.chunk_order``. On a listed fact table only the
    :data:`SENTENCE_LEADERS` of dense and of BM25 are read (exactly); other chunks keep their dense cosine."""
    def compute() -> np.ndarray:
        dense = dense_scores(index, question)
        if not index.facts:
            return dense
        starts, chunks, rows = sentence_chunk_pairs(index)
        table, query = index.fact_vectors, index.embed_query(question)
        if not getattr(table, "listed", False):
            return best_sentence(fact_text_cosines(index, question), starts, chunks, rows, dense)
        leaders = np.union1d(top_k(dense, SENTENCE_LEADERS), top_k(bm25_scores(index, question), SENTENCE_LEADERS))
        starts, chunks, picked = groups_of(starts, chunks, rows.size, leaders)
        sims = table.scores_at(query, rows[picked]) if picked.size else np.zeros(0, np.float32)
        return best_sentence(sims, starts, chunks, np.arange(picked.size), dense)
    return _memoised(index, "sentence", question, compute)


def fact_text_cosines(index, question: str) -> np.ndarray:
    """Cosine of the question's embedding with every fact text (``index.fact_vectors``' rows, a listed table's
    estimates included), read-only: the best sentence and AGRAG's fact mapping read the same array, computed once per
    retrieval."""
    return _memoised(index, "fact_texts", question,
                     lambda: _read_only(index.fact_vectors.scores(index.embed_query(question))))


def groups_of(starts: np.ndarray, chunks: np.ndarray, total: int,
              wanted: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The groups of ``wanted`` chunk positions (those that state a sentence) out of :func:`sentence_chunk_pairs`'
    ``starts``/``chunks`` (``total`` rows): their new starts, their chunk positions, and the indexes into the
    pairs' rows of their sentences, group after group."""
    wanted = np.unique(np.asarray(wanted, np.int64))
    at = np.searchsorted(chunks, wanted)
    states = at < chunks.size
    states[states] = chunks[at[states]] == wanted[states]
    found = at[states]
    if not found.size:
        return np.zeros(0, np.int64), np.zeros(0, np.int64), np.zeros(0, np.int64)
    ends = np.append(starts[1:], total)[found]
    lengths = ends - starts[found]
    new_starts = np.r_[0, np.cumsum(lengths)[:-1]]
    picked = np.repeat(starts[found] - new_starts, lengths) + np.arange(int(lengths.sum()))
    return new_starts, chunks[found], picked


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
        text_rows = np.asarray(index.fact_text_rows, np.int64)
        found = _fact_chunk_positions(index)
        if found is None:  # facts as records (an index built or changed in this process)
            position, facts = index.chunk_position, index.facts
            pairs = [(position[c], i) for i, fid in enumerate(index.fact_ids) for c in facts[fid].chunks
                     if c in position]
            found = np.asarray(pairs, np.int64).reshape(-1, 2).T if pairs else (np.zeros(0, np.int64),) * 2
        chunk, fact = found
        keep = (chunk >= 0) & (text_rows[fact] >= 0)
        width = max(1, len(index.fact_vectors))
        key = np.unique(chunk[keep] * width + text_rows[fact[keep]])  # sorted by chunk, then row; each pair once
        chunks, rows = key // width, key % width
        starts = np.r_[0, np.flatnonzero(np.diff(chunks)) + 1] if key.size else np.zeros(0, np.int64)
        # int32 where they fit: a serving process keeps these for the snapshot (4.7M rows at 1M passages)
        small = np.int32 if max(len(index.chunk_order), width, key.size) < 2 ** 31 else np.int64
        return starts.astype(small), chunks[starts].astype(small), rows.astype(small)

    return index.cached("query_scores.sentence_pairs", build)


def _fact_chunk_positions(index) -> tuple[np.ndarray, np.ndarray] | None:
    """``(chunk position, fact position)`` of every (fact, chunk stating it) pair, read off a loaded index's Arrow
    fact columns without a Python object per fact (-1 for a chunk not in ``chunk_order``); None for facts held as
    records."""
    import pyarrow as pa
    import pyarrow.compute as pc

    column = getattr(index.facts, "arrow_column", None)
    if column is None:
        return None
    order = pa.array(index.chunk_order, pa.string())
    chunk_parts, fact_parts, offset = [], [], 0
    lists = column("chunks")
    for part in (lists.chunks if isinstance(lists, pa.ChunkedArray) else [lists]):
        found = pc.index_in(pc.list_flatten(part), value_set=order)
        chunk_parts.append(found.fill_null(-1).to_numpy(zero_copy_only=False).astype(np.int64))
        fact_parts.append(pc.list_parent_indices(part).to_numpy(zero_copy_only=False).astype(np.int64) + offset)
        offset += len(part)
    if not chunk_parts:
        return np.zeros(0, np.int64), np.zeros(0, np.int64)
    return np.concatenate(chunk_parts), np.concatenate(fact_parts)


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
