"""The index's graph for other tools: a networkx graph, GraphML, JSON, or one self-contained HTML page.

    from llama_index_graphrag_suite.export import as_networkx, write_export
    g = as_networkx(index)                                 # every entity, chunk and edge
    g = as_networkx(index, around="Ada Lorne", hops=2)     # the neighbourhood of one entity
    write_export(index, "graph.graphml", "graphml")        # or "json", or "html" (works offline)

Nodes: entities (``kind="entity"``, ``label`` = surface form, ``type``) and chunks (``kind="chunk"``,
``doc_id``, ``title``, ``text``). Edges: relations (entity -> entity, ``predicate``, ``relation``
kind, ``fact_id``, ``text``), ``contains`` (chunk -> entity) and ``synonym`` (entity -> entity, ``score``).
``graphrag-suite export`` runs this from the command line.

The HTML page is readable at 10,000 nodes: communities (Leiden) are coloured islands laid out in Python
(:mod:`.graph.layout`), drawn with WebGL by sigma.js over graphology (both vendored in ``export_assets/``
with their licences and inlined, so the file opens offline); a search box finds entities and passages by
name, a click lists a node's links and shows a passage's text.
"""

from __future__ import annotations

import html
import json
import re
from collections import deque
from pathlib import Path
from typing import Any

import networkx as nx

__all__ = ["FORMATS", "ExportTargetError", "as_networkx", "check_export_target", "find_entity", "graph_json", "html_data",
           "nodes_around", "write_export"]

FORMATS = ("graphml", "json", "html")


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


ASSETS = Path(__file__).resolve().parent / "export_assets"
TEXT_CHARS = 1500  # passage text kept per chunk node in the HTML page (the page shows it on click)


def _hsl_hex(hue: float, saturation: float, lightness: float) -> str:
    import colorsys

    r, g, b = colorsys.hls_to_rgb(hue % 1.0, lightness, saturation)
    return "#{:02x}{:02x}{:02x}".format(round(r * 255), round(g * 255), round(b * 255))


