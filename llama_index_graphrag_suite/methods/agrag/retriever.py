"""AGRAG (Wang et al.): an MCMI reasoning subgraph plus hybrid chunks, as a LlamaIndex retriever.

Per query (paper Section III-C/D):

1. Fact mapping (Eq. 7-8): the ``fact_top_k`` (k_a = 5) facts whose text embedding is closest to the query.
2. Triple filter (Eq. 9): with an LLM, a prompt keeps the query-relevant candidates (answers are parsed
   leniently and snapped back to real candidates); without one, the LLM-free filter keeps the facts whose
   cosine is within ``filter_margin`` of the best candidate (the best is always kept).
3. Node influence (Eq. 10-13): personalised PageRank (damping 0.5, tolerance 1e-7; the local push to ``push_eps``
   on a graph of 1M+ entries) restarting uniformly on the kept facts' entities; passage-node scores are then
   multiplied by ``passage_factor`` (0.05).
4. Edge costs (Eq. 14): fact edges (1 - cos(q, fact)) / 2; synonym edges (1 - max cos(q, entity)) / 2;
   contains edges (1 - hybrid(q, chunk)) / 2 with the hybrid score in [0, 1]; a pseudo node joins every
   passage at cost ``pseudo_cost`` (10) so the graph is connected (as in HippoRAG 2 and the paper).
   Per query only the per-fact, per-node numbers are computed; an edge is priced when the Steiner search
   or the MCMI expansion reads it (``graph/costs.py``), so a query never pays for all 3.4M edges of a
   100k-passage graph.
5. Steiner tree over the kept facts' entities (Mehlhorn), then MCMI expansion (Eq. 15-17).
6. Hybrid retrieval (Eq. 20-21): the ``hybrid_top_k`` (k_r = 5) chunks by averaged min-max dense and BM25.

Chunks returned: the chunks on the MCMI subgraph (its passage nodes and the chunks stating its facts),
ranked by influence, merged with the hybrid chunks by reciprocal rank fusion (each list contributes
1 / (60 + rank); a chunk in both lists adds both), then the top ``top_k``; and one evidence node (``retrieve_with_evidence``)
with the mapped and kept facts, the Steiner edges, the MCMI nodes and edges and the final ratio.

Settings (``config.py``): :class:`AGRAGConfig`, with the paper reference of every default. Ablations
(``variant=``) are presets of it: ``hybrid_only`` (``graph_retrieval=False``), ``no_mcmi`` (``mcmi=False``,
Steiner tree only), ``no_filter`` (``triple_filter=False``). Prompts (``prompts.py``): ``"triple_filter"``
(Eq. 9) and ``"answer"`` (Eq. 22, the query engine's QA template; the evidence node comes first).
"""

from __future__ import annotations

import logging
from typing import Any

import numpy as np
from llama_index.core.schema import NodeWithScore, QueryBundle

from ...graph.costs import PairCostIndex, QueryCosts
from ...graph.disjoint_sets import DisjointSets
from ...graph.mcmi import mcmi_expand
from ...graph.ppr import personalized_pagerank, pushed_pagerank
from ...graph.snapshot import CHUNK, CONTAINS, EDGE_KIND_NAMES, RELATION, SYNONYM
from ...graph.steiner import steiner_tree
from ...graph.vector_lists import row_products
from ...index.vectors import normalize_rows
from ...tracing import stage
from ..base import GraphIndexRetriever, chunk_node, evidence_node
from ..baselines import facts_from_cosines
from ..query_scores import fact_text_cosines, hybrid_scores, top_ranked
from ..shared_graph import chunk_rows as shared_chunk_rows, weighted_transition
from .config import AGRAGConfig
from .fact_cosines import FactCosines, map_facts
from .graph import (AGRAGGraph as _Graph, SynonymEnds as _SynonymEnds, synonym_block, synonym_ends,
                    write_chunk_slots)
from .prompts import DEFAULT_PROMPTS

__all__ = ["AGRAGConfig", "AGRAGRetriever", "VARIANTS"]

log = logging.getLogger(__name__)
VARIANTS = tuple(AGRAGConfig.PRESETS)
RRF_K = 60
PSEUDO = "pseudo"


