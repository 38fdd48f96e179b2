"""PathRAG (Chen et al.): key relational paths between query-related nodes, as a LlamaIndex retriever.

Per query (paper, Methodology):

1. Node retrieval: keywords from the query, then the top ``num_nodes`` (N = 40) entity nodes by cosine
   of their name embedding with the keywords, taking each keyword's next best node in turn until N
   distinct nodes are found. With an LLM, the keyword prompt (``self.prompt("keywords")``) gives high-
   and low-level keywords (low-level first, as the authors' code searches entities with them); an
   unreadable answer or a failed request falls back to the LLM-free keywords. LLM-free: the query's
   n-gram candidates scored against the index's entity statistics (Eq. 2 of AGRAG, i.e. IDF for a
   query): phrases that occur in the corpus but in at most ``keyword_max_df`` of its chunks, rarest
   (then longest) first, at most ``max_keywords``; then the whole query. Key phrases are embedded in
   one batch as texts (as the entity names were); the whole query reuses the query embedding.
2. Path retrieval (Eq. 2-4, :mod:`...graph.flow_paths`): flow-based pruning from every retrieved node
   with decay ``alpha`` (0.7) and early stop ``theta`` (0.01; the paper gives no value: at 0.01 a
   node with S = 0.14, a neighbour of a start with 5 neighbours, propagates while it has at most 14
   neighbours); paths to the other retrieved nodes scored by Eq. 4; ``paths_per_pair`` (1) per pair,
   then the global top ``num_paths`` (K = 15). Traversed edges (``edge_kinds``): relation edges
   (facts) only by default. Synonym edges are optional: between nodes retrieved for the same keyword
   they make one-hop "similar name" paths that outrank every real relation. Passage (``contains``)
   edges are never traversed: PathRAG's indexing graph has entities and relations, texts hang on them.
3. Chunks. The chunks behind a path are those its text comes from: the chunks stating its edges'
   facts and the chunk of each node's description. Default ``chunk_ranking="combined"``: every
   chunk's base score (``sparse_weight`` 0.25: min-max dense and BM25 blended 3:1; 0.5 is AGRAG's hybrid) plus
   ``path_weight`` (0.2) x (best reliability of a path it is behind / reliability of the best path),
   top ``top_k``. LLM-free, the paths alone are weak evidence for retrieval (``paths_first`` recall@5
   45.5 / 45.0 / 31.3 on the 2wiki / HotpotQA / MuSiQue dev sets on the NER graph), so their
   reliability re-ranks hybrid relevance (``benchmarks/tuning.py``, guard on: +1.2 / +2.0 / +2.4 over hybrid).
   ``chunk_ranking="paths_first"`` is the literal reading: chunks behind paths first, by best
   reliability then cosine, filled with the densest remaining chunks. ``chunk_ranking="paths_only"``
   (``variant="paths_only"``): only chunks behind paths (may return fewer than ``top_k``). Chunk
   scores are the combined score, or the reliability (path chunks) / cosine (dense fill) for the other two.
4. Evidence: one node holding the paths (nodes, edges, resources, reliability) and their text (Eq. 5,
   ``render.py``): each node's description then each edge's, in path order.

Path prompt (Eq. 6, :func:`~.render.render_paths`): the query first, then the paths in ascending
reliability so the most reliable is last; a token budget drops the least reliable paths first. The
query engine (``as_query_engine``, the ``"answer"`` prompt) puts the evidence node after the passages
(``evidence_placement = "last"``), so the most reliable path ends the prompt. Ablations of the paper's
Table 2-3: ``order="random"`` or ``"hop_first"``, ``flat=True`` (deduplicated nodes and edges instead
of paths). ``variant=`` names them for the bench (``random_order``, ``hop_first``, ``flat``: prompt
only, retrieval unchanged) plus ``paths_only`` (a retrieval ablation, see 3); ``config.py`` has every
setting with its source.
"""

from __future__ import annotations

import hashlib
import logging
import threading
from collections import OrderedDict
from dataclasses import dataclass
from typing import Any, Sequence

import numpy as np
from llama_index.core.schema import NodeWithScore, QueryBundle

