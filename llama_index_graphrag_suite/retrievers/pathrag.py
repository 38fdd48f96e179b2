"""PathRAG (Chen et al.): key relational paths between query-related nodes, as a LlamaIndex retriever.

Per query (paper, Methodology):

1. Node retrieval: keywords from the query, then the top ``num_nodes`` (N = 40) entity nodes by cosine
   of their name embedding with the keywords, taking each keyword's next best node in turn until N
   distinct nodes are found. With an LLM, the keyword prompt gives high- and low-level keywords
   (low-level first, as the authors' code searches entities with them); an unreadable answer or a
   failed request falls back to the LLM-free keywords. LLM-free: the query's n-gram candidates scored
   against the index's entity statistics (Eq. 2 of AGRAG, i.e. IDF for a query): phrases that occur
   in the corpus but in at most ``keyword_max_df`` of its chunks, rarest (then longest) first, at most
   ``max_keywords``; then the whole query. Key phrases are embedded in one batch as texts (as the
   entity names were); the whole query reuses the query embedding.
2. Path retrieval (Eq. 2-4, :mod:`..graph.flow_paths`): flow-based pruning from every retrieved node
   with decay ``alpha`` (0.7) and early stop ``theta`` (0.01; the paper gives no value: at 0.01 a
   node with S = 0.14, a neighbour of a start with 5 neighbours, propagates while it has at most 14
   neighbours); paths to the other retrieved nodes scored by Eq. 4; ``paths_per_pair`` (1) per pair,
   then the global top ``num_paths`` (K = 15). Traversed edges (``edge_kinds``): relation edges
   (facts) only by default. Synonym edges are optional: between nodes retrieved for the same keyword
   they make one-hop "similar name" paths that outrank every real relation. Passage (``contains``)
   edges are never traversed: PathRAG's indexing graph has entities and relations, texts hang on them.
3. Chunks. The chunks behind a path are those its text comes from: the chunks stating its edges'
   facts and the chunk of each node's description. Default ``chunk_ranking="combined"``: every
   chunk's dense cosine with the query plus ``path_weight`` x (best reliability of a path it is
   behind / reliability of the best path), top ``top_k``. On the LLM-free statistical graph the paths
   alone are weak evidence for retrieval (``paths_only`` recall@5 26 / 17 on the 2wiki / musique dev
   indexes, vs dense 63 / 62), so their reliability re-ranks near-ties of dense relevance
   (``benchmarks/tuning.py``: 0.005 keeps both sets at or above dense; 0.01-0.02 tie on 2wiki and lose on musique).
   ``chunk_ranking="paths_first"`` is the literal reading: chunks behind paths first, by best
   reliability then cosine, filled with the densest remaining chunks. ``variant="paths_only"``:
   only chunks behind paths (may return fewer than ``top_k``). Chunk scores are the combined score,
   or the reliability (path chunks) / cosine (dense fill) for the other two.
4. Evidence: one node holding the paths (nodes, edges, resources, reliability) and their text (Eq. 5):
   each node's description then each edge's, in path order. Node descriptions come from the
   PathRAG extractor's ``description`` property when the graph was built with it; LLM-free, from
   the first sentence mentioning the entity (in its own page when it has one). Edge descriptions are
   the facts' texts (the extractor's relation description, or the co-occurrence sentence).

Path prompt (Eq. 6, :func:`render_paths`): the query first, then the paths in ascending reliability so
the most reliable is last; a token budget drops the least reliable paths first. Ablations of the
paper's Table 2-3: ``order="random"`` or ``"hop_first"``, ``flat=True`` (deduplicated nodes and edges
instead of paths). ``variant=`` names them for the bench (``random_order``, ``hop_first``, ``flat``:
prompt only, retrieval unchanged) plus ``paths_only`` (a retrieval ablation, see 3).
"""

from __future__ import annotations

import hashlib
import logging
import random
from dataclasses import dataclass
from typing import Any, Sequence

