"""From the carried evidence to chunks and text: provenance, chunk ranking, LLM-free sufficiency, rendering.

Evidence chunks: stages 1-2 give graph evidence (edges, paths); its provenance chunks are the chunks
that state its relation edges and the passage nodes it touches. Stage 3 gives π(top-L).

Every function takes the index, the per-snapshot :class:`~.stages.A2RAGGraph`, the config and the
:class:`~.stages.RetrievalState`; none changes the state except for the memo of :func:`evidence_chunks`.
"""

from __future__ import annotations

import re

import numpy as np

from ...graph.disjoint_sets import DisjointSets
from ...graph.snapshot import CONTAINS, RELATION, SYNONYM
from ...index.bm25 import bm25_tokens
from ..query_scores import top_ranked
from ..scoring import minmax
from .config import A2RAGConfig, ChunkRanking, GlobalOrder
from .seeds import stem
from .stages import A2RAGGraph, RetrievalState

__all__ = ["edge_json", "evidence_chunks", "heuristic_sufficient", "hop_chunks", "rank_chunks", "serialise",
           "trace_of"]

RRF_K = 60  # reciprocal-rank fusion constant (Cormack et al.)


def evidence_chunks(index, g: A2RAGGraph, st: RetrievalState) -> dict[int, int]:
    """Provenance of the graph evidence: chunk position -> number of seeds whose evidence it supports."""
    size = (len(st.nodes), len(st.edges), len(st.ppr_chunks))  # evidence only grows: size identifies it
    if st.support_memo[0] == size:
        return st.support_memo[1]
    snap = index.snapshot
    support: dict[int, set] = {}
    seed_rows = {s.row for s in st.seeds}
    for e in st.edges:
        u, v = int(snap.edge_src[e]), int(snap.edge_dst[e])
        kind = snap.edge_kind[e]
        chunks: list[int] = []
        if kind == RELATION:
            chunks = [int(g.chunk_pos[snap.row(c)]) for c in index.facts[index.fact_ids[snap.edge_fact[e]]].chunks]
        elif kind == CONTAINS:
            chunks = [int(g.chunk_pos[u if g.chunk_pos[u] >= 0 else v])]
        for c in chunks:
            support.setdefault(c, set()).update(x for x in (u, v) if x in seed_rows)
    for u in st.nodes:  # passage nodes reached (a passage seed, a bridge passage)
        if g.chunk_pos[u] >= 0:
            support.setdefault(int(g.chunk_pos[u]), set()).update({u} & seed_rows)
    for pos in st.ppr_chunks:
        support.setdefault(pos, set())
    result = {c: len(s) for c, s in support.items()}
    st.support_memo = (size, result)
    return result