from ...embeddings import embed_few
from ...graph import vector_lists
from ...graph.flow_paths import FlowGraph, flow_paths
from ...index.vectors import normalize_rows
from ...llm.errors import LLMUnavailableError
from ...llm.json_repair import parse_json_lenient
from ...llm.structured import KEYWORDS_SCHEMA, predict_json
from ...tracing import stage
from ..base import GraphIndexRetriever, chunk_node, evidence_node
from ..query_scores import bm25_scores, dense_scores
from ..query_kernels import blended  # scoring's, as one compiled pass over a large array (the same values)
from ..query_kernels import top_k as top_indices
from .config import ChunkRanking, PathRAGConfig
from ..shared_graph import ChunkPositions
from .prompts import DEFAULT_PROMPTS
from .render import RenderedPath, node_source, path_record, render_paths

__all__ = ["PathRAGRetriever", "VARIANTS"]

log = logging.getLogger(__name__)
VARIANTS = tuple(PathRAGConfig.PRESETS)


def top_rows(sims: np.ndarray, k: int) -> np.ndarray:
    """The rows of the ``k`` largest ``sims``, best first, ties by row: what ``VectorTable.search`` returns."""
    k = min(k, sims.size)
    if k <= 0:
        return np.empty(0, np.int64)
    part = np.argpartition(-sims, k - 1)[:k] if k < sims.size else np.arange(sims.size)
    return part[np.lexsort((part, -sims[part]))]


def _snapshot_rows(snap, ids: list[str]) -> np.ndarray:
    """``snap.rows_or_missing(ids)`` by one Arrow hash look-up of every id instead of a Python one per id (a million
    entity names took seconds of the first query); the per-id look-up where a node id repeats (then which row it
    answers is the snapshot's to say)."""
    import pyarrow as pa
    import pyarrow.compute as pc

    if not len(ids):
        return np.empty(0, np.int64)
    nodes = pa.array(snap.node_ids, pa.string())
    if len(pc.unique(nodes)) != len(nodes):
        return snap.rows_or_missing(ids)
    found = pc.index_in(pa.array(ids, pa.string()), value_set=nodes)
    return found.fill_null(-1).to_numpy(zero_copy_only=False).astype(np.int64)


class RecentVectors:
    """The vectors of the last ``size`` keys (most recent kept), shared by the threads that query one index."""

    def __init__(self, size: int = 256):
        self.size, self._items, self._lock = size, OrderedDict(), threading.Lock()

    def get(self, key, compute) -> np.ndarray:
        with self._lock:
            hit = self._items.get(key)
            if hit is not None:
                self._items.move_to_end(key)
                return hit
        value = compute()  # outside the lock: another thread's look-up does not wait for this embedding
        with self._lock:
            self._items[key] = value
            self._items.move_to_end(key)
            while len(self._items) > self.size:
                self._items.popitem(last=False)
        return value


@dataclass
class _Graph:
    """Per-snapshot structures (cached on the index)."""

    flow: FlowGraph  # entity graph: the config's edge kinds, parallel edges merged
    entity_rows: np.ndarray  # snapshot row of each entity vector-table row