import numpy as np
from llama_index.core.schema import NodeWithScore, QueryBundle

from ..extractors.entity_stats import find_mentions
from ..graph.flow_paths import FlowGraph, Path, flow_paths
from ..graph.snapshot import RELATION, SYNONYM
from ..llm.errors import LLMUnavailableError
from ..text import split_sentences
from .base import GraphIndexRetriever, chunk_node, evidence_node
from .scoring import top_k as top_indices

log = logging.getLogger(__name__)
VARIANTS = ("random_order", "hop_first", "flat", "paths_only")
ORDERS = ("ascending", "random", "hop_first")
PATHS_HEADER = "Relational paths, least reliable first (the last path is the most reliable):"


@dataclass
class RenderedPath:
    """A path with its text (Eq. 5); what the prompt orders and truncates."""

    text: str
    reliability: float
    hops: int


def render_paths(paths: Sequence[RenderedPath], order: str = "ascending", max_tokens: int | None = 5000,
                 flat: bool = False, seed: int = 0, question: str | None = None) -> tuple[str, list[int]]:
    """The path part of the PathRAG prompt (Eq. 6) and the kept paths' positions in ``paths``.

    ``paths`` come most reliable first. The budget keeps the most reliable paths whose texts fit in
    ``max_tokens`` (counted with LlamaIndex's tokenizer), dropping the least reliable first. Orders:
    ``ascending`` (Eq. 6: reliability ascending, most reliable last), ``random`` (seeded shuffle),
    ``hop_first`` (more hops first, so the shortest paths end the prompt; ties by reliability
    ascending). ``flat`` lists the kept paths' distinct lines (nodes and edges) once each, without
    the path structure. With ``question``, the query is put first, as Eq. 6 writes the prompt.
    """
    from ..llm.usage import count_tokens

    if order not in ORDERS:
        raise ValueError(f"unknown path order {order!r}; choose from {', '.join(ORDERS)}")
    kept, used = [], 0
    for i, p in enumerate(paths):
        cost = count_tokens(p.text) + 1
        if max_tokens is not None and used + cost > max_tokens:
            continue  # a shorter, less reliable path may still fit
        kept.append(i)
        used += cost
    if order == "ascending":
        kept.sort(key=lambda i: (paths[i].reliability, -i))
    elif order == "hop_first":
        kept.sort(key=lambda i: (-paths[i].hops, paths[i].reliability, -i))
    else:
        random.Random(seed).shuffle(kept)
    if flat:
        lines = dict.fromkeys(line.strip() for i in kept for line in paths[i].text.splitlines()[1:])
        body = "Entities and relations:\n" + "\n".join(lines)
    else:
        body = PATHS_HEADER + "\n\n" + "\n\n".join(paths[i].text for i in kept)
    if not kept:
        body = "No relational path connects the entities of the question."
    return (f"Question: {question}\n\n{body}" if question is not None else body), kept


@dataclass
class _Graph:
    """Per-snapshot structures (cached on the index)."""

    flow: FlowGraph  # entity graph: relation + synonym edges, parallel edges merged
    entity_rows: np.ndarray  # snapshot row of each entity vector-table row