def rank_chunks(index, g: A2RAGGraph, config: A2RAGConfig, top_k_chunks: int,
                st: RetrievalState) -> list[tuple[int, float, str]]:
    """Chunks best first: ``(chunk position, score, source)``; always ``top_k_chunks`` of them.

    ``evidence_first`` (default): the evidence chunks first, by PPR map-back score when stage 3 ran
    (or as ``global_order`` says), else by (seeds supported, hybrid score); then the remaining chunks
    by hybrid score, so top_k are always returned. Then ``hybrid_anchors`` (default 2): each of the top
    hybrid chunks missing from the first ``top_k`` takes the place of the lowest-ranked evidence chunk there
    (never the first), source ``hybrid_anchor``. The walk restarts from the top hybrid chunk and ranks its
    neighbourhood; the second-best hybrid chunk is often the other hop (a comparison question names two
    entities, a bridge passage shares the query's words) but not linked to the first, so PPR misses it.
    With ``title_anchors`` (default), the documents the question names by their exact title are anchored
    after them the same way (:func:`titled_chunks`), source ``title_anchor``; with ``hop_anchors`` (default),
    then the page each of them, and hybrid's top chunk, leads to that best matches the rest of the question
    (:func:`hop_chunks`), source ``hop_anchor``.
    ``rrf``: reciprocal-rank fusion (k = 60) of that evidence ranking and the hybrid one (no anchors).
    """
    support = evidence_chunks(index, g, st)
    if st.ppr_chunks:
        cand = np.fromiter(support, np.int64, len(support))
        ppr = np.array([st.ppr_chunks.get(c, 0.0) for c in cand.tolist()])
        if config.global_order == GlobalOrder.PPR:
            key = ppr
        elif config.global_order == GlobalOrder.HYBRID:
            key = st.hybrid[cand]
        else:  # GlobalOrder.SUM
            key = minmax(ppr) + minmax(st.hybrid[cand])
        graph_rank = cand[np.lexsort((cand, -st.hybrid[cand], -key))].tolist()
    else:
        graph_rank = sorted(support, key=lambda c: (-support[c], -st.hybrid[c], c))
    hybrid_rank = top_ranked(st.hybrid, top_k_chunks + len(graph_rank)).tolist()
    if config.chunk_ranking == ChunkRanking.RRF:
        fused: dict[int, float] = {}
        for ranked in (graph_rank, hybrid_rank[: max(top_k_chunks, 5)]):
            for rank, c in enumerate(ranked):
                fused[c] = fused.get(c, 0.0) + 1.0 / (RRF_K + 1 + rank)
        best = sorted(fused, key=lambda c: (-fused[c], c))[:top_k_chunks]
        return [(c, fused[c], "graph" if c in support else "hybrid") for c in best]
    out = [(c, float(st.ppr_chunks.get(c, support[c])), "graph") for c in graph_rank[:top_k_chunks]]
    # a top hybrid chunk without any hybrid score (a question sharing nothing with the corpus) is no anchor
    anchors = {c: "hybrid_anchor" for c in hybrid_rank[: config.hybrid_anchors] if st.hybrid[c] > 0}
    named = titled_chunks(g, st) if config.title_anchors or config.hop_anchors else []
    if config.title_anchors:
        anchors.update((c, "title_anchor") for c in named if c not in anchors)
    if config.hop_anchors:
        anchors.update((c, "hop_anchor") for c in hop_chunks(index, g, st, named) if c not in anchors)
    if anchors:
        out = _with_anchors(out, anchors, st.hybrid, top_k_chunks)
    taken = {c for c, _, _ in out}
    for c in hybrid_rank:
        if len(out) >= top_k_chunks:
            break
        if c not in taken:
            out.append((c, float(st.hybrid[c]), "hybrid_fill"))
            taken.add(c)
    return out


def titled_chunks(g: A2RAGGraph, st: RetrievalState) -> list[int]:
    """Chunk positions of the documents the question names by their exact title: for each such title (a passage
    seed of lexical score 1), its chunk of best seed confidence, best first. A question that names a page
    ("Between Iain Banks and Irwin Shaw, ...") asks about it; the walk from one of them can rank the other's
    page below the neighbours of the first."""
    best: dict[str, tuple[float, int]] = {}
    for s in st.seeds:
        if s.kind == "passage" and s.lexical >= 1.0:
            if s.confidence > best.get(s.mention, (-1.0, -1))[0]:
                best[s.mention] = (s.confidence, int(g.chunk_pos[s.row]))
    return [c for _, c in sorted(best.values(), key=lambda x: (-x[0], x[1]))]


def hop_chunks(index, g: A2RAGGraph, st: RetrievalState, named: list[int]) -> list[int]:
    """The next hop from each page the question names (``named``: :func:`titled_chunks`), LLM-free: among the
    pages that page links to (an entity of its chunks that is itself a document's title), the one whose text best
    matches the rest of the question: BM25 of the question's words other than the named titles' and other than
    those every candidate page holds (they cannot tell the pages apart); none when no candidate holds any of those
    words. One per named page, in the order of ``named``, then one from hybrid's top chunk (the page the question is
    most likely about when it names none by its title; the walk restarts from it too), its title's words left out.

    "Where was the composer of film Billy Elliot born?": the film's page links some twenty people and works; of
    their pages, "composer ... born" matches Stephen Warbeck's ("an English composer ... born in Southampton").
    The walk from the film's page spreads its mass over all of them alike; the question's other words pick one.
    A corpus whose documents are not named after its entities (articles, guidelines) has few such pages, and
    little changes there."""
    order = index.chunk_order
    titles = [s for s in st.seeds if s.kind == "passage" and s.lexical >= 1.0]
    rows_of: dict[int, list[int]] = {}  # named chunk -> every chunk of the title its seed named
    for c in named:
        mention = next(s.mention for s in titles if int(g.chunk_pos[s.row]) == c)
        rows_of[c] = [s.row for s in titles if s.mention == mention]
    named_words = {w for s in titles for w in bm25_tokens(s.mention)}
    named_set = {int(g.chunk_pos[r]) for rows in rows_of.values() for r in rows}  # never a candidate
    top = int(np.argmax(st.hybrid)) if st.hybrid.size else -1  # hybrid's best chunk: the walk restarts there too
    if top >= 0 and st.hybrid[top] > 0 and top not in named_set:
        named, rows_of[top] = [*named, top], [int(g.chunk_rows[top])]
        named_set.add(top)
        named_words |= set(bm25_tokens(index.chunks[order[top]].title or ""))
    rest = [w for w in bm25_tokens(st.query) if w not in named_words]
    if not rest:
        return []
    seeds = g.seeds
    out: list[int] = []
    for c in named:
        linked = {key for r in rows_of[c] for key in index.chunks[order[int(g.chunk_pos[r])]].entities}
        pages = sorted({p for key in linked if key in seeds.exact for row in seeds.name_rows[seeds.exact[key]]
                        if (p := int(g.chunk_pos[row])) >= 0 and p not in named_set})
        if not pages:
            continue
        # a word every candidate page has cannot pick one of them ("born" when all of them are people)
        held = [set(bm25_tokens(index.chunks[order[p]].text)) for p in pages]
        telling = [w for w in rest if len(pages) < 2 or not all(w in h for h in held)]
        if not telling:
            continue
        scores = index.bm25.scores(" ".join(telling))
        best = max(pages, key=lambda p: (scores[p], -p))
        if scores[best] > 0 and best not in out:
            out.append(best)
    return out


