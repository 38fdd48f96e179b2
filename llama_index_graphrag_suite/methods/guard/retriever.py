"""The hybrid guard as a retriever around a graph method: the method ranks, the guard fuses its ranking with hybrid's
at a weight read off the query, and cuts to top_k (``docs/guard.md``).

    guarded = HybridGuard.around(AGRAGRetriever, index, top_k=5)          # what the registry's "agrag" is
    guarded = HybridGuard(AGRAGRetriever(index, top_k=20), top_k=5)       # the same, the method built by hand

The method does not know it is wrapped (as ``QueryFusionRetriever`` fuses retrievers that do not know it). Nothing
of a query is kept on the retriever: the guard's weight and signals go into the returned nodes (each chunk's
``graph_weight``, the evidence node's ``evidence["hybrid_guard"]``), so one retriever serves many threads.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from llama_index.core.schema import NodeWithScore, QueryBundle

from ..base import GraphIndexRetriever, chunk_node, evidence_node
from ..query_scores import sentence_base, sentences_carry_meaning, shared_query_scores
from .config import TUNED_TOP_K, GuardConfig
from ..shared_graph import ChunkPositions
from .fusion import fuse_rankings, guard_weight, hybrid_ranking, in_own_order, linked_hybrid
from .signals import (corpus_name_density, entity_coverage, hub_chunks, name_trust, names_held, query_link,
                      written_in_names)

__all__ = ["HybridGuard", "method_depth"]


def method_depth(top_k: int, cfg: GuardConfig) -> int:
    """How many chunks the wrapped method ranks for a guard cutting to ``top_k``."""
    return top_k if cfg.guard_rank_to_top_k else max(top_k, cfg.guard_depth)


class HybridGuard(GraphIndexRetriever):
    """``HybridGuard(inner, top_k=5, preset="default", **guard_settings)``: ``inner`` (a method's retriever, ranking
    at least :func:`method_depth` chunks) fused with hybrid retrieval per query; settings: :class:`GuardConfig`.

    It answers as the method does: the same name, prompts (one set, shared with ``inner``), evidence placement and
    score scale, and the method's own helpers (A2RAG's ``gate``, ArchRAG's ``hierarchy`` ...) through attribute
    lookup. ``config`` is the method's config; ``guard_config`` the guard's (a :class:`GuardConfig`).
    """

    config_class = GuardConfig

    def __init__(self, inner: GraphIndexRetriever, top_k: int = 5, *, config: GuardConfig | None = None,
                 preset: str = "default", callback_manager=None, verbose: bool = False,
                 include_evidence: bool = False, **overrides: Any):
        self.inner = inner
        super().__init__(inner.index, top_k=top_k, config=config, variant=preset, llm=inner.llm,
                         callback_manager=callback_manager, verbose=verbose, include_evidence=include_evidence,
                         **overrides)
        self.guard_config: GuardConfig = self.config
        # what a reader asks a method about is the method's: its config (and config class), variant, name ...
        self.config, self.config_class, self.variant = inner.config, inner.config_class, inner.variant
        self.method, self.uses_llm = inner.method, inner.uses_llm
        self.score_scale, self.score_meaning = inner.score_scale, inner.score_meaning
        self.evidence_placement = inner.evidence_placement
        self._prompts = inner._prompts  # one set: update_prompts here reaches the method's own prompts

    @classmethod
    def around(cls, method_class: type[GraphIndexRetriever], index, top_k: int = 5, *,
               guard: GuardConfig | None = None, include_evidence: bool = False, **method_params: Any) -> "HybridGuard":
        """``method_class(index, **method_params)`` ranking as deep as ``guard`` needs, wrapped."""
        guard = guard if guard is not None else GuardConfig()
        inner = method_class(index, top_k=method_depth(top_k, guard), **method_params)
        return cls(inner, top_k=top_k, config=guard, include_evidence=include_evidence)

    def __getattr__(self, name: str) -> Any:
        # only reached for names the guard lacks: the wrapped method's public helpers
        inner = self.__dict__.get("inner")
        if inner is None or name.startswith("_"):
            raise AttributeError(name)
        return getattr(inner, name)

    # ------------------------------------------------------------------ retrieval

    def _retrieve(self, query_bundle: QueryBundle) -> list[NodeWithScore]:
        with sentence_base(self.reads_best_sentence):  # the base the method reads and the fusion's
            chunks, evidence = self.inner.retrieve_with_evidence(query_bundle)
            return self.fuse(query_bundle.query_str, chunks, evidence)[0]

    def retrieve_with_trace(self, query: str | QueryBundle) -> tuple[list[NodeWithScore], dict]:
        """A method's ``retrieve_with_trace`` (A2RAG's), guarded: its trace gains ``hybrid_guard``."""
        bundle = query if isinstance(query, QueryBundle) else QueryBundle(query)
        # one state of the index; the method's scores reused; the base both read
        with self.reading(), shared_query_scores(), sentence_base(self.reads_best_sentence):
            nodes, trace = self.inner.retrieve_with_trace(bundle)
            chunks = [n for n in nodes if n.node.metadata.get("kind") != "evidence"]
            evidence = next((n for n in nodes if n.node.metadata.get("kind") == "evidence"), None)
            fused, guard = self.fuse(bundle.query_str, chunks, evidence)
        chunks, evidence = self._split(fused)
        trace["hybrid_guard"] = guard
        return chunks + ([evidence] if evidence is not None else []), trace

    @property
    def reads_best_sentence(self) -> bool:
        """Whether the base takes each chunk's best sentence (``guard_best_sentence``; None: as the embedder
        allows, :func:`~..query_scores.sentences_carry_meaning`)."""
        chosen = self.guard_config.guard_best_sentence
        return sentences_carry_meaning(self.index) if chosen is None else chosen

    def fuse(self, question: str, chunks: list[NodeWithScore],
             evidence: NodeWithScore | None) -> tuple[list[NodeWithScore], dict[str, Any]]:
        """The method's chunks (best first, to its depth) fused with hybrid's ranking and cut to top_k, then the
        evidence node; and the guard's trace (weight and signals), also written into the nodes."""
        cfg, index, k = self.guard_config, self.index, self.top_k
        position = ChunkPositions(index)
        graph_rank = np.fromiter((position[n.node.node_id] for n in chunks if n.node.node_id in position), np.int64)
        plain = hybrid_ranking(index, question, cfg.guard_depth)
        specific = hub_chunks(len(position))
        link, linked = query_link(index, question, specific, cfg.guard_names_only)
        agree = len(set(graph_rank[:k].tolist()) & set(plain[:k].tolist())) / max(1, min(k, len(plain)))
        trust = name_trust(corpus_name_density(index), cfg.guard_name_density)
        weight = guard_weight(link, agree, cfg, trust, k)
        covered: list[str] = []
        if cfg.guard_cover_gain > 0:  # every entity the question names, hubs included (docs/guard.md)
            _, covered = query_link(index, question, len(position))
        hybrid_rank = linked_hybrid(plain, entity_coverage(index, covered, plain), cfg.guard_cover_gain)
        fused, fused_scores = fuse_rankings(graph_rank, hybrid_rank, weight, cfg.guard_rrf_k, k)
        # The walk's own top_k stands (weight 1) where it agreed with the fusion on what the fusion is surest of: its
        # own first TUNED_TOP_K hold hybrid's first chunk (what the fusion protects) and are linked to as many of the
        # question's specific entities as the fused ones (it dropped no name to make room for its hops; a question
        # naming none drops none: A2RAG's dense seeds serve those), in a corpus written in names. Measured at top_k
        # TUNED_TOP_K; below it each place counts more and the fusion decides, as small_k_share scales the weight.
        keeps_first = bool(plain.size) and int(plain[0]) in set(graph_rank[:TUNED_TOP_K].tolist())
        walk_stands = (cfg.guard_walk_keeps_first and keeps_first and k >= TUNED_TOP_K and weight < 1.0
                       and written_in_names(index)
                       and names_held(index, linked, graph_rank[:TUNED_TOP_K])
                       >= names_held(index, linked, fused[:TUNED_TOP_K]))
        if walk_stands:
            weight = 1.0
            fused, fused_scores = fuse_rankings(graph_rank, hybrid_rank, weight, cfg.guard_rrf_k, k)
        own_order = cfg.guard_own_order_from is not None and weight > 0 and weight >= cfg.guard_own_order_from - 1e-9
        if own_order:  # the same chunks, listed as the method ranks them
            listed = in_own_order(fused, graph_rank)
            fused, fused_scores = fused[listed], [fused_scores[i] for i in listed.tolist()]
        trace = {"graph_weight": round(weight, 4), "query_link": round(link, 4), "linked_entities": linked[:10],
                 "agreement": round(agree, 4), "name_trust": round(trust, 4), "coverage_entities": covered[:10],
                 "own_order": own_order, "walk_keeps_first": keeps_first, "walk_stands": walk_stands}
        by_id = {n.node.node_id: n for n in chunks}
        order = index.chunk_order
        out = []
        for rank, c in enumerate(fused.tolist()):
            cid = order[c]
            node = by_id.get(cid)
            if node is None:  # a hybrid chunk the method did not rank
                node = chunk_node(index, cid, 0.0, self.method)
            metadata = node.node.metadata
            metadata["method_score"] = float(metadata.pop("raw_score", node.score or 0.0))
            metadata["graph_weight"] = trace["graph_weight"]
            node.score = fused_scores[rank]  # the fusion's score; _split scales it to [0, 1]
            out.append(node)
        if evidence is None:  # the trace travels with the evidence, so a method without one gets one
            evidence = evidence_node(self.method, "", {})
        evidence.node.metadata.setdefault("evidence", {})["hybrid_guard"] = trace
        return out + [evidence], trace
