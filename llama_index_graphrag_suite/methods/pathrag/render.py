"""PathRAG's textual relational paths (Eq. 5) and the path part of its prompt (Eq. 6).

Eq. 5: a path's text is each node's description then each edge's, in path order. Node descriptions
come from the PathRAG extractor's ``description`` property when the graph was built with it; LLM-free,
from the first sentence mentioning the entity (in its own page when it has one). Edge descriptions
are the facts' texts (the extractor's relation description, or the co-occurrence sentence).

Eq. 6 (:func:`render_paths`): the query first, then the paths in ascending reliability so the most
reliable is last; a token budget drops the least reliable paths first. Ablations of the paper's
Table 2-3: ``order="random"`` or ``"hop_first"``, ``flat=True`` (deduplicated nodes and edges instead
of paths).
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from typing import Any, Sequence

import numpy as np

from ...graph.flow_paths import Path
from ...graph.snapshot import CONTAINS, RELATION, SYNONYM
from ...index.lazy_store import holds_outside_data
from ...llm.usage import count_tokens
from ...text import normalize_entity, phrase_segments, split_sentences, word_spans
from .config import PathOrder

__all__ = ["ORDERS", "PATHS_HEADER", "RenderedPath", "edge_record", "node_source", "path_record", "render_paths"]

ORDERS = tuple(o.value for o in PathOrder)
PATHS_HEADER = "Relational paths, least reliable first (the last path is the most reliable):"


# ------------------------------------------------------------------ the prompt (Eq. 6)

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
    ``max_tokens`` (counted with LlamaIndex's tokenizer), dropping the least reliable first. Orders
    (:class:`~.config.PathOrder` or its string): ``ascending`` (Eq. 6: reliability ascending, most
    reliable last), ``random`` (seeded shuffle), ``hop_first`` (more hops first, so the shortest paths
    end the prompt; ties by reliability ascending). ``flat`` lists the kept paths' distinct lines
    (nodes and edges) once each, without the path structure. With ``question``, the query is put
    first, as Eq. 6 writes the prompt.
    """
    try:
        order = PathOrder(order)
    except ValueError:
        raise ValueError(f"unknown path order {order!r}; choose from {', '.join(ORDERS)}") from None
    kept, used = [], 0
    for i, p in enumerate(paths):
        cost = count_tokens(p.text) + 1
        if max_tokens is not None and used + cost > max_tokens:
            continue  # a shorter, less reliable path may still fit
        kept.append(i)
        used += cost
    if order is PathOrder.ASCENDING:
        kept.sort(key=lambda i: (paths[i].reliability, -i))
    elif order is PathOrder.HOP_FIRST:
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


# ------------------------------------------------------------------ path text (Eq. 5)

def path_record(index, path: Path, max_edge_texts: int) -> dict:
    """A path as evidence: its nodes, edges (with their facts), resources, reliability and text (Eq. 5)."""
    snap = index.snapshot
    nodes = [snap.node_ids[v] for v in path.nodes]
    edges = [edge_record(index, u, v) for u, v in zip(path.nodes, path.nodes[1:])]
    lines = [f"Path ({path.hops} hop{'s' if path.hops != 1 else ''}, reliability {path.reliability:.4f}):"]
    for i, key in enumerate(nodes):
        lines.append(f"  {node_source(index, key)[0]}")
        if i < len(edges):
            lines.append(f"  {_edge_text(edges[i], max_edge_texts)}")
    return {"nodes": nodes, "edges": edges, "resources": [round(r, 6) for r in path.resources],
            "reliability": round(path.reliability, 6), "hops": path.hops, "text": "\n".join(lines)}


def edge_record(index, u: int, v: int) -> dict:
    """Every snapshot edge joining u and v: its facts (relation edges) or its synonym score."""
    snap = index.snapshot
    out: dict[str, Any] = {"u": snap.node_ids[u], "v": snap.node_ids[v], "facts": []}
    for e in _pair_edges(index, u, v):
        if snap.edge_kind[e] == RELATION:
            f = index.facts[index.fact_ids[snap.edge_fact[e]]]
            out["facts"].append({"id": f.id, "subject": f.subject, "predicate": f.predicate, "object": f.object, "text": f.text})
        elif snap.edge_kind[e] == SYNONYM:
            out["synonym"] = round(float(snap.edge_weight[e]), 6)
    out["kind"] = "relation" if out["facts"] else "synonym"
    return out


