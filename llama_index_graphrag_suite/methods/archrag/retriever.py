"""ArchRAG (Wang et al., 2025): hierarchical search over attributed communities, as a LlamaIndex retriever.

Per query (paper Section 3.2.1):

1. The query vector searches **every** layer of the C-HNSW (entities, then each community layer) for its
   top ``k_per_layer`` (5) items, in one descent from the top layer (Algorithm 2). The authors' code
   searches only layers 0 and 1 by default; the paper searches all, and so does this retriever.
2. At the bottom layer, the relations among the retrieved entities (KG facts whose two ends were both
   retrieved; ``relation_scope="incident"``: at least one end, as the authors' code), scored by the
   cosine of their sentence with the query, at most ``max_relations`` (10, the authors' ``topk_e``).
3. Chunks for recall: every retrieved item maps to chunks: an entity to the chunks that contain it, a
   relation to the chunks that state it, a community to the chunks of all entities under it. A chunk
   scores its **best item score** (the item's cosine with the query); chunks are ranked by that score,
   ties (all chunks of one item) by the chunk's own cosine with the query; the top ``top_k`` are
   returned, then ONE evidence node listing layer -> items with scores (community ids, titles,
   summaries, entities, relations), which is also what adaptive filtering (``langgraph_agents.archrag_filter``)
   reads through :meth:`ArchRAGRetriever.retrieve_items`.

The hierarchy (:class:`ArchRAGHierarchy`) is built on first use and kept as an index artefact
(``index.artefact``): ``index.persist`` saves it beside the index and a loaded index reuses it until the
next insert or delete; pass ``hierarchy=`` to use one saved elsewhere. With ``llm=`` the community summaries are
written by the LLM (index-time cost in ``hierarchy.cost``); without, they are extractive.

Chunk ranking for recall (``chunk_ranking``). ``"dense_boost"`` (default) ranks every chunk by a blend of
its min-max dense and BM25 scores (``sparse_weight`` 0.25 on BM25) plus ``item_weight`` (0.2) x its best item
score (0 for chunks no item maps to): the items re-rank dense/sparse retrieval. ``"best_item"`` is the rule
above: only chunks under a retrieved item, by that item's score. ``"ppr_refine"`` is the authors' ``ppr_refine``
option. It runs personalised PageRank (``ppr_damping`` 0.85, networkx's default) on the index graph, which
holds entities and chunks. The walk restarts from the retrieved entities (by score) and from the entities under
each retrieved community (that community's score shared among them). Chunks are ranked by the PageRank mass
they receive. ``chunk_top_k`` (0, the authors' ``topk_chunk`` default) adds that many chunks from a vanilla
chunk index as items of their own, scored by their cosine. Under ``ppr_refine`` these chunks hold
``chunk_share`` (0.5) of the restart mass.

What each ranking gives LLM-free is printed by ``benchmarks/archrag_signal.py`` and the defaults' sweep by
``benchmarks/tuning.py`` (both part of ``make bench``; BENCHMARKS.md has the tables). On the NER graph, whose
entities are names, the items alone (``best_item``) reach recall@5 59.2 on 2wiki_retrieval101 (39.4 on the
old n-gram graph), still below dense (62.9): communities of co-mentioned names are a weaker signal for choosing
chunks than the chunks' own similarity. The compare row ``dense_boost`` with ``item_weight=0`` in
``tuning.py`` is the control: what the items add over the blend alone.

Settings (``ArchRAGConfig``, ``config.py``) arrive as ``config=``, a preset ``variant=`` or keyword
overrides: ``no_knn`` (hierarchy clustered without KNN augmentation, the paper's ablation),
``entities_only`` (``search_layers=1``: entities and their relations), ``two_layers`` (``search_layers=2``,
what the authors' code searches by default), ``dense_boost`` (``chunk_ranking="dense_boost"``),
``ppr_refine`` (``chunk_ranking="ppr_refine"`` with ``chunk_top_k=3``; a ``chunk_top_k`` given as well wins).
Prompts (``prompts.py``): ``community_summary`` writes the LLM summaries of a hierarchy this retriever
builds; ``filter_analysis`` / ``final_answer`` are read by the adaptive-filtering graph given this retriever.
"""