def _with_anchors(out: list[tuple[int, float, str]], anchors: dict[int, str], hyb: np.ndarray,
                  top_k_chunks: int) -> list[tuple[int, float, str]]:
    """``out`` with every anchor chunk among its first ``top_k_chunks``: a missing anchor takes the place of
    the lowest-ranked non-anchor chunk there (or is appended when there is room), in the order of ``anchors``
    (chunk -> source label). The first evidence chunk is never displaced, so ``top_k_chunks`` 1 is the evidence
    ranking unchanged."""
    head = list(out[:top_k_chunks])
    present = {c for c, _, _ in head}
    for a, source in anchors.items():
        if a in present:
            continue
        if len(head) < top_k_chunks:
            head.append((a, float(hyb[a]), source))
        else:
            drop = next((i for i in range(len(head) - 1, 0, -1) if head[i][0] not in anchors), None)
            if drop is None:
                break
            present.discard(head[drop][0])
            head[drop:drop + 1] = []
            head.append((a, float(hyb[a]), source))
        present.add(a)
    return head + [x for x in out[top_k_chunks:] if x[0] not in present]


# ---------------------------------------------------------------------------------------- sufficiency

def heuristic_sufficient(index, g: A2RAGGraph, config: A2RAGConfig, top_k_chunks: int,
                         st: RetrievalState) -> tuple[bool, str]:
    """LLM-free sufficiency after a stage (documented heuristic; an LLM replaces it when given):

    1. at least one seed aligned (else there is nothing graph-shaped to stand on);
    2. every seed is covered: some evidence chunk supports it;
    3. the evidence connects the seeds: all seeds (the nodes of one mention counting as one) lie in
       one connected component of the evidence edges and paths; trivially true for one seed;
    4. the query's relation words (its lower-case content words, crudely stemmed, e.g. "mother",
       "born", "director") occur in the top ``top_k`` evidence chunks, at least a
       ``min_term_coverage`` share of them: a relation the evidence does not mention ("mother" in
       "When did X's mother die?") sends the query on to the next stage.
    The last stage is not checked: its evidence is returned whatever the check would say.
    """
    if not st.seeds:
        return False, "no seed aligned to the graph"
    support = evidence_chunks(index, g, st)
    missing = [s.node for s in st.seeds if not (s.row in st.nodes and _seed_has_chunk(g, s.row, support))]
    if missing:
        return False, f"seeds without evidence: {missing}"
    if len(st.seeds) > 1 and not _connected(index.snapshot, st):
        return False, "evidence does not connect the seeds"
    seed_words = {stem(w) for s in st.seeds for w in re.findall(r"\w+", s.mention.lower())}
    words = [w for w in dict.fromkeys(stem(w) for w in st.relation_words) if w not in seed_words]
    if config.min_term_coverage > 0 and words:
        best = sorted(support, key=lambda c: (-support[c], -st.hybrid[c], c))[:top_k_chunks]
        text = " ".join(index.chunks[index.chunk_order[c]].text for c in best)
        have = {stem(w) for w in re.findall(r"\w+", text.lower())}
        absent = [w for w in words if w not in have]
        if 1 - len(absent) / len(words) < config.min_term_coverage:
            return False, f"relation words not in the evidence: {absent}"
    return True, "every seed covered and connected; relation words present"


