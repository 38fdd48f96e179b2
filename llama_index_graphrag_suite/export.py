"""The index's graph for other tools: a networkx graph, GraphML, JSON, or one self-contained HTML page.

    from llama_index_graphrag_suite.export import as_networkx, write_export
    g = as_networkx(index)                                 # every entity, chunk and edge
    g = as_networkx(index, around="Ada Lorne", hops=2)     # the neighbourhood of one entity
    write_export(index, "graph.graphml", "graphml")        # or "json", or "html" (works offline)

Nodes: entities (``kind="entity"``, ``label`` = surface form, ``type``) and chunks (``kind="chunk"``,
``doc_id``, ``title``, ``text``). Edges: relations (entity -> entity, ``predicate``, ``relation``
kind, ``fact_id``, ``text``), ``contains`` (chunk -> entity) and ``synonym`` (entity -> entity, ``score``).
``graphrag-suite export`` runs this from the command line.
"""

from __future__ import annotations

import html
import json
from collections import deque
from pathlib import Path
from typing import Any

import networkx as nx

__all__ = ["FORMATS", "as_networkx", "find_entity", "graph_json", "nodes_around", "write_export"]

FORMATS = ("graphml", "json", "html")
VENDOR = Path(__file__).resolve().parent / "serve" / "static" / "vendor"


def find_entity(index: Any, name: str) -> str:
    """The entity key for ``name`` (a key or a surface form, any case); KeyError naming close matches."""
    if name in index.entities:
        return name
    wanted = " ".join(name.split()).lower()
    for key, e in index.entities.items():
        if e.surface.lower() == wanted or key.lower() == wanted:
            return key
    close = sorted(e.surface for e in index.entities.values() if wanted and wanted in e.surface.lower())[:8]
    hint = f"; did you mean: {', '.join(close)}" if close else ""
    raise KeyError(f"no entity {name!r} in the index{hint}")


def nodes_around(index: Any, entity: str, hops: int = 2, limit: int = 500) -> list[str]:
    """Node ids within ``hops`` edges of ``entity`` (any direction), nearest first, at most ``limit``."""
    if hops < 0:
        raise ValueError("hops must be 0 or more")
    snap = index.snapshot
    start = snap.row(find_entity(index, entity))
    seen, order, queue = {start}, [start], deque([(start, 0)])
    while queue and len(order) < limit:
        row, dist = queue.popleft()
        if dist == hops:
            continue
        nbrs, _ = snap.neighbours_of(row)
        for nb in nbrs.tolist():
            if nb not in seen and len(order) < limit:
                seen.add(nb)
                order.append(nb)
                queue.append((nb, dist + 1))
    return [snap.node_ids[r] for r in order]


def as_networkx(index: Any, around: str | None = None, hops: int = 2, limit: int = 500) -> nx.MultiDiGraph:
    """The index's entities, chunks and edges as a ``networkx.MultiDiGraph`` (see the module docstring).

    With ``around``, only the nodes within ``hops`` of that entity (at most ``limit``) and the edges among them.
    """
    with index.reading():
        keep = set(nodes_around(index, around, hops, limit)) if around is not None else None
        g = nx.MultiDiGraph()
        for key, e in index.entities.items():
            if keep is None or key in keep:
                g.add_node(key, kind="entity", label=e.surface, type=e.type or "", chunks=len(e.chunks))
        for cid, c in index.chunks.items():
            if keep is None or cid in keep:
                g.add_node(cid, kind="chunk", label=c.title or c.doc_id, doc_id=c.doc_id, title=c.title,
                           text=c.text)
        for f in index.facts.values():
            if f.subject in g and f.object in g:
                g.add_edge(f.subject, f.object, key=f.id, kind="relation", label=f.predicate, predicate=f.predicate,
                           relation=f.kind, fact_id=f.id, text=f.text)
        for cid, c in index.chunks.items():
            if cid in g:
                for key in c.entities:
                    if key in g:
                        g.add_edge(cid, key, key=f"contains:{cid}:{key}", kind="contains", label="contains")
        for (a, b), score in index.synonyms.items():
            if a in g and b in g:
                g.add_edge(a, b, key=f"synonym:{a}:{b}", kind="synonym", label="synonym", score=float(score))
    return g