def html_data(g: nx.MultiDiGraph, seed: int = 0, text_chars: int = TEXT_CHARS) -> dict[str, Any]:
    """What the HTML page draws: nodes with positions, sizes and community colours, the edges, the communities.

    Communities: Leiden (modularity, :func:`~.graph.communities.leiden_membership`) on the undirected graph.
    Positions: :func:`~.graph.layout.community_layout` (each community an island). Columns, not objects,
    to keep a 10,000-node page small: ``nodes`` = ``{"id": [...], "label": [...], "kind": ["e" | "c"], "type",
    "x", "y", "size", "color", "community", "text"}``, ``edges`` = ``{"s", "t", "kind": ["r" | "c" | "s"],
    "label"}`` (node rows), ``communities`` = ``[{"id", "size", "color", "name"}]``, largest first.
    """
    import numpy as np

    from .graph.communities import leiden_membership
    from .graph.layout import community_layout

    ids = list(g.nodes)
    row = {n: i for i, n in enumerate(ids)}
    n = len(ids)
    src = np.fromiter((row[u] for u, _ in g.edges()), np.int64, g.number_of_edges())
    dst = np.fromiter((row[v] for _, v in g.edges()), np.int64, g.number_of_edges())
    lo, hi = np.minimum(src, dst), np.maximum(src, dst)
    pairs, weight = np.unique(np.column_stack([lo, hi])[lo != hi], axis=0, return_counts=True)
    pairs = pairs.reshape(-1, 2)
    # a community bigger than ~2.5% of the graph is split again (Leiden on its own subgraph): one island of 1,500
    # nodes is a blob, and its pieces still sit together because they stay linked
    membership = leiden_membership(n, pairs[:, 0], pairs[:, 1], weight.astype(np.float64),
                                   max_cluster_size=max(150, n // 40), seed=seed) if n else np.zeros(0, np.int64)
    pos = community_layout(n, pairs[:, 0], pairs[:, 1], membership, seed=seed)
    degree = np.bincount(pairs.ravel(), minlength=n)

    # communities of linked nodes, largest first; their colours go round the hue circle by the golden angle
    linked = degree > 0
    sizes = np.bincount(membership[linked], minlength=int(membership.max()) + 1 if n else 0)
    ranked = [int(c) for c in np.argsort(-sizes, kind="stable") if sizes[c] > 0]
    colour: dict[int, str] = {}
    communities = []
    for rank, c in enumerate(ranked):
        colour[c] = _hsl_hex(0.07 + rank * 0.381966, 0.62 if rank % 2 else 0.72, 0.42 if rank % 3 else 0.5)
        members = np.flatnonzero((membership == c) & linked)
        names = [g.nodes[ids[m]].get("label") or ids[m]
                 for m in members[np.argsort(-degree[members], kind="stable")] if g.nodes[ids[m]].get("kind") == "entity"]
        communities.append({"id": c, "size": int(members.size), "color": colour[c], "name": ", ".join(names[:3])})

    attrs = [g.nodes[i] for i in ids]
    is_chunk = [a.get("kind") == "chunk" for a in attrs]
    size = np.clip(1.5 + 1.2 * np.sqrt(degree), 1.5, 14.0)
    size[np.asarray(is_chunk, bool)] *= 0.8  # passages a little smaller: the entities carry the names
    kinds = {"relation": "r", "contains": "c", "synonym": "s"}
    edges = list(g.edges(data=True))
    return {
        "nodes": {
            "id": ids,
            "label": [str(a.get("label") or i) for i, a in zip(ids, attrs)],
            "kind": ["c" if c else "e" for c in is_chunk],
            "type": [a.get("type") or "" for a in attrs],
            "x": np.round(pos[:, 0], 3).tolist(), "y": np.round(pos[:, 1], 3).tolist(),
            "size": np.round(size, 2).tolist(),
            "color": [colour.get(int(membership[i]), "#9a9a9a") if linked[i] else "#9a9a9a" for i in range(n)],
            "community": [int(membership[i]) if linked[i] else -1 for i in range(n)],
            "text": [(a.get("text") or "")[:text_chars] if c else "" for a, c in zip(attrs, is_chunk)],
        },
        "edges": {
            "s": src.tolist(), "t": dst.tolist(),
            "kind": [kinds.get(a.get("kind"), "r") for _, _, a in edges],
            "label": [(a.get("predicate") or "") if a.get("kind") == "relation" else "" for _, _, a in edges],
        },
        "communities": communities,
    }


def _html(g: nx.MultiDiGraph, title: str) -> str:
    """One self-contained page: graphology + sigma.js (WebGL) inlined, the data as JSON, no network needed."""
    page = (ASSETS / "explorer.html").read_text(encoding="utf-8")
    data = json.dumps(html_data(g), ensure_ascii=False, separators=(",", ":")).replace("</", "<\\/")
    summary = f"{g.number_of_nodes():,} nodes, {g.number_of_edges():,} edges"
    parts = {
        "/*__GRAPHOLOGY__*/": (ASSETS / "graphology.umd.min.js").read_text(encoding="utf-8"),
        "/*__SIGMA__*/": (ASSETS / "sigma.min.js").read_text(encoding="utf-8"),
        "/*__DATA__*/": data,  # inside <script type="application/json">: "</" escaped, so it cannot end the script
        "__TITLE__": html.escape(title),
        "__SUMMARY__": summary,
    }
    # one pass, so text inside the data can never be taken for a placeholder
    pattern = re.compile("|".join(re.escape(k) for k in parts))
    return pattern.sub(lambda m: parts[m.group(0)], page)


class ExportTargetError(ValueError):
    """An ``--out`` the export must not write: inside an index folder, or an existing file that is not a regular one."""


INDEX_MARKER = "CURRENT"  # index.storage.CURRENT: the file that makes a folder an index folder


def check_export_target(out: str | Path, index_dir: str | Path | None = None) -> Path:
    """``out`` if an export may write it, else :class:`ExportTargetError` saying why.

    Refused: any path inside an index folder (``index_dir``, or any folder above ``out`` holding ``CURRENT``:
    writing there replaces or adds files the index owns), an existing directory, and an existing file that is
    not a regular file (a symlink, FIFO or device node: replacing it would destroy what it is, or write through
    it elsewhere). A regular file is replaced, atomically.
    """
    out = Path(out)
    if not str(out).strip():
        raise ExportTargetError("--out is empty: name the file to write")
    where = out.parent.resolve() / out.name  # the parent resolved; out itself may be a symlink, checked below
    folders = [Path(index_dir).resolve()] if index_dir is not None else []
    folders += [p for p in where.parents if (p / INDEX_MARKER).is_file()]
    for folder in folders:
        if where == folder or where.is_relative_to(folder):
            raise ExportTargetError(f"{out} is inside the index folder {folder}: writing there would change the "
                                    "index; export to a path outside it")
    if out.is_symlink():
        raise ExportTargetError(f"{out} is a symlink: export to a regular file path (the link is left alone)")
    if out.exists() and not out.is_file():
        kind = "a folder" if out.is_dir() else "not a regular file (a FIFO, socket or device)"
        raise ExportTargetError(f"{out} exists and is {kind}: export to a regular file path")
    return out


def write_export(index: Any, out: str | Path, fmt: str, around: str | None = None, hops: int = 2,
                 limit: int = 500, index_dir: str | Path | None = None) -> nx.MultiDiGraph:
    """Write the graph (or the neighbourhood ``around`` an entity) to ``out`` as ``fmt``; returns the graph.

    ``out`` is checked by :func:`check_export_target` (``index_dir``: the index's folder, when it has one)."""
    import os
    import tempfile

    if fmt not in FORMATS:
        raise ValueError(f"unknown format {fmt!r}; choose from {', '.join(FORMATS)}")
    if isinstance(hops, bool) or not isinstance(hops, int) or hops < 0:
        raise ValueError(f"hops must be a whole number, 0 or more, got {hops!r}")
    if isinstance(limit, bool) or not isinstance(limit, int) or limit < 1:
        raise ValueError(f"limit must be a whole number, at least 1, got {limit!r}")
    if index_dir is None:  # the folder the index was loaded from or saved to (index.state.origin), if any
        origin = getattr(getattr(index, "state", None), "origin", None)
        index_dir = origin[0] if origin else None
    out = check_export_target(out, index_dir)
    g = as_networkx(index, around=around, hops=hops, limit=limit)
    out.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp_name = tempfile.mkstemp(prefix=f".{out.name}.", suffix=".tmp", dir=out.parent)  # a new file, ours alone
    tmp = Path(tmp_name)
    try:
        with os.fdopen(fd, "wb") as f:
            if fmt == "graphml":
                nx.write_graphml(g, f)
            elif fmt == "json":
                f.write((json.dumps({"directed": True, **graph_json(g)}, ensure_ascii=False) + "\n").encode("utf-8"))
            else:
                title = f"graph around {around}" if around else "graph of the index"
                f.write(_html(g, title).encode("utf-8"))
        os.chmod(tmp, 0o644)
        check_export_target(out, index_dir)  # again just before the rename: nothing took the path meanwhile
        tmp.replace(out)
    finally:
        tmp.unlink(missing_ok=True)
    return g