from __future__ import annotations

import hashlib
import logging
import re
from typing import Any

import numpy as np
from llama_index.core.schema import NodeWithScore, QueryBundle

from ...graph.ppr import personalized_pagerank, transition_matrix
from ...graph.snapshot import RELATION
from ...tracing import stage, traced
from ..base import GraphIndexRetriever, chunk_node, evidence_node
from ..query_scores import bm25_scores, dense_scores, listed_chunks
from ..query_kernels import blended, top_k  # scoring's, as one compiled pass over a large array (the same values)
from .config import ArchRAGConfig, ChunkRanking, RelationScope
from ..shared_graph import ChunkPositions
from .hierarchy import ArchRAGHierarchy
from .prompts import COMMUNITY_SUMMARY_PROMPT, DEFAULT_PROMPTS

log = logging.getLogger(__name__)
VARIANTS = tuple(ArchRAGConfig.PRESETS)
CHUNK_RANKINGS = tuple(r.value for r in ChunkRanking)

__all__ = ["ArchRAGRetriever", "ArchRAGConfig", "ArchRAGHierarchy", "VARIANTS"]


class ArchRAGRetriever(GraphIndexRetriever):
    """ArchRAG hierarchical search (see the module docstring); ``hierarchy=`` uses a prebuilt hierarchy.

    Without ``config=``, a prebuilt hierarchy's recorded config is the starting point (its ``k_per_layer``
    and ``ef`` become this retriever's defaults); the preset and overrides apply on top.
    Score: the chunk's raw score (see ``chunk_ranking``) divided by the top chunk's (top = 1.0).
    """

    method = "archrag"
    config_class = ArchRAGConfig
    default_prompts = DEFAULT_PROMPTS
    uses_llm = True  # an llm= writes the community summaries (a different hierarchy)
    score_meaning = "item-weighted hybrid (or best item / PPR) score relative to the top chunk's (top = 1.0)"
    config: ArchRAGConfig

    def __init__(self, index, top_k: int = 5, *, hierarchy: ArchRAGHierarchy | None = None,
                 config: ArchRAGConfig | None = None, variant: str | None = None, llm=None, **kwargs: Any):
        if config is None and hierarchy is not None:
            config = hierarchy.config
        super().__init__(index, top_k=top_k, config=config, variant=variant, llm=llm, **kwargs)
        if hierarchy is not None and hierarchy.config.augment and not self.config.augment:
            raise ValueError("variant 'no_knn' (augment=False) needs a hierarchy built with augment=False "
                             "(or none, to build one)")
        self._hierarchy = hierarchy
        self._entity_rows_memo: tuple = (None, None, None)

    @property
    def hierarchy(self) -> ArchRAGHierarchy:
        if self._hierarchy is not None:
            return self._hierarchy
        cfg, llm = self.config, self.llm
        # One artefact per summary kind and hierarchy settings (search settings share it); persist()
        # saves it beside the index, so LLM summaries (and the clustering) are paid for once.
        name = f"archrag-{'llm' if llm is not None else 'extractive'}-{cfg.hierarchy_digest()}"
        prompt = self.prompt("community_summary")
        if llm is not None and prompt.get_template() != COMMUNITY_SUMMARY_PROMPT.get_template():
            # a changed summary prompt writes other summaries: its own artefact
            name += "-" + hashlib.sha1(prompt.get_template().encode()).hexdigest()[:8]

        def build() -> ArchRAGHierarchy:
            with stage("archrag.hierarchy"):  # Algorithms 1 and 3, on first use after an insert or delete
                return ArchRAGHierarchy.build(self.index, cfg, llm, summary_prompt=prompt)

        return self.index.artefact(name, build, load=lambda folder: ArchRAGHierarchy.load(folder, self.index))

    # ------------------------------------------------------------------ search

    @traced("archrag.hierarchical_search")  # Algorithm 2
    def search(self, query_vec: np.ndarray) -> list[tuple[np.ndarray, np.ndarray]]:
        """Hierarchical search: (rows, cosines) per layer searched, index = layer."""
        h, cfg = self.hierarchy, self.config
        if cfg.search_layers == 1 or h.num_layers == 1:  # entities only: search layer 0 directly, no descent
            return [h.chnsw.search_layer(query_vec, 0, cfg.k_per_layer, ef=cfg.ef)]
        results = h.chnsw.search_all_layers(query_vec, cfg.k_per_layer, ef=cfg.ef)
        return results if cfg.search_layers is None else results[: cfg.search_layers]

    def relations_among(self, entity_rows: np.ndarray, query_vec: np.ndarray) -> list[tuple[str, float]]:
        """Relations of the retrieved entities, best sentence cosine first (at most ``max_relations``).

        ``relation_scope="between"``: facts whose two ends were both retrieved (the paper's "relationships
        between connected retrieved entities"); ``"incident"``: facts with at least one retrieved end (the
        authors' code: relations whose source entity was retrieved, ranked by cosine, top 10).
        """
        index, h = self.index, self.hierarchy
        snap = index.snapshot
        rows = {snap.row(k) for k in (h.entity_ids[r] for r in entity_rows.tolist()) if snap.has(k)}
        found: dict[int, None] = {}  # fact positions in index.fact_ids
        for r in sorted(rows):
            nbrs, edges = snap.neighbours_of(r)
            keep = snap.edge_kind[edges] == RELATION
            if self.config.relation_scope == RelationScope.BETWEEN:
                keep &= np.isin(nbrs, list(rows)) & (nbrs != r)
            for e in edges[keep].tolist():
                found[int(snap.edge_fact[e])] = None
        max_relations = self.config.max_relations
        if not found or max_relations == 0:
            return []
        positions = np.fromiter(found, np.int64, len(found))
        sims = index.fact_vectors.scores_at(query_vec, index.fact_text_rows[positions])
        order = np.lexsort((positions, -sims))[:max_relations]
        return [(index.fact_ids[positions[i]], float(sims[i])) for i in order.tolist()]

    def retrieve_items(self, query: str | QueryBundle) -> list[dict[str, Any]]:
        """Every retrieved item (entities, relations, communities of every layer) with its score.

        Each item: ``{"id", "kind" ("entity" | "relation" | "community"), "layer", "score", "title",
        "content", "chunks"}``; ``chunks`` are positions in ``index.chunk_order``. Best first per layer.
        """
        bundle = query if isinstance(query, QueryBundle) else QueryBundle(query_str=query)
        with self.reading():  # an entry point of its own (the LangGraph filter graph calls it)
            return self._items(self.query_vector(bundle))

    def _items(self, q: np.ndarray) -> list[dict[str, Any]]:
        h, index = self.hierarchy, self.index
        entity_chunks, community_chunks = h.chunk_maps(index)
        position = ChunkPositions(index)
        items: list[dict[str, Any]] = []
        for layer, (rows, sims) in enumerate(self.search(q)):
            for row, sim in zip(rows.tolist(), sims.tolist()):
                if layer == 0:
                    key = h.entity_ids[row]
                    rec = index.entities[key]
                    items.append({"id": key, "kind": "entity", "layer": 0, "row": row, "score": float(sim), "title": rec.surface,
                                  "content": self._entity_text(key),
                                  "chunks": entity_chunks[row].indices.tolist()})
                else:
                    items.append({"id": f"L{layer}-C{row}", "kind": "community", "layer": layer, "row": row, "score": float(sim),
                                  "title": h.titles[layer - 1][row], "content": h.summaries[layer - 1][row],
                                  "size": int(np.count_nonzero(h.entity_community[layer - 1] == row)),
                                  "chunks": community_chunks[layer - 1][row].indices.tolist()})
            if layer == 0:
                with stage("archrag.relations"):
                    relations = self.relations_among(rows, q)
                for fid, sim in relations:
                    f = index.facts[fid]
                    items.append({"id": fid, "kind": "relation", "layer": 0, "score": sim,
                                  "title": f"{f.subject} | {f.predicate} | {f.object}", "content": f.text,
                                  "chunks": sorted(position[c] for c in f.chunks if c in position)})
        return items

    def _entity_text(self, key: str, sentences: int = 3) -> str:
        """The entity's name and a few sentences it takes part in (its attribute text)."""
        index = self.index
        rec = index.entities[key]
        texts: dict[str, None] = {}
        for cid in sorted(rec.chunks):
            for sentence in _sentences_with(index.chunks[cid].text, rec.surface):
                texts[sentence] = None
                if len(texts) >= sentences:
                    break
            if len(texts) >= sentences:
                break
        return f"{rec.surface}: " + " ".join(texts) if texts else rec.surface

    # ------------------------------------------------------------------ retrieval

    def _retrieve(self, query_bundle: QueryBundle) -> list[NodeWithScore]:
        index, cfg = self.index, self.config
        q = self.query_vector(query_bundle)
        items = self._items(q)
        dense = dense_scores(index, query_bundle.query_str)
        order = index.chunk_order
        if cfg.chunk_top_k:  # the authors' topk_chunk: chunks of a vanilla chunk index are items too
            for c in np.argsort(-dense, kind="stable")[: cfg.chunk_top_k].tolist():
                items.append({"id": order[c], "kind": "chunk", "layer": 0, "score": float(dense[c]),
                              "title": index.chunks[order[c]].title, "content": index.chunks[order[c]].text, "chunks": [c]})
        with stage("archrag.chunk_ranking"):
            return self._rank(query_bundle, items, dense)

    def _rank(self, query_bundle: QueryBundle, items: list[dict], dense: np.ndarray) -> list[NodeWithScore]:
        """The chunks the retrieved items point to, ranked by ``chunk_ranking``, and the evidence node."""
        index, cfg, order = self.index, self.config, self.index.chunk_order
        best, best_item = self._chunk_scores(items, dense)
        if listed_chunks(index):  # the items' chunks are ranked by their cosine too: exact, not estimated
            candidates = np.flatnonzero(np.isfinite(best))
            dense = dense.copy()
            dense[candidates] = index.chunk_dense_at(self.query_vector(query_bundle), candidates)
        if cfg.chunk_ranking == ChunkRanking.PPR_REFINE:
            score = self._ppr_refine(items)
            ranked = np.lexsort((np.arange(dense.size), -dense, -score))[: self.top_k]
        elif cfg.chunk_ranking == ChunkRanking.DENSE_BOOST:
            base = blended(dense, lambda: bm25_scores(index, query_bundle.query_str), cfg.sparse_weight)
            score = base + cfg.item_weight * np.where(np.isfinite(best), best, 0.0)
            ranked = top_k(score, self.top_k)  # the sort of every chunk by (-score, position), cut at top_k
        else:
            candidates = np.flatnonzero(np.isfinite(best))
            ranked = candidates[np.lexsort((candidates, -dense[candidates], -best[candidates]))][: self.top_k]
            score = best
        nodes = [chunk_node(index, order[c], score[c], self.method,
                            archrag_item=items[best_item[c]]["id"] if best_item[c] >= 0 else None,
                            archrag_layer=items[best_item[c]]["layer"] if best_item[c] >= 0 else None)
                 for c in ranked.tolist()]
        return nodes + [self._evidence(items, [order[c] for c in ranked.tolist()])]

    def _chunk_scores(self, items: list[dict], dense: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Each chunk's best item score and which item gave it (-inf / -1 for chunks no item maps to)."""
        best = np.full(dense.size, -np.inf)
        best_item = np.full(dense.size, -1)
        for i, item in enumerate(items):
            cols = np.asarray(item["chunks"], np.int64)
            if cols.size:
                better = item["score"] > best[cols]
                best[cols[better]] = item["score"]
                best_item[cols[better]] = i
        return best, best_item

    def _ppr_refine(self, items: list[dict]) -> np.ndarray:
        """Each chunk's personalised-PageRank mass, restarting from the retrieved items (the authors' ``ppr_refine``).

        The walk runs on the index graph (entities and chunks, ``contains`` and relation edges). Restart mass:
        ``1 - chunk_share`` on the items (an entity by its score, a community by its score spread evenly over the
        entities under it; negative scores count 0), ``chunk_share`` on the ``chunk_top_k`` vanilla chunks by
        their cosine. Chunks the walk never reaches score 0 (ranked by their own cosine after the rest).
        """
        index, h, cfg = self.index, self.hierarchy, self.config
        snap = index.snapshot
        transition, chunk_rows = index.cached("archrag.ppr_refine", self._ppr_graph)
        entity_rows = self._entity_rows(h)
        on_items, on_chunks = np.zeros(snap.num_nodes), np.zeros(snap.num_nodes)
        for item in items:
            weight = max(item["score"], 0.0)
            if item["kind"] == "entity":
                if entity_rows[item["row"]] >= 0:
                    on_items[entity_rows[item["row"]]] += weight
            elif item["kind"] == "community":
                members = entity_rows[np.flatnonzero(h.entity_community[item["layer"] - 1] == item["row"])]
                members = members[members >= 0]
                if members.size:
                    on_items[members] += weight / members.size
            elif item["kind"] == "chunk":
                on_chunks[chunk_rows[item["chunks"][0]]] += weight
        parts = [(p, w) for p, w in ((on_items, 1.0 - cfg.chunk_share), (on_chunks, cfg.chunk_share)) if p.sum() > 0 and w > 0]
        if not parts:  # nothing to restart from (every score <= 0): no graph signal
            return np.zeros(chunk_rows.size)
        restart = sum(w * p / p.sum() for p, w in parts)
        return personalized_pagerank(transition, restart, damping=cfg.ppr_damping, tol=1e-6)[chunk_rows]

    def _ppr_graph(self) -> tuple:
        """The walk's graph (per index snapshot): transition matrix, and the graph row of each chunk position."""
        snap = self.index.snapshot
        return transition_matrix(snap.adjacency("ones")), snap.rows(self.index.chunk_order)

    def _entity_rows(self, h: ArchRAGHierarchy) -> np.ndarray:
        """Graph row of each hierarchy entity row (-1 if the graph lacks it), per (hierarchy, snapshot)."""
        snap = self.index.snapshot
        memo_h, memo_snap, _ = self._entity_rows_memo
        if memo_h is not h or memo_snap is not snap:  # identity: both are replaced, never mutated, on change
            rows = snap.rows_or_missing(h.entity_ids)
            self._entity_rows_memo = (h, snap, rows)
        return self._entity_rows_memo[2]

    def _evidence(self, items: list[dict], chunks: list[str]) -> NodeWithScore:
        h, cfg = self.hierarchy, self.config
        layers: dict[int, list[dict]] = {}
        for item in items:
            layers.setdefault(item["layer"], []).append(
                {k: (round(v, 6) if k == "score" else v) for k, v in item.items() if k != "chunks"})
        lines = []
        for layer in sorted(layers):
            label = "entities, relations and chunks" if layer == 0 else f"communities, level {layer}"
            lines.append(f"Layer {layer} ({label}):")
            for it in layers[layer]:
                text = it["content"] if it["kind"] != "entity" else it["content"]
                lines.append(f"  [{it['kind']} {it['id']}] score {it['score']:.3f} - {it['title']}: {text[:300]}")
        evidence = {
            "variant": self.variant or "full", "k_per_layer": cfg.k_per_layer, "summary_kind": h.summary_kind,
            "chunk_ranking": cfg.chunk_ranking.value, "chunk_top_k": cfg.chunk_top_k,
            **({"chunk_share": cfg.chunk_share, "ppr_damping": cfg.ppr_damping}
               if cfg.chunk_ranking == ChunkRanking.PPR_REFINE else {}),
            "layers_searched": len(layers), "communities_per_layer": h.communities_per_layer(),
            "layers": [{"layer": l, "items": layers[l]} for l in sorted(layers)], "chunks": chunks,
        }
        return evidence_node(self.method, "\n".join(lines), evidence)


def _sentences_with(text: str, name: str) -> list[str]:
    lowered = name.lower()
    return [s.strip() for s in re.split(r"(?<=[.!?])\s+", text) if lowered in s.lower()]