def graph_json(g: nx.MultiDiGraph, text_chars: int | None = None) -> dict[str, Any]:
    """``{"nodes": [{"id", ...}], "edges": [{"id", "source", "target", ...}]}`` (chunk texts cut to ``text_chars``)."""
    nodes = []
    for n, attrs in g.nodes(data=True):
        row = {"id": n, **attrs}
        if text_chars is not None and isinstance(row.get("text"), str):
            row["text"] = row["text"][:text_chars]
        nodes.append(row)
    edges = [{"id": f"e{i}", "source": u, "target": v, **attrs}
             for i, (u, v, attrs) in enumerate(g.edges(data=True))]
    return {"nodes": nodes, "edges": edges}


_PAGE = """<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>{title}</title>
<style>
body {{ margin: 0; font: 14px system-ui, sans-serif; display: flex; height: 100vh; }}
#cy {{ flex: 3; border-right: 1px solid #ccc; }}
#side {{ flex: 1; padding: 12px; overflow: auto; }}
.chunk {{ white-space: pre-wrap; background: #f6f6f6; padding: 8px; border-radius: 4px; }}
</style></head>
<body><div id="cy"></div><div id="side"><h3>{title}</h3><p>{summary}</p>
<p>Click a node to see its text.</p><div id="info"></div></div>
<script>{library}</script>
<script>
const data = {data};
const cy = cytoscape({{
  container: document.getElementById('cy'),
  elements: {{nodes: data.nodes.map(n => ({{data: n}})), edges: data.edges.map(e => ({{data: e}}))}},
  style: [
    {{selector: 'node', style: {{label: 'data(label)', 'font-size': 9, width: 14, height: 14,
      'background-color': '#4c78a8', 'text-wrap': 'ellipsis', 'text-max-width': 120}}}},
    {{selector: 'node[kind = "chunk"]', style: {{shape: 'round-rectangle', 'background-color': '#f58518'}}}},
    {{selector: 'edge', style: {{width: 1, 'line-color': '#bbb', 'curve-style': 'bezier',
      'target-arrow-shape': 'triangle', 'target-arrow-color': '#bbb', 'arrow-scale': 0.6}}}},
    {{selector: 'edge[kind = "relation"]', style: {{'line-color': '#54a24b', 'target-arrow-color': '#54a24b'}}}},
  ],
  layout: {{name: data.nodes.length > 400 ? 'grid' : 'cose', animate: false}},
}});
cy.on('tap', 'node', ev => {{
  const d = ev.target.data(), info = document.getElementById('info');
  info.replaceChildren();
  const h = document.createElement('h4'); h.textContent = d.label + ' (' + d.kind + ')'; info.append(h);
  const p = document.createElement('div'); p.className = 'chunk';
  p.textContent = d.text || ev.target.connectedEdges().map(e => e.data('label') + ': ' +
    (e.data('source') === d.id ? e.data('target') : e.data('source'))).join('\\n');
  info.append(p);
}});
</script></body></html>
"""


def _html(g: nx.MultiDiGraph, title: str) -> str:
    library = (VENDOR / "cytoscape.min.js").read_text(encoding="utf-8")
    data = json.dumps(graph_json(g), ensure_ascii=False).replace("</", "<\\/")  # cannot close the script
    summary = f"{g.number_of_nodes()} nodes, {g.number_of_edges()} edges"
    return _PAGE.format(title=html.escape(title), summary=summary, library=library, data=data)


def write_export(index: Any, out: str | Path, fmt: str, around: str | None = None, hops: int = 2,
                 limit: int = 500) -> nx.MultiDiGraph:
    """Write the graph (or the neighbourhood ``around`` an entity) to ``out`` as ``fmt``; returns the graph."""
    if fmt not in FORMATS:
        raise ValueError(f"unknown format {fmt!r}; choose from {', '.join(FORMATS)}")
    g = as_networkx(index, around=around, hops=hops, limit=limit)
    out = Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = out.with_name(out.name + ".tmp")
    if fmt == "graphml":
        nx.write_graphml(g, tmp)
    elif fmt == "json":
        tmp.write_text(json.dumps({"directed": True, **graph_json(g)}, ensure_ascii=False) + "\n", encoding="utf-8")
    else:
        title = f"graph around {around}" if around else "graph of the index"
        tmp.write_text(_html(g, title), encoding="utf-8")
    tmp.replace(out)
    return g