def _row_ids(rows) -> np.ndarray:
    """``rows`` contiguous, int32 when they fit (half the memory a compiled search reads them from)."""
    rows = np.asarray(rows)
    return np.ascontiguousarray(rows, np.int32 if rows.size == 0 or rows.max() < 2**31 else np.int64)


class AGRAGRetriever(GraphIndexRetriever):
    """``AGRAGRetriever(index, top_k=5, llm=None, variant=None, **settings)``; settings: :class:`AGRAGConfig`.

    ``llm`` runs the Eq. 9 triple filter (the ``"triple_filter"`` prompt); without one the LLM-free
    score-margin filter runs. ``as_query_engine(llm=...)`` answers with the ``"answer"`` prompt (Eq. 22).
    Score: the chunk's reciprocal-rank-fusion score divided by the top chunk's (top = 1.0).
    """

    method = "agrag"
    config_class = AGRAGConfig
    default_prompts = DEFAULT_PROMPTS
    evidence_placement = "first"  # Eq. 22: the reasoning graph, then the passages
    uses_llm = True  # the triple filter
    score_meaning = "reciprocal-rank fusion (graph + hybrid) relative to the top chunk's (top = 1.0)"
    config: AGRAGConfig

    # ------------------------------------------------------------------ per-snapshot structures

    def _graph(self) -> _Graph:
        def build() -> _Graph:
            index, snap = self.index, self.index.snapshot
            chunk_rows = shared_chunk_rows(index)
            pseudo, nf = snap.num_nodes, len(index.fact_ids)
            src = np.concatenate([snap.edge_src, np.full(chunk_rows.size, pseudo)])
            dst = np.concatenate([snap.edge_dst, chunk_rows])
            # Eq. 14 slots per edge (see _Graph): fact edges their fact, synonym edges both entities,
            # contains edges their chunk end, pseudo edges the pseudo slot.
            slot_a = np.full(src.size, nf + pseudo, np.int64)
            slot_b = slot_a.copy()
            kind = snap.edge_kind
            rel, syn, con = (np.flatnonzero(kind == k) for k in (RELATION, SYNONYM, CONTAINS))
            slot_a[rel] = slot_b[rel] = snap.edge_fact[rel]
            slot_a[syn], slot_b[syn] = nf + snap.edge_src[syn], nf + snap.edge_dst[syn]
            con_src, con_dst = snap.edge_src[con], snap.edge_dst[con]
            slot_a[con] = slot_b[con] = nf + np.where(snap.node_kind[con_src] == CHUNK, con_src, con_dst)
            pairs = PairCostIndex(src, dst, pseudo + 1, slot_a, slot_b, nf + pseudo + 1)
            chunk_mask = np.zeros(pseudo + 1, bool)
            chunk_mask[chunk_rows] = True
            synonym_edges = (index.entity_vectors, index.entity_vector_rows, snap.edge_src[syn], snap.edge_dst[syn], nf)
            return _Graph(weighted_transition(index), pairs, chunk_rows, snap.num_edges, nf, pseudo,
                          synonym_ends(*synonym_edges), _row_ids(index.fact_text_rows), chunk_mask,
                          nf + chunk_rows.astype(np.int64), synonym_block=synonym_block(*synonym_edges))

        return self.index.cached("agrag.graph", build)

    # ------------------------------------------------------------------ steps

    def filter_facts(self, question: str, mapped: list[tuple[str, float]]) -> tuple[list[tuple[str, float]], str]:
        """Eq. 9: keep the query-relevant candidates. Returns (kept, how)."""
        if not mapped or not self.config.triple_filter:
            return mapped, "none"
        if self.llm is not None:
            kept = self._llm_filter(question, mapped)
            return (mapped, "llm_unreadable_kept_all") if kept is None else (kept, "llm")
        best = mapped[0][1]
        return [(f, s) for f, s in mapped if s >= best - self.config.filter_margin], "score_margin"

    def _llm_filter(self, question: str, mapped: list[tuple[str, float]]) -> list[tuple[str, float]] | None:
        """The LLM's choice among the candidates, or None when its answer cannot be read."""
        from rapidfuzz import fuzz, process, utils  # only the LLM path snaps answers to candidates

        from ...llm.json_repair import parse_json_lenient

        facts = self.index.facts
        lines = [f"{i}. {facts[f].subject} | {facts[f].predicate} | {facts[f].object}  (from: {facts[f].text})"
                 for i, (f, _) in enumerate(mapped, 1)]
        answer = self.llm.predict(self.prompt("triple_filter"), question=question, facts="\n".join(lines))
        parsed = parse_json_lenient(answer).value
        picks = parsed.get("keep", parsed.get("facts", [])) if isinstance(parsed, dict) else parsed
        if not isinstance(picks, list):
            log.warning("AGRAG triple filter: unreadable answer %r; keeping every candidate", answer[:200])
            return None
        labels = [f"{facts[f].subject} {facts[f].predicate} {facts[f].object}" for f, _ in mapped]
        kept: dict[int, None] = {}
        for pick in picks:
            if isinstance(pick, bool):
                continue
            if isinstance(pick, (int, float)) and float(pick).is_integer() and 1 <= int(pick) <= len(mapped):
                kept[int(pick) - 1] = None
            elif isinstance(pick, (str, list, tuple)):  # a triple or its text: snap to the closest candidate
                text = " ".join(map(str, pick)) if isinstance(pick, (list, tuple)) else pick
                match = process.extractOne(text, labels, scorer=fuzz.token_sort_ratio, processor=utils.default_process,
                                           score_cutoff=80)
                if match is not None:
                    kept[match[2]] = None
        return [mapped[i] for i in sorted(kept)]

    def _search_facts(self, fact_sims: np.ndarray | None, k: int) -> list[tuple[str, float]]:
        """``index.search_facts`` (the same facts, order and scores) from the cosines with every fact text,
        which Eq. 14 then reuses instead of a second pass over the fact table (checked in
        tests/test_agrag_costs.py)."""
        if fact_sims is None:
            return []
        return facts_from_cosines(self.index, fact_sims, k)

    def _slot_costs(self, graph: _Graph, query_vec: np.ndarray, hybrid_scores: np.ndarray,
                    fact_sims: np.ndarray | None = None, facts: bool = True) -> np.ndarray:
        """Eq. 14's per-query numbers (the slots of ``graph.pairs``; layout in :class:`_Graph`).

        ``fact_sims``: the query's cosines with every fact text when already computed (fact mapping).
        Fact and entity costs are computed in float32 from the float32 cosines, chunk costs in float64, as
        Eq. 14 was always computed here; a synonym edge's ``(1 - max cos) / 2`` is the min of its ends' slots.
        ``facts=False`` leaves the fact slots unwritten, for :meth:`_query_costs`, which derives them when read.
        """
        index, nf, n = self.index, graph.num_facts, graph.num_nodes
        slots = graph.buffer("slots", nf + n + 1)  # valid until this thread's next query
        filled = getattr(graph.scratch, "slots_filled", None)  # (buffer, entity form) whose defaults are written
        if filled is None or filled[0] is not slots or filled[1] != (graph.synonyms is not None):
            slots[nf:] = 0.5  # a node that is neither entity nor chunk: cost of a hybrid score 0
            graph.scratch.slots_filled = (slots, graph.synonyms is not None)  # later queries write the same slots
        if nf and facts:
            if fact_sims is None:
                fact_sims = index.fact_vectors.scores(query_vec)
            # per fact text, then gathered per fact (facts share texts): the same float32 values, cast
            np.take(((1.0 - fact_sims) / 2.0).astype(np.float64), index.fact_text_rows, out=slots[:nf])
        if graph.synonyms is not None:  # a large table: the entities synonym edges read, not every row
            # (1 - cos) / 2 per list estimate and per exact cosine, then gathered: the values of the formula on
            # _entity_cosines' array, without its float passes over every synonym-edge entity
            ends = graph.synonyms
            near, at, exact = self._entity_parts(ends, query_vec)
            slots[ends.slots] = ((1.0 - near) / 2.0)[ends.lists]
            slots[ends.slots[at]] = (1.0 - exact.astype(near.dtype, copy=False)) / 2.0
        elif graph.synonym_block is not None:  # only the entities synonym edges read: the same values
            block = graph.synonym_block
            slots[block.slots] = (1.0 - block.matrix @ normalize_rows(query_vec)[0]) / 2.0
        else:
            ent_cos = index.entity_vectors.scores(query_vec)[index.entity_vector_rows]
            slots[nf:nf + ent_cos.size] = (1.0 - ent_cos) / 2.0
        write_chunk_slots(slots, graph.chunk_slots, np.asarray(hybrid_scores, np.float64))
        slots[nf + n] = self.config.pseudo_cost
        return slots

    def _query_costs(self, graph: _Graph, query_vec: np.ndarray, hybrid_scores: np.ndarray,
                     fact_sims: np.ndarray | FactCosines | None = None) -> QueryCosts:
        """The query's cost graph over ``graph.pairs``: :meth:`_slot_costs` without writing a slot per fact (4.7M at
        1M passages); a fact slot is derived from its text's cosine where a search reads it (the same value).
        ``fact_sims``: every fact text's cosine, or :func:`map_facts`' cosines."""
        index, nf = self.index, graph.num_facts
        slots = self._slot_costs(graph, query_vec, hybrid_scores, facts=False)
        if not nf:
            return graph.pairs.query(slots)
        if fact_sims is None:
            fact_sims = index.fact_vectors.scores(query_vec)
        cosines = fact_sims if isinstance(fact_sims, FactCosines) else FactCosines(every=fact_sims)
        return graph.pairs.query(slots, cosines.slots(index, graph.fact_text_rows))

    def _ppr_scores(self, graph: _Graph, terminals: list[int]) -> np.ndarray:
        """Eq. 10-13: PageRank from the terminals (Eq. 11's reset, 1 on each), chunks scaled by the passage factor,
        and a 0 for the pseudo node; this thread's array, valid until its next query. On a large graph the local
        push's reached nodes are written into zeros (``pushed_pagerank``: the same bits as the dense scores there)."""
        n = graph.num_nodes
        scores = graph.buffer("ppr", n + 1)
        pushed = pushed_pagerank(graph.transition, np.asarray(terminals, np.int64), np.ones(len(terminals)),
                                 damping=self.config.damping, eps=self.config.push_eps)
        written = getattr(graph.scratch, "ppr_written", None)  # (buffer, the nodes the last push wrote)
        if pushed is None:
            reset = np.zeros(n)
            reset[terminals] = 1.0
            scores[:n] = personalized_pagerank(graph.transition, reset, damping=self.config.damping)
            scores[n] = 0.0
            scores[graph.chunk_rows] *= self.config.passage_factor
            graph.scratch.ppr_written = None
            return scores
        # zeros but where the last push wrote, then the reached nodes, chunks scaled (x * 1.0 is x): no pass over
        # every node or chunk
        if written is not None and written[0] is scores:
            scores[written[1]] = 0.0
        else:
            scores[:] = 0.0
        nodes, values = pushed
        scores[nodes] = values * np.where(graph.chunk_mask[nodes], self.config.passage_factor, 1.0)
        graph.scratch.ppr_written = (scores, nodes)
        return scores

    def _entity_cosines(self, ends: _SynonymEnds, query_vec: np.ndarray) -> np.ndarray:
        """``VectorTable.scores`` of a listed table at the synonym-edge entities (same lists probed, same exact
        cosines there), but reading only those entities' rows of the probed lists: the estimate elsewhere is capped
        at the lowest exact cosine among them, not among every probed row (a higher cap, so the estimates of far
        entities differ; studies/perf/agrag_slow_questions.py measures the effect)."""
        near, at, exact = self._entity_parts(ends, query_vec)
        out = near[ends.lists]
        out[at] = exact
        return out

    def _entity_parts(self, ends: _SynonymEnds, query_vec: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """:meth:`_entity_cosines` as ``(per-list capped estimate, positions in ends read exactly, their cosines)``."""
        table = self.index.entity_vectors
        q = normalize_rows(query_vec)[0]
        near, probed = table.lists.probe(q)  # the lists VectorTable.scores would probe
        at = np.concatenate([np.arange(ends.bounds[i], ends.bounds[i + 1]) for i in probed.tolist()])
        at = at[np.argsort(ends.rows[at])]  # rows read in row order
        exact = row_products(table.at(ends.rows[at]), q)
        if exact.size:
            np.minimum(near, exact.min(), out=near)
        return near, at, exact

    def _edge_costs(self, graph: _Graph, query_vec: np.ndarray, hybrid_scores: np.ndarray) -> np.ndarray:
        """Eq. 14 for every snapshot edge, then the pseudo edges (all edges priced: for benchmarks and tests)."""
        return graph.pairs.edge_costs(self._slot_costs(graph, query_vec, hybrid_scores))

    # ------------------------------------------------------------------ retrieval

    def _retrieve(self, query_bundle: QueryBundle) -> list[NodeWithScore]:
        index, cfg = self.index, self.config
        question = query_bundle.query_str
        q = self.query_vector(query_bundle)
        with stage("agrag.hybrid"):  # Eq. 20-21
            hyb = hybrid_scores(index, question)
            # ranked once for both uses: the k_r chunks fused with the subgraph's and, without graph retrieval, the answer
            hybrid_rank = top_ranked(hyb, max(cfg.hybrid_top_k, 0 if cfg.graph_retrieval else self.top_k))
        evidence: dict[str, Any] = {"variant": self.variant or "full"}
        if not cfg.graph_retrieval:
            return self._finish([], hybrid_rank, hyb, None, evidence, "")

        with stage("agrag.fact_mapping"):  # Eq. 7-8; the cosines with every fact are Eq. 14's fact costs too
            # the array of every fact text's cosine, when needed, is the best sentence's (computed once)
            fact_sims, mapped = (map_facts(index, q, cfg.fact_top_k, lambda: fact_text_cosines(index, question))
                                 if index.facts else (None, []))
        with stage("agrag.triple_filter"):  # Eq. 9 (an LLM call when there is an llm)
            kept, how = self.filter_facts(question, mapped)
        evidence.update(mapped_facts=[self._fact_json(f, s) for f, s in mapped],
                        kept_facts=[f for f, _ in kept], filter=how)
        if not kept:  # as the authors' code does: no graph evidence, hybrid chunks only
            evidence["fallback"] = "no fact kept"
            return self._finish([], hybrid_rank, hyb, None, evidence, "")

        snap = index.snapshot
        graph = self._graph()
        terminals = sorted({snap.row(k) for f, _ in kept for k in (index.facts[f].subject, index.facts[f].object)})
        with stage("agrag.ppr"):  # Eq. 10-13
            scores_ext = self._ppr_scores(graph, terminals)  # the pseudo node (last) has no influence of its own
            scores = scores_ext[:snap.num_nodes]

        with stage("agrag.steiner"):  # Eq. 14 edge costs (priced where the search reads them), then the Steiner tree
            costs = self._query_costs(graph, q, hyb, fact_sims)
            tree = steiner_tree(costs, terminals, max_entries=cfg.steiner_max_entries,
                                first_join=cfg.steiner_first_join)
        described: dict[tuple, dict] = {}  # the Steiner edges come back in the MCMI subgraph: described once

        def edge_json(u: int, v: int, c: float) -> dict:
            if (u, v, c) not in described:
                described[u, v, c] = self._edge_json(u, v, c, graph, costs)
            return described[u, v, c]

        evidence["steiner_edges"] = [edge_json(u, v, c) for u, v, c in tree]
        if not cfg.mcmi:
            sub_nodes = sorted(set(terminals) | {x for u, v, _ in tree for x in (u, v)})
            sub_edges, ratio, added, stopped = tree, None, [], "no_mcmi"
        else:
            with stage("agrag.mcmi"):  # Eq. 15-17
                result = mcmi_expand(costs, scores_ext, tree, terminals, cfg.mcmi_max_iter, cfg.mcmi_ratio.value)
            sub_nodes, sub_edges, ratio = result.nodes, result.edges, result.ratio
            added, stopped = result.added, result.stopped
        pseudo = snap.num_nodes
        edges_json = [edge_json(u, v, c) for u, v, c in sub_edges if pseudo not in (u, v)]
        evidence.update(
            terminals=[snap.node_ids[t] for t in terminals],
            mcmi_nodes=[snap.node_ids[x] for x in sub_nodes if x != pseudo],
            mcmi_edges=edges_json,
            mcmi_added=[snap.node_ids[x] for x in added if x != pseudo],
            mcmi_ratio=ratio,
            mcmi_stopped=stopped,
        )
        on_graph = self._chunks_on_subgraph(sub_nodes, edges_json, scores)
        return self._finish(on_graph, hybrid_rank, hyb, scores, evidence, self._serialise(edges_json))

    def _hybrid_count(self) -> int:
        """How many hybrid chunks go into the fusion: k_r, or top_k when they are the whole answer (no graph)."""
        return self.config.hybrid_top_k if self.config.graph_retrieval else self.top_k

    def _chunks_on_subgraph(self, nodes: list[int], edges_json: list[dict], scores: np.ndarray) -> list[str]:
        """Passage nodes of the subgraph and chunks stating its facts, by influence (PPR of the passage node)."""
        index, snap = self.index, self.index.snapshot
        chunks = {snap.node_ids[x] for x in nodes if x < snap.num_nodes and snap.node_kind[x] == CHUNK}
        for e in edges_json:
            if e["kind"] == "relation":
                chunks |= index.facts[e["fact_id"]].chunks
        return sorted(chunks, key=lambda c: (-scores[snap.row(c)], c))

    def _finish(self, graph_chunks: list[str], hybrid_rank: np.ndarray, hyb: np.ndarray, scores, evidence: dict,
                subgraph_text: str) -> list[NodeWithScore]:
        order = self.index.chunk_order
        hybrid_chunks = [order[i] for i in hybrid_rank[: self._hybrid_count()]]
        fused: dict[str, float] = {}
        for ranked in (graph_chunks, hybrid_chunks):  # reciprocal rank fusion
            for rank, cid in enumerate(ranked):
                fused[cid] = fused.get(cid, 0.0) + 1.0 / (RRF_K + rank + 1)
        best = sorted(fused, key=lambda c: (-fused[c], c))[: self.top_k]
        graph_set, hybrid_set = set(graph_chunks), set(hybrid_chunks)
        nodes = [
            chunk_node(self.index, c, fused[c], self.method,
                       agrag_source="both" if c in graph_set and c in hybrid_set else "graph" if c in graph_set else "hybrid")
            for c in best
        ]
        evidence["graph_chunks"] = graph_chunks
        evidence["hybrid_chunks"] = hybrid_chunks
        text = subgraph_text or "No reasoning subgraph for this query; the passages come from hybrid retrieval."
        return nodes + [evidence_node(self.method, text, evidence)]

    # ------------------------------------------------------------------ evidence

    def _fact_json(self, fid: str, score: float) -> dict:
        f = self.index.facts[fid]
        return {"id": fid, "subject": f.subject, "predicate": f.predicate, "object": f.object, "score": round(float(score), 6)}

    def _edge_json(self, u: int, v: int, cost: float, graph: _Graph, costs: QueryCosts) -> dict:
        snap = self.index.snapshot
        names = [snap.node_ids[x] if x < snap.num_nodes else PSEUDO for x in (u, v)]
        out = {"u": names[0], "v": names[1], "cost": round(float(cost), 6)}
        edge = costs.best_edge(u, v)  # the cheapest of the parallel edges (the first on ties)
        if edge < 0 or edge >= graph.num_edges:
            out["kind"] = "pseudo"
            return out
        kind = int(snap.edge_kind[edge])
        out["kind"] = EDGE_KIND_NAMES[kind]
        if kind == RELATION:
            f = self.index.facts[self.index.fact_ids[snap.edge_fact[edge]]]
            out.update(fact_id=f.id, subject=f.subject, predicate=f.predicate, object=f.object)
        return out

    def _serialise(self, edges: list[dict]) -> str:
        """Eq. 18: one line per edge, grouped by connected component."""
        parts = DisjointSets()
        for e in edges:
            parts.union(e["u"], e["v"])
        groups: dict[str, list[str]] = {}
        chunks = self.index.chunks
        for e in edges:
            if e["kind"] == "relation":
                line = f"{e['subject']} | {e['predicate']} | {e['object']}"
            elif e["kind"] == "contains":
                chunk, ent = (e["u"], e["v"]) if e["u"] in chunks else (e["v"], e["u"])
                line = f"passage '{chunks[chunk].title or chunk}' | mentions | {ent}"
            else:
                line = f"{e['u']} | similar name to | {e['v']}"
            groups.setdefault(parts.find(e["u"]), []).append(line)
        blocks = [f"Reasoning graph, part {i}:\n" + "\n".join(lines) for i, lines in enumerate(groups.values(), 1)]
        return "\n\n".join(blocks)