def _seed_has_chunk(g: A2RAGGraph, row: int, support: dict[int, int]) -> bool:
    if g.chunk_pos[row] >= 0:
        return int(g.chunk_pos[row]) in support
    return bool(set(g.mapback[row].indices.tolist()) & support.keys())


def _connected(snap, st: RetrievalState) -> bool:
    parts = DisjointSets()
    for e in st.edges:
        parts.union(int(snap.edge_src[e]), int(snap.edge_dst[e]))
    first_of: dict[str, int] = {}
    for s in st.seeds:  # the nodes one mention aligned to count as one seed
        parts.union(s.row, first_of.setdefault(s.mention, s.row))
    roots = {parts.find(s.row) for s in st.seeds}
    return len(roots) == 1


# ---------------------------------------------------------------------------------------- rendering

def edge_json(index, e: int) -> dict:
    snap = index.snapshot
    u, v, kind = snap.node_ids[snap.edge_src[e]], snap.node_ids[snap.edge_dst[e]], int(snap.edge_kind[e])
    if kind == RELATION:
        f = index.facts[index.fact_ids[snap.edge_fact[e]]]
        return {"kind": "relation", "subject": f.subject, "predicate": f.predicate, "object": f.object, "fact_id": f.id,
                "chunks": sorted(f.chunks)[:5]}  # provenance pointers (a HITL triple proposal cites them)
    return {"kind": "contains" if kind == CONTAINS else "synonym" if kind == SYNONYM else str(kind), "u": u, "v": v}


def _edge_line(index, e: int) -> str:
    d, chunks = edge_json(index, e), index.chunks
    if d["kind"] == "relation":
        return f"{d['subject']} | {d['predicate']} | {d['object']}"
    if d["kind"] == "contains":
        c, ent = (d["u"], d["v"]) if d["u"] in chunks else (d["v"], d["u"])
        return f"passage '{chunks[c].title or c}' | mentions | {ent}"
    return f"{d['u']} | similar name to | {d['v']}"


def serialise(index, config: A2RAGConfig, st: RetrievalState, ranked: list[tuple[int, float, str]],
              max_lines: int = 40) -> str:
    """Readable evidence: seeds, graph facts, paths, then the top ranked chunks' titles and text."""
    names = index.snapshot.node_ids
    lines = ["Seeds: " + (", ".join(f"{s.mention} -> {s.node}" for s in st.seeds) or "(none)")]
    if st.relations:
        lines.append("Relation seeds: " + ", ".join(r["label"] for r in st.relations))
    facts = [_edge_line(index, e) for e in list(st.edges)[:max_lines]]
    if facts:
        lines += ["Graph facts:"] + facts
    if st.paths:
        lines += ["Bridge paths:"] + [" -> ".join(names[u] for u in p) for p in st.paths[:10]]
    chunks = index.chunks
    for c, _, _ in ranked[: config.sufficiency_max_chunks]:
        rec = chunks[index.chunk_order[c]]
        lines.append(f"Passage '{rec.title}': {rec.text[:500]}")
    return "\n".join(lines)


def trace_of(index, config: A2RAGConfig, st: RetrievalState, reached: str, ranked) -> dict:
    """The evidence node's metadata (JSON-serialisable): seeds, stages tried, graph evidence, chunks."""
    names = index.snapshot.node_ids
    return {
        "stage_reached": reached,
        "seeds": [s.to_json() for s in st.seeds],
        "relation_seeds": st.relations[:20],  # the filter uses all of them; the trace shows the best 20
        "relation_seed_count": len(st.relations),
        "stages_tried": st.stages,
        "graph_evidence": {
            "nodes": [names[u] for u in list(st.nodes)[:200]],
            "edges": [edge_json(index, e) for e in list(st.edges)[:200]],
            "paths": [[names[u] for u in p] for p in st.paths],
        },
        "chunks": [{"chunk_id": index.chunk_order[c], "score": round(s, 6), "source": src} for c, s, src in ranked],
        "chunk_ranking": config.chunk_ranking.value,
        "llm_calls": st.usage.calls,
        "unparseable_sufficiency": st.unparseable,
    }