class PathRAGRetriever(GraphIndexRetriever):
    """PathRAG retrieval over our index or a plain ``PropertyGraphIndex`` (see the module docstring).

    ``PathRAGRetriever(index, top_k=5, llm=None, variant=None, config=None, **settings)``: the settings
    are the fields of :class:`~.config.PathRAGConfig` (``num_nodes=40``, ``alpha=0.7``, ...).
    Score: the chunk's raw score (dense + path support, or path reliability then dense cosine) divided by
    the top chunk's (top = 1.0), never above the chunk ranked before it.
    """

    method = "pathrag"
    config_class = PathRAGConfig
    default_prompts = DEFAULT_PROMPTS
    evidence_placement = "last"  # Eq. 6: the most reliable path ends the prompt
    uses_llm = True  # an llm extracts the query keywords
    score_meaning = "dense + path-reliability score relative to the top chunk's (top = 1.0)"

    config: PathRAGConfig

    # ------------------------------------------------------------------ per-snapshot structures

    def _graph(self) -> _Graph:
        kinds = [kind.value for kind in self.config.edge_kinds]
        codes = [kind.code for kind in self.config.edge_kinds]

        def build() -> _Graph:
            snap, index = self.index.snapshot, self.index
            entity_edges = np.flatnonzero(np.isin(snap.edge_kind, codes))
            flow = FlowGraph.from_edges(snap.num_nodes, snap.edge_src[entity_edges], snap.edge_dst[entity_edges], entity_edges)
            ids = index.entity_vectors.ids if index.entity_vectors is not None else []
            return _Graph(flow, _snapshot_rows(snap, ids))

        return self.index.cached(f"pathrag.graph.{'+'.join(kinds)}", build)

    # ------------------------------------------------------------------ step 1: keywords and nodes

    def keywords(self, question: str) -> tuple[list[str], str]:
        """Query keywords and where they came from (``llm``, ``statistical`` or a fallback note)."""
        if self.llm is not None:
            found = self._llm_keywords(question)
            if found:
                return found[: self.config.max_keywords] + [question], "llm"
            how = "llm_unreadable_statistical"
        else:
            how = "statistical"
        return self._statistical_keywords(question) + [question], how

    def _statistical_keywords(self, question: str) -> list[str]:
        """LLM-free key phrases: the query's n-gram candidates that occur in the corpus, by their entity
        score against the index's statistics (Eq. 2; in a query every count is 1, so this is IDF:
        rarer first), skipping phrases inside an already chosen one and phrases in more than
        ``keyword_max_df`` of the chunks (and more than 5; generic words such as "film" or "born" pull in generic nodes)."""
        stats = self.index.entity_statistics()
        max_df = max(self.config.keyword_max_df * stats.n_chunks, 5.0)  # small corpora keep their names
        chosen: list[tuple[str, str]] = []
        # Equal scores (equal document frequency): the longer phrase first, so "Grey Harbour" beats "Grey".
        for cand in sorted(stats.score(question), key=lambda c: (-round(c.score, 12), -c.key.count(" "), c.key)):
            df = stats.doc_freq.get(cand.key, 0)
            if df < 1 or df > max_df:
                continue  # never in the corpus (no name the graph holds), or too common to be specific
            if any(f" {cand.key} " in f" {key} " for key, _ in chosen):
                continue
            chosen.append((cand.key, cand.surface))
            if len(chosen) == self.config.max_keywords:
                break
        return [surface for _, surface in chosen]

    def _llm_keywords(self, question: str) -> list[str]:
        try:
            # JSON by constrained decoding where the LLM was built with structured_output; lenient parse either way
            answer = predict_json(self.llm, self.prompt("keywords"), KEYWORDS_SCHEMA, "keywords", question=question)
        except LLMUnavailableError:
            raise
        except Exception as exc:  # a failed request must not fail retrieval: fall back to LLM-free keywords
            log.warning("PathRAG keyword extraction failed (%s: %s); using statistical keywords", type(exc).__name__, exc)
            return []
        parsed = parse_json_lenient(answer).value
        if not isinstance(parsed, dict):
            log.warning("PathRAG keyword extraction: unreadable answer %r", str(answer)[:200])
            return []
        out: list[str] = []
        for field in ("low_level_keywords", "high_level_keywords"):
            value = parsed.get(field, [])
            items = [value] if isinstance(value, str) else value if isinstance(value, list) else []
            out.extend(str(k).strip() for k in items if isinstance(k, (str, int, float)) and str(k).strip())
        return list(dict.fromkeys(out))

    def _phrase_vectors(self, phrases: list[str]) -> np.ndarray:
        """The key phrases' unit vectors, embedded in one batch; the last batches are remembered (as the index
        remembers query vectors), by the whole batch: a phrase's vector may differ in its last bits with what it
        is batched with."""
        if not phrases:
            return np.zeros((0, 1), np.float32)
        memo = self.index.cached("pathrag.phrase_vectors", RecentVectors)
        return memo.get(tuple(phrases), lambda: normalize_rows(embed_few(self.index.embed_model, phrases)))

    def embed_query_texts(self, question: str) -> None:
        """Embed what a retrieval for ``question`` embeds, the question and its key phrases (both are remembered):
        a latency measurement leaves the embedding model out this way (``benchmarks/latency.py``)."""
        keywords, _ = self.keywords(question)
        self._phrase_vectors([kw for kw in keywords if kw != question])
        self.index.embed_query(question)

    def retrieve_nodes(self, keywords: Sequence[str], question: str | None = None) -> list[tuple[int, float]]:
        """Top ``num_nodes`` entity rows: each keyword's next best entity in turn (cosine of names).
        ``question``, when it is among the keywords, is embedded as a query (cached with the dense search)."""
        index, graph, n = self.index, self._graph(), self.config.num_nodes
        if index.entity_vectors is None or not len(index.entity_vectors):
            return []
        # One batched forward pass for the key phrases (names are embedded as texts, like the entity
        # names they are compared with); the whole query reuses the query vector.
        phrases = [kw for kw in keywords if kw != question]
        vectors = list(self._phrase_vectors(phrases))
        if question in keywords:
            vectors.append(index.embed_query(question))
        if not vectors:
            return []
        queries, table = normalize_rows(np.stack(vectors)), index.entity_vectors
        if table.listed:  # a large table: each keyword's top n among the rows of its nearest lists
            sims_k, rows_k = table.lists.search(queries, table.at, n, nprobe=vector_lists.QUERY_NPROBE)
            rankings = [list(zip(graph.entity_rows[rows[rows >= 0]].tolist(), sims[rows >= 0].tolist()))
                        for sims, rows in zip(sims_k, rows_k)]
        else:
            # One pass over the name vectors for every keyword (a matrix product instead of one mat-vec each: the
            # table is read once); each keyword's top n as VectorTable.search picks it (ties by row).
            sims_all = table.vectors() @ queries.T
            rankings = []
            for sims in sims_all.T:
                rows = top_rows(sims, n)
                rankings.append(list(zip(graph.entity_rows[rows].tolist(), sims[rows].tolist())))
        chosen: dict[int, float] = {}
        for rank in range(n):
            for ranking in rankings:
                if rank < len(ranking) and ranking[rank][0] >= 0 and ranking[rank][0] not in chosen:
                    chosen[ranking[rank][0]] = ranking[rank][1]
                    if len(chosen) == n:
                        return list(chosen.items())
        return list(chosen.items())

    # ------------------------------------------------------------------ retrieval

    def _retrieve(self, query_bundle: QueryBundle) -> list[NodeWithScore]:
        cfg, index, snap = self.config, self.index, self.index.snapshot
        question = query_bundle.query_str
        dense = dense_scores(index, question)
        with stage("pathrag.keywords"):
            keywords, how = self.keywords(question)
        with stage("pathrag.node_retrieval"):
            nodes = self.retrieve_nodes(keywords, question)
        with stage("pathrag.flow_propagation"):  # Eq. 2-4: propagation with early stop, paths by reliability
            search = flow_paths(self._graph().flow, [r for r, _ in nodes], alpha=cfg.alpha, theta=cfg.theta,
                                top_k=cfg.num_paths, paths_per_pair=cfg.paths_per_pair, max_hops=cfg.max_hops)
        with stage("pathrag.path_ranking"):  # path texts (Eq. 5), chunks by path, the prompt's path order (Eq. 6)
            paths_json = [path_record(index, p, cfg.max_edge_texts) for p in search.paths]
            path_ranked, best = self._path_chunks(paths_json, dense)
            base = blended(dense, lambda: bm25_scores(index, question), cfg.sparse_weight)
            chunk_ids, source, scores = self._rank_chunks(path_ranked, best, base)
            results = [chunk_node(index, c, scores[c], self.method, pathrag_source=source[c]) for c in chunk_ids]
            rendered = [RenderedPath(p["text"], p["reliability"], p["hops"]) for p in paths_json]
            text, kept = render_paths(rendered, cfg.order, cfg.max_path_tokens, cfg.flat,
                                      seed=int(hashlib.sha1(question.encode()).hexdigest()[:8], 16))
        evidence: dict[str, Any] = {
            "variant": self.variant or "full",
            "keywords": keywords,
            "keywords_from": how,
            "nodes": [{"id": snap.node_ids[r], "score": round(s, 6)} for r, s in nodes],
            "paths": paths_json,
            "prompt_paths": kept,
            "order": cfg.order.value,
            "flat": cfg.flat,
            "candidate_paths": search.candidates,
            "nodes_touched": search.touched,
            "nodes_alive": search.alive,
            "chunks": [{"id": c, "from": source[c], "score": round(scores[c], 6),
                        "path_reliability": round(best[c], 6) if c in best else None} for c in chunk_ids],
            "params": {"N": cfg.num_nodes, "K": cfg.num_paths, "alpha": cfg.alpha, "theta": cfg.theta,
                       "paths_per_pair": cfg.paths_per_pair, "max_hops": cfg.max_hops,
                       "chunk_ranking": cfg.chunk_ranking.value, "path_weight": cfg.path_weight,
                       "sparse_weight": cfg.sparse_weight},
        }
        return results + [evidence_node(self.method, text, evidence)]

    # ------------------------------------------------------------------ step 3: chunks

    def _rank_chunks(self, path_ranked: list[str], best: dict[str, float], dense: np.ndarray) -> tuple[list[str], dict[str, str], dict[str, float]]:
        """Final chunk order and scores (see the module docstring, step 3) and where each chunk came from."""
        order, position, top_k = self.index.chunk_order, self._chunk_positions(), self.top_k
        ranking = self.config.chunk_ranking
        if ranking is ChunkRanking.PATHS_ONLY:
            ranked = path_ranked[:top_k]
            return ranked, {c: "path" for c in ranked}, {c: best[c] for c in ranked}
        if ranking is ChunkRanking.PATHS_FIRST:
            ranked = path_ranked[:top_k]
            scores = {c: best[c] for c in ranked}
            for i in top_indices(dense, top_k + len(ranked)):
                if len(ranked) < top_k and order[i] not in scores:
                    ranked.append(order[i])
                    scores[order[i]] = float(dense[i])
        else:  # COMBINED: base score plus path support, path_weight x best reliability / the best path's reliability
            # Support only raises a chunk, so a chunk without it that makes the top k is in the base's top k: the
            # candidates are those and the supported chunks (no copy of every chunk's score)
            top = max(best.values(), default=1.0)
            supported = np.fromiter((position[c] for c in best), np.int64, len(best))
            head = top_indices(dense, top_k)
            candidates, at = np.unique(np.r_[head, supported], return_inverse=True)
            combined = np.asarray(dense[candidates], np.float64)
            for i, rel in zip(at[head.size:].tolist(), best.values()):
                combined[i] += self.config.path_weight * rel / top
            ranked_at = np.lexsort((candidates, -combined))[:top_k]  # as top_k ranks: ties by position
            ranked = [order[i] for i in candidates[ranked_at].tolist()]
            scores = {order[i]: float(v) for i, v in zip(candidates[ranked_at].tolist(), combined[ranked_at].tolist())}
        return ranked, {c: "path" if c in best else "dense" for c in ranked}, scores

    def _chunk_positions(self) -> dict[str, int]:
        return ChunkPositions(self.index)

    def _path_chunks(self, paths: list[dict], dense: np.ndarray) -> tuple[list[str], dict[str, float]]:
        """The chunks behind the paths' texts (the chunks stating each edge's facts and the chunk each node
        description comes from), by the best reliability of a path they support, then dense cosine."""
        facts, position = self.index.facts, self._chunk_positions()
        best: dict[str, float] = {}
        for p in paths:
            behind = {c for edge in p["edges"] for fact in edge["facts"] for c in facts[fact["id"]].chunks}
            behind.update(c for key in p["nodes"] for c in node_source(self.index, key)[1])
            for c in behind:
                best[c] = max(best.get(c, -np.inf), p["reliability"])
        ranked = sorted(best, key=lambda c: (-best[c], -float(dense[position[c]]), c))
        return ranked, best