def _pair_edges(index, u: int, v: int) -> list[int]:
    """The relation and synonym edges joining u and v, in the order ``snap.neighbours_of(u)`` lists them (those
    from u in edge order, then those to u; a self-loop twice). Per snapshot, only these two kinds are sorted by
    node pair, once (cached): the whole neighbour matrix holds every contains edge too, twice."""
    snap = index.snapshot

    def build() -> tuple[np.ndarray, np.ndarray]:
        edges = np.flatnonzero(snap.edge_kind != CONTAINS)
        src, dst = snap.edge_src[edges].astype(np.int64), snap.edge_dst[edges].astype(np.int64)
        keys = np.minimum(src, dst) * snap.num_nodes + np.maximum(src, dst)
        order = np.argsort(keys, kind="stable")  # grouped by pair, edge ids ascending within one
        return keys[order], edges[order]

    keys, edges = index.cached("pathrag.pair_edges", build)
    key = min(u, v) * snap.num_nodes + max(u, v)
    found = edges[np.searchsorted(keys, key, "left"):np.searchsorted(keys, key, "right")].tolist()
    if u == v:
        return found + found
    return [e for e in found if snap.edge_src[e] == u] + [e for e in found if snap.edge_src[e] != u]


def _edge_text(edge: dict, max_edge_texts: int) -> str:
    if not edge["facts"]:
        return f"-[similar name, cosine {edge.get('synonym', 0.0):.2f}]->"
    texts = list(dict.fromkeys(f["text"] for f in edge["facts"]))[:max_edge_texts]
    label = edge["facts"][0]["predicate"]
    return f"-[{label}]-> " + " ".join(texts)


def node_source(index, key: str) -> tuple[str, tuple[str, ...]]:
    """The node's text t_v and the chunks it comes from (memoised per snapshot)."""
    memo = index.cached("pathrag.node_source", dict)
    if key not in memo:
        ent = index.entities[key]
        # the extractor's description and type: in the index's tables (EntityRecord.attributes), else in the store
        info = dict(getattr(ent, "attributes", None) or {}) or _stored_entity(index, key)
        kind = f" ({info['entity_type']})" if info.get("entity_type") else ""
        if info.get("description"):  # the PathRAG extractor's merged description, from every chunk of the entity
            description, chunks = str(info["description"]), tuple(sorted(ent.chunks))
        else:
            description, chunks = _entity_sentence(index, key)
        text = f"{ent.surface}{kind}: {description}" if description else f"{ent.surface}{kind}"
        memo[key] = (text, chunks)
    return memo[key]


def _stored_entity(index, key: str) -> dict:
    """The entity's properties in the property graph store (the PathRAG extractor's description and type).

    A lazy simple store nothing but the index wrote to holds no descriptions (only the tables): it is not
    filled for this (``index/lazy_store.py``).
    """
    store = index.property_graph_store
    if not holds_outside_data(store):
        return {}
    graph = getattr(store, "graph", None)
    node = graph.nodes.get(key) if graph is not None else next(iter(store.get(ids=[key])), None)
    return dict(node.properties) if node is not None else {}


def _entity_sentence(index, key: str) -> tuple[str, tuple[str, ...]]:
    """LLM-free description: the first sentence mentioning the entity, in its own page (a chunk titled
    with its name) if it has one, and that chunk."""
    ent = index.entities[key]
    chunks = sorted(ent.chunks, key=lambda c: (index.chunks[c].title.lower() != ent.surface.lower(), c))
    for cid in chunks[:3]:
        text = index.chunks[cid].text
        for start, end in split_sentences(text):
            sentence = " ".join(text[start:end].split())
            # not a title line holding just the name; then whether the name is written in it
            if len(sentence.split()) > len(key.split()) and mentions(text[start:end], key, index.config.max_ngram):
                return sentence, (cid,)
    return "", ()


def mentions(sentence: str, key: str, max_ngram: int) -> bool:
    """Whether ``find_mentions(sentence, {key}, max_ngram)`` finds the entity ``key`` in ``sentence``: the same
    words and joins, read one sentence at a time so that the search stops at the first sentence that names it
    (``find_mentions`` analyses the whole chunk first; this is most of a query's path text on a large corpus)."""
    first = key.partition(" ")[0]
    for segment in phrase_segments(sentence):
        keys = [normalize_entity(segment[a:b]) for a, b in word_spans(segment)]
        for i, word in enumerate(keys):
            if word and word.partition(" ")[0] != first:
                continue  # a join that starts with this word cannot spell the key
            for n in range(min(max_ngram, len(keys) - i), 0, -1):
                if " ".join(k for k in keys[i:i + n] if k) == key:
                    return True
    return False