class PathRAGRetriever(GraphIndexRetriever):
    """PathRAG retrieval over our index or a plain ``PropertyGraphIndex`` (see the module docstring)."""

    method = "pathrag"

    def __init__(
        self,
        index,
        top_k: int = 5,
        llm=None,
        num_nodes: int = 40,
        num_paths: int = 15,
        alpha: float = 0.7,
        theta: float = 0.01,
        paths_per_pair: int = 1,
        max_hops: int | None = None,
        max_keywords: int = 8,
        keyword_max_df: float = 0.005,
        max_path_tokens: int | None = 5000,
        max_edge_texts: int = 2,
        order: str = "ascending",
        flat: bool = False,
        edge_kinds: Sequence[str] = ("relation",),
        chunk_ranking: str = "combined",
        path_weight: float = 0.005,
        variant: str | None = None,
        callback_manager=None,
        verbose: bool = False,
    ):
        if variant is not None and variant not in VARIANTS:
            raise ValueError(f"unknown PathRAG variant {variant!r}; choose from {', '.join(VARIANTS)}")
        if order not in ORDERS:
            raise ValueError(f"unknown path order {order!r}; choose from {', '.join(ORDERS)}")
        if num_nodes < 1 or num_paths < 1 or paths_per_pair < 1 or max_keywords < 1 or max_edge_texts < 1:
            raise ValueError("num_nodes, num_paths, paths_per_pair, max_keywords and max_edge_texts must be >= 1")
        if not 0.0 < alpha <= 1.0 or theta < 0.0:
            raise ValueError("alpha must be in (0, 1] and theta >= 0")
        if chunk_ranking not in ("combined", "paths_first"):
            raise ValueError(f"chunk_ranking must be 'combined' or 'paths_first', got {chunk_ranking!r}")
        if path_weight < 0:
            raise ValueError("path_weight must be >= 0")
        self.chunk_ranking, self.path_weight = chunk_ranking, path_weight
        kinds = {"relation": RELATION, "synonym": SYNONYM}
        if not edge_kinds or any(k not in kinds for k in edge_kinds):
            raise ValueError(f"edge_kinds must name some of {sorted(kinds)}, got {list(edge_kinds)}")
        self.edge_kinds = tuple(edge_kinds)
        self._edge_kind_codes = [kinds[k] for k in edge_kinds]
        self.llm = llm
        self.num_nodes, self.num_paths = num_nodes, num_paths
        self.alpha, self.theta = alpha, theta
        self.paths_per_pair, self.max_hops = paths_per_pair, max_hops
        if not 0.0 < keyword_max_df <= 1.0:
            raise ValueError("keyword_max_df must be in (0, 1]")
        self.keyword_max_df = keyword_max_df
        self.max_keywords, self.max_path_tokens, self.max_edge_texts = max_keywords, max_path_tokens, max_edge_texts
        self.order = {"random_order": "random", "hop_first": "hop_first"}.get(variant or "", order)
        self.flat = flat or variant == "flat"
        self.variant = variant
        super().__init__(index, top_k=top_k, callback_manager=callback_manager, verbose=verbose)

    def as_query_engine(self, llm, streaming: bool = False, **kwargs):
        """A ``RetrieverQueryEngine`` with the path prompt (Eq. 6): the question first, the passages, then
        the paths in ascending reliability so the most reliable path ends the prompt."""
        from ..entrypoints import build_query_engine
        from ..prompts.pathrag import PATH_QA_PROMPT

        kwargs.setdefault("text_qa_template", PATH_QA_PROMPT)
        return build_query_engine(self, llm, streaming=streaming, evidence="last", **kwargs)

    # ------------------------------------------------------------------ per-snapshot structures

    def _graph(self) -> _Graph:
        def build() -> _Graph:
            snap, index = self.index.snapshot, self.index
            entity_edges = np.flatnonzero(np.isin(snap.edge_kind, self._edge_kind_codes))
            flow = FlowGraph.from_edges(snap.num_nodes, snap.edge_src[entity_edges], snap.edge_dst[entity_edges], entity_edges)
            ids = index.entity_vectors.ids if index.entity_vectors is not None else []
            rows = np.array([snap.row(k) if snap.has(k) else -1 for k in ids], np.int64)
            return _Graph(flow, rows)

        return self.index.cached(f"pathrag.graph.{'+'.join(self.edge_kinds)}", build)

    # ------------------------------------------------------------------ step 1: keywords and nodes

    def keywords(self, question: str) -> tuple[list[str], str]:
        """Query keywords and where they came from (``llm``, ``statistical`` or a fallback note)."""
        if self.llm is not None:
            found = self._llm_keywords(question)
            if found:
                return found[: self.max_keywords] + [question], "llm"
            how = "llm_unreadable_statistical"
        else:
            how = "statistical"
        return self._statistical_keywords(question) + [question], how

    def _statistical_keywords(self, question: str) -> list[str]:
        """LLM-free key phrases: the query's n-gram candidates that occur in the corpus, by their entity
        score against the index's statistics (Eq. 2; in a query every count is 1, so this is IDF:
        rarer first), skipping phrases inside an already chosen one and phrases in more than
        ``keyword_max_df`` of the chunks (and more than 5; generic words such as "film" or "born" pull in generic nodes)."""
        stats = self.index._statistics()
        max_df = max(self.keyword_max_df * stats.n_chunks, 5.0)  # small corpora keep their names
        chosen: list[tuple[str, str]] = []
        # Equal scores (equal document frequency): the longer phrase first, so "Grey Harbour" beats "Grey".
        for cand in sorted(stats.score(question), key=lambda c: (-round(c.score, 12), -c.key.count(" "), c.key)):
            df = stats.doc_freq.get(cand.key, 0)
            if df < 1 or df > max_df:
                continue  # never in the corpus (no name the graph holds), or too common to be specific
            if any(f" {cand.key} " in f" {key} " for key, _ in chosen):
                continue
            chosen.append((cand.key, cand.surface))
            if len(chosen) == self.max_keywords:
                break
        return [surface for _, surface in chosen]

    def _llm_keywords(self, question: str) -> list[str]:
        from ..llm.json_repair import parse_json_lenient
        from ..prompts.pathrag import KEYWORDS_PROMPT

        try:
            answer = self.llm.predict(KEYWORDS_PROMPT, question=question)
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
        from ..index.vectors import normalize_rows

        if not phrases:
            return np.zeros((0, 1), np.float32)
        return normalize_rows(np.asarray(self.index.embed_model.get_text_embedding_batch(phrases), np.float32))

    def retrieve_nodes(self, keywords: Sequence[str], question: str | None = None) -> list[tuple[int, float]]:
        """Top ``num_nodes`` entity rows: each keyword's next best entity in turn (cosine of names).
        ``question``, when it is among the keywords, is embedded as a query (cached with the dense search)."""
        index, graph = self.index, self._graph()
        if index.entity_vectors is None or not len(index.entity_vectors):
            return []
        # One batched forward pass for the key phrases (names are embedded as texts, like the entity
        # names they are compared with); the whole query reuses the query vector.
        phrases = [kw for kw in keywords if kw != question]
        vectors = list(self._phrase_vectors(phrases))
        if question in keywords:
            vectors.append(index.embed_query(question))
        rankings = []
        for vec in vectors:
            rows, sims = index.entity_vectors.search(vec, self.num_nodes)
            rankings.append(list(zip(graph.entity_rows[rows].tolist(), sims.tolist())))
        chosen: dict[int, float] = {}
        for rank in range(self.num_nodes):
            for ranking in rankings:
                if rank < len(ranking) and ranking[rank][0] >= 0 and ranking[rank][0] not in chosen:
                    chosen[ranking[rank][0]] = ranking[rank][1]
                    if len(chosen) == self.num_nodes:
                        return list(chosen.items())
        return list(chosen.items())

    # ------------------------------------------------------------------ retrieval

    def _retrieve(self, query_bundle: QueryBundle) -> list[NodeWithScore]:
        index, snap = self.index, self.index.snapshot
        question = query_bundle.query_str
        q = self.query_vector(query_bundle)
        dense = index.chunk_dense_scores(q)
        keywords, how = self.keywords(question)
        nodes = self.retrieve_nodes(keywords, question)
        search = flow_paths(self._graph().flow, [r for r, _ in nodes], alpha=self.alpha, theta=self.theta,
                            top_k=self.num_paths, paths_per_pair=self.paths_per_pair, max_hops=self.max_hops)
        paths_json = [self._path_json(p) for p in search.paths]
        path_ranked, best = self._path_chunks(paths_json, dense)
        chunk_ids, source, scores = self._rank_chunks(path_ranked, best, dense)
        results = [chunk_node(index, c, scores[c], self.method, pathrag_source=source[c]) for c in chunk_ids]
        rendered = [RenderedPath(p["text"], p["reliability"], p["hops"]) for p in paths_json]
        text, kept = render_paths(rendered, self.order, self.max_path_tokens, self.flat,
                                  seed=int(hashlib.sha1(question.encode()).hexdigest()[:8], 16))
        evidence: dict[str, Any] = {
            "variant": self.variant or "full",
            "keywords": keywords,
            "keywords_from": how,
            "nodes": [{"id": snap.node_ids[r], "score": round(s, 6)} for r, s in nodes],
            "paths": paths_json,
            "prompt_paths": kept,
            "order": self.order,
            "flat": self.flat,
            "candidate_paths": search.candidates,
            "nodes_touched": search.touched,
            "nodes_alive": search.alive,
            "chunks": [{"id": c, "from": source[c], "score": round(scores[c], 6),
                        "path_reliability": round(best[c], 6) if c in best else None} for c in chunk_ids],
            "params": {"N": self.num_nodes, "K": self.num_paths, "alpha": self.alpha, "theta": self.theta,
                       "paths_per_pair": self.paths_per_pair, "max_hops": self.max_hops,
                       "chunk_ranking": self.chunk_ranking, "path_weight": self.path_weight},
        }
        return results + [evidence_node(self.method, text, evidence)]

    def _rank_chunks(self, path_ranked: list[str], best: dict[str, float], dense: np.ndarray) -> tuple[list[str], dict[str, str], dict[str, float]]:
        """Final chunk order and scores (see the module docstring, step 3) and where each chunk came from."""
        order, position = self.index.chunk_order, self._chunk_positions()
        if self.variant == "paths_only":
            ranked = path_ranked[: self.top_k]
            return ranked, {c: "path" for c in ranked}, {c: best[c] for c in ranked}
        if self.chunk_ranking == "paths_first":
            ranked = path_ranked[: self.top_k]
            scores = {c: best[c] for c in ranked}
            for i in top_indices(dense, self.top_k + len(ranked)):
                if len(ranked) < self.top_k and order[i] not in scores:
                    ranked.append(order[i])
                    scores[order[i]] = float(dense[i])
        else:  # dense cosine plus path support: path_weight x best reliability / the best path's reliability
            combined = np.asarray(dense, np.float64).copy()
            top = max(best.values(), default=1.0)
            for c, rel in best.items():
                combined[position[c]] += self.path_weight * rel / top
            ranked = [order[i] for i in top_indices(combined, self.top_k)]
            scores = {c: float(combined[position[c]]) for c in ranked}
        return ranked, {c: "path" if c in best else "dense" for c in ranked}, scores

    def _chunk_positions(self) -> dict[str, int]:
        return self.index.chunk_position

    def _path_chunks(self, paths: list[dict], dense: np.ndarray) -> tuple[list[str], dict[str, float]]:
        """The chunks behind the paths' texts (the chunks stating each edge's facts and the chunk each node
        description comes from), by the best reliability of a path they support, then dense cosine."""
        facts, position = self.index.facts, self._chunk_positions()
        best: dict[str, float] = {}
        for p in paths:
            behind = {c for edge in p["edges"] for fact in edge["facts"] for c in facts[fact["id"]].chunks}
            behind.update(c for key in p["nodes"] for c in self._node_source(key)[1])
            for c in behind:
                best[c] = max(best.get(c, -np.inf), p["reliability"])
        ranked = sorted(best, key=lambda c: (-best[c], -float(dense[position[c]]), c))
        return ranked, best

    # ------------------------------------------------------------------ path text (Eq. 5)

    def _path_json(self, path: Path) -> dict:
        snap = self.index.snapshot
        nodes = [snap.node_ids[v] for v in path.nodes]
        edges = [self._edge_json(u, v) for u, v in zip(path.nodes, path.nodes[1:])]
        lines = [f"Path ({path.hops} hop{'s' if path.hops != 1 else ''}, reliability {path.reliability:.4f}):"]
        for i, key in enumerate(nodes):
            lines.append(f"  {self._node_text(key)}")
            if i < len(edges):
                lines.append(f"  {self._edge_text(edges[i])}")
        return {"nodes": nodes, "edges": edges, "resources": [round(r, 6) for r in path.resources],
                "reliability": round(path.reliability, 6), "hops": path.hops, "text": "\n".join(lines)}

    def _edge_json(self, u: int, v: int) -> dict:
        """Every snapshot edge joining u and v: its facts (relation edges) or its synonym score."""
        index, snap = self.index, self.index.snapshot
        rows, eids = snap.neighbours_of(u)
        out: dict[str, Any] = {"u": snap.node_ids[u], "v": snap.node_ids[v], "facts": []}
        for e in eids[rows == v].tolist():
            if snap.edge_kind[e] == RELATION:
                f = index.facts[index.fact_ids[snap.edge_fact[e]]]
                out["facts"].append({"id": f.id, "subject": f.subject, "predicate": f.predicate, "object": f.object, "text": f.text})
            elif snap.edge_kind[e] == SYNONYM:
                out["synonym"] = round(float(snap.edge_weight[e]), 6)
        out["kind"] = "relation" if out["facts"] else "synonym"
        return out

    def _edge_text(self, edge: dict) -> str:
        if not edge["facts"]:
            return f"-[similar name, cosine {edge.get('synonym', 0.0):.2f}]->"
        texts = list(dict.fromkeys(f["text"] for f in edge["facts"]))[: self.max_edge_texts]
        label = edge["facts"][0]["predicate"]
        return f"-[{label}]-> " + " ".join(texts)

    def _node_text(self, key: str) -> str:
        return self._node_source(key)[0]

    def _node_source(self, key: str) -> tuple[str, tuple[str, ...]]:
        """The node's text t_v and the chunks it comes from (memoised per snapshot)."""
        memo = self.index.cached("pathrag.node_source", dict)
        if key not in memo:
            ent = self.index.entities[key]
            info = self._stored_entity(key)
            kind = f" ({info['entity_type']})" if info.get("entity_type") else ""
            if info.get("description"):  # the PathRAG extractor's merged description, from every chunk of the entity
                description, chunks = str(info["description"]), tuple(sorted(ent.chunks))
            else:
                description, chunks = self._entity_sentence(key)
            text = f"{ent.surface}{kind}: {description}" if description else f"{ent.surface}{kind}"
            memo[key] = (text, chunks)
        return memo[key]

    def _stored_entity(self, key: str) -> dict:
        """The entity's properties in the property graph store (the PathRAG extractor's description and type)."""
        store = self.index.property_graph_store
        graph = getattr(store, "graph", None)
        node = graph.nodes.get(key) if graph is not None else next(iter(store.get(ids=[key])), None)
        return dict(node.properties) if node is not None else {}

    def _entity_sentence(self, key: str) -> tuple[str, tuple[str, ...]]:
        """LLM-free description: the first sentence mentioning the entity, in its own page (a chunk titled
        with its name) if it has one, and that chunk."""
        index = self.index
        ent = index.entities[key]
        chunks = sorted(ent.chunks, key=lambda c: (index.chunks[c].title.lower() != ent.surface.lower(), c))
        for cid in chunks[:3]:
            text = index.chunks[cid].text
            sentences = split_sentences(text)
            for mention in find_mentions(text, {key}, index.config.max_ngram):
                start, end = sentences[mention.sentence]
                sentence = " ".join(text[start:end].split())
                if len(sentence.split()) > len(key.split()):  # not a title line holding just the name
                    return sentence, (cid,)
        return "", ()
