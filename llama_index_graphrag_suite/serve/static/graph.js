// Drawing a graph so that a person can read it at 150 nodes (Cytoscape.js, vendored):
// - a force layout, then the drawing scaled to fill its box at zoom 1, then node overlaps pushed apart;
// - labels placed greedily, most important node first, only where they do not cover a label already placed
//   (re-done after every zoom, with the font kept at the same size on screen: zooming in shows more names);
// - hovering a node shows it and its neighbours with their names and fades the rest.
"use strict";

const GraphView = (() => {
  const COLOURS = { entity: "#4c78a8", chunk: "#f58518", community: "#b279a2" };
  const FONT_PX = 11;          // label size on screen, whatever the zoom
  const LABEL_PX = 100;        // widest label on screen (longer ones end in an ellipsis)
  const NODE_GAP = 4;          // on-screen pixels kept between two nodes
  const DENSE = 60;            // above this many nodes, smaller node marks

  const STYLE = [
    // font size, label width and margins are data (set by placeLabels): they follow the zoom, so labels keep
    // their size on screen
    { selector: "node", style: { width: 14, height: 14, "background-color": COLOURS.entity, label: "",
      "font-size": "data(fs)", "text-wrap": "ellipsis", "text-max-width": "data(tw)", "text-valign": "bottom",
      "text-margin-x": "data(mx)", "text-margin-y": "data(my)", color: "#222", "text-background-color": "#fff",
      "text-background-opacity": 0.75, "text-background-padding": "data(pad)", "min-zoomed-font-size": 0 } },
    { selector: "node.label-top", style: { "text-valign": "top", "text-halign": "center" } },
    { selector: "node.label-right", style: { "text-valign": "center", "text-halign": "right" } },
    { selector: "node.label-left", style: { "text-valign": "center", "text-halign": "left" } },
    { selector: "node.chunk", style: { shape: "round-rectangle", "background-color": COLOURS.chunk } },
    { selector: "node.community", style: { shape: "hexagon", "background-color": COLOURS.community, width: 18, height: 18 } },
    { selector: "node.retrieved", style: { "border-width": 3, "border-color": "#333" } },
    { selector: "node.evidence", style: { width: 18, height: 18 } },
    // many nodes: smaller marks, so that more room is left for names
    { selector: "node.dense", style: { width: 9, height: 9 } },
    { selector: "node.dense.evidence, node.dense.community", style: { width: 11, height: 11 } },
    { selector: "node.dense.retrieved", style: { width: 12, height: 12, "border-width": 2 } },
    { selector: "node.focus", style: { width: 22, height: 22, "border-width": 3, "border-color": "#e45756" } },
    { selector: "node.labelled, node.hover, node:selected", style: { label: "data(label)" } },
    { selector: "node.hover, node:selected", style: { "z-index": 10, "font-weight": "bold" } },
    { selector: "edge", style: { width: 1, "line-color": "#c8c8c8", "curve-style": "straight" } },
    { selector: "edge.relation", style: { width: 2, "line-color": "#54a24b" } },
    { selector: "edge.member", style: { "line-style": "dashed", "line-color": "#b279a2" } },
    { selector: "edge.synonym", style: { "line-style": "dotted", "line-color": "#9d755d" } },
    { selector: "edge.hover", style: { label: "data(label)", "font-size": FONT_PX - 2, color: "#386", width: 2.5 } },
    { selector: ".faded", style: { opacity: 0.15 } },
    { selector: "node:selected", style: { "background-color": "#e45756" } },
  ];

  function element(kind, data, extra) {
    const label = kind === "nodes" ? { fs: FONT_PX, tw: LABEL_PX, mx: 0, my: 2, pad: 1 } : {};
    return { group: kind, data: { ...data, ...label }, classes: [data.kind, ...(extra || [])].filter(Boolean).join(" ") };
  }

  function elementsOf(graph) {
    const dense = graph.nodes.length > DENSE ? "dense" : "";
    return [
      ...graph.nodes.map((n) => element("nodes", n, [n.retrieved ? "retrieved" : "", n.evidence ? "evidence" : "",
        n.focus ? "focus" : "", dense])),
      ...graph.edges.map((e) => element("edges", e)),
    ];
  }

  // Importance for a label: the focused node, retrieved chunks, evidence with a score, then the best connected.
  function priority(node) {
    const d = node.data();
    return (node.hasClass("focus") ? 1e6 : 0) + (node.hasClass("retrieved") ? 1e5 : 0)
      + (node.hasClass("community") ? 5e4 : 0) + (d.score != null ? 1e4 * Math.min(1, Math.abs(d.score)) : 0)
      + (node.hasClass("evidence") ? 1e3 : 0) + node.degree();
  }

  function overlaps(a, b, margin) {
    const m = margin || 0;
    return a.x1 < b.x2 + m && b.x1 < a.x2 + m && a.y1 < b.y2 + m && b.y1 < a.y2 + m;
  }

  // Where a label may go, in order of preference: under its node, above it, right of it, left of it.
  const SIDES = ["bottom", "top", "right", "left"];
  const SIDE_CLASSES = SIDES.map((side) => "label-" + side).join(" ");

  // A label's box on screen as Cytoscape draws it on that side of its node (one line, cut at LABEL_PX with an
  // ellipsis, on a padded background): measured with a canvas in the label font, because Cytoscape sizes
  // labels only when it renders. The offsets were read off Cytoscape 3.34's own label boxes.
  const measure = document.createElement("canvas").getContext("2d");
  function labelBox(node, side) {
    side = side || SIDES.find((s) => node.hasClass("label-" + s)) || "bottom";
    const font = node.style("font-family") || "Helvetica Neue, Helvetica, sans-serif";
    measure.font = (node.hasClass("hover") ? "bold " : "") + FONT_PX + "px " + font;
    const w = Math.min(measure.measureText(String(node.data("label") || "")).width, LABEL_PX) + 7;
    const h = FONT_PX * 1.3 + 3.5;
    const p = node.renderedPosition(), hw = node.renderedWidth() / 2, hh = node.renderedHeight() / 2;
    const x1 = side === "right" ? p.x + hw - 1 : side === "left" ? p.x - hw + 1 - w : p.x - w / 2;
    const y1 = side === "bottom" ? p.y + hh - 1 : side === "top" ? p.y - hh + 1 - h : p.y - h / 2;
    return { x1, x2: x1 + w, y1, y2: y1 + h, w, h };
  }

  // Greedy label placement in screen space: most important node first, each label on the first side of its
  // node where it covers no label already placed and no other node, and lies inside the view.
  function placeLabels(cy) {
    const zoom = cy.zoom(), gap = 2 / zoom;
    const nodes = cy.nodes().sort((a, b) => priority(b) - priority(a));
    const nodeBoxes = nodes.map((n) => n.renderedBoundingBox({ includeLabels: false, includeOverlays: false }));
    const placed = [], keep = [], w = cy.width(), h = cy.height();
    nodes.forEach((n, i) => {
      for (const side of SIDES) {
        const box = labelBox(n, side);
        if (box.x1 < 0 || box.y1 < 0 || box.x2 > w || box.y2 > h) continue;
        if (placed.some((p) => overlaps(p, box, 1))) continue;
        if (nodeBoxes.some((nb, j) => j !== i && overlaps(nb, box))) continue;
        placed.push(box); keep.push([n, side]);
        break;
      }
    });
    const margins = { bottom: [0, gap], top: [0, -gap], right: [gap, 0], left: [-gap, 0] };
    cy.batch(() => {
      cy.nodes().removeClass("labelled " + SIDE_CLASSES).addClass("label-bottom")
        .data({ fs: FONT_PX / zoom, tw: LABEL_PX / zoom, pad: 1 / zoom, mx: 0, my: gap });
      for (const [n, side] of keep) {
        n.removeClass("label-bottom").addClass("labelled label-" + side).data({ mx: margins[side][0], my: margins[side][1] });
      }
    });
  }

  // Scale the laid-out positions so the drawing fills the box at zoom 1 (never closer than the node size
  // allows), then push apart nodes that still overlap.
  function fitAtZoomOne(cy) {
    const nodes = cy.nodes();
    if (nodes.length === 0) return;
    const pad = 30, bb = nodes.boundingBox({ includeLabels: false });
    const w = Math.max(cy.width() - 2 * pad, 50), h = Math.max(cy.height() - 2 * pad, 50);
    // each axis scaled to fill the box (a tall drawing in a wide box is stretched sideways, up to 2.5 times
    // more than downwards: the box is used, the shape still recognisable)
    let sx = Math.min(bb.w > 1 ? w / bb.w : 1, 3), sy = Math.min(bb.h > 1 ? h / bb.h : 1, 3);
    sx = Math.min(sx, 2.5 * sy); sy = Math.min(sy, 2.5 * sx);
    const cx = (bb.x1 + bb.x2) / 2, cyy = (bb.y1 + bb.y2) / 2;
    nodes.positions((n) => ({ x: (n.position("x") - cx) * sx, y: (n.position("y") - cyy) * sy }));
    separate(nodes);
    cy.zoom(1);
    cy.center();
    const after = nodes.boundingBox({ includeLabels: false });
    if (after.w > cy.width() - 2 * pad || after.h > cy.height() - 2 * pad) cy.fit(nodes, pad);
  }

  function separate(nodes) {
    const list = nodes.toArray();
    const xs = list.map((n) => n.position("x")), ys = list.map((n) => n.position("y"));
    const radius = list.map((n) => Math.max(n.width(), n.height()) / 2 + 3);  // border and selection ring
    for (let round = 0; round < 80; round++) {
      let moved = false;
      for (let i = 0; i < list.length; i++) {
        for (let j = i + 1; j < list.length; j++) {
          const need = radius[i] + radius[j] + NODE_GAP;
          let dx = xs[j] - xs[i], dy = ys[j] - ys[i];
          const dist = Math.hypot(dx, dy);
          if (dist >= need) continue;
          if (dist < 1e-6) { dx = Math.cos(i + j); dy = Math.sin(i + j); }
          const push = (need - dist) / 2 + 0.5, norm = Math.hypot(dx, dy);
          xs[i] -= (dx / norm) * push; ys[i] -= (dy / norm) * push;
          xs[j] += (dx / norm) * push; ys[j] += (dy / norm) * push;
          moved = true;
        }
      }
      if (!moved) break;
    }
    nodes.positions((n, i) => ({ x: xs[i], y: ys[i] }));
  }

  // keep: start from the current positions (after an expand) instead of a spiral.
  function layout(cy, keep) {
    const nodes = cy.nodes(), n = nodes.length;
    if (!keep) {  // a spiral: deterministic and spread out, so the force layout starts untangled
      nodes.positions((node, i) => {
        const r = 30 * Math.sqrt(i + 1), t = i * 2.4;
        return { x: r * Math.cos(t), y: r * Math.sin(t) };
      });
    }
    cy.layout({
      name: "cose", animate: false, randomize: false, fit: false, nodeDimensionsIncludeLabels: false,
      nodeRepulsion: () => 9000 + 60 * n, idealEdgeLength: () => 40 + Math.sqrt(n) * 3, edgeElasticity: () => 80,
      gravity: 0.6, numIter: 1500, componentSpacing: 60, nodeOverlap: 12,
    }).run();
    if (n > 40) spreadEvenly(nodes, 0.5);
    fitAtZoomOne(cy);
    placeLabels(cy);
  }

  // A force layout packs the middle of a large graph and leaves its rim empty, and labels only fit where
  // there is room. Blend each coordinate with its rank (histogram equalisation, per axis): left stays left and
  // neighbours stay near, but the nodes spread over the whole box.
  function spreadEvenly(nodes, share) {
    const list = nodes.toArray(), n = list.length;
    const bb = nodes.boundingBox({ includeLabels: false });
    const next = list.map((node) => ({ ...node.position() }));
    for (const [axis, lo, size] of [["x", bb.x1, bb.w], ["y", bb.y1, bb.h]]) {
      const order = list.map((_, i) => i).sort((a, b) => next[a][axis] - next[b][axis]);
      order.forEach((i, rank) => {
        const even = lo + (size * rank) / Math.max(n - 1, 1);
        next[i][axis] = (1 - share) * next[i][axis] + share * even;
      });
    }
    nodes.positions((node, i) => next[i]);
  }

  function hoverNeighbourhood(cy) {
    cy.on("mouseover", "node", (ev) => {
      const near = ev.target.closedNeighborhood();
      cy.batch(() => {
        cy.elements().not(near).addClass("faded");
        near.addClass("hover");
      });
    });
    cy.on("mouseout", "node", () => cy.batch(() => cy.elements().removeClass("faded hover")));
  }

  // Draw {nodes, edges} into container; onNode(nodeData) on a click. Returns the Cytoscape instance.
  function draw(container, graph, onNode) {
    const cy = cytoscape({ container, elements: elementsOf(graph), style: STYLE,
      minZoom: 0.1, maxZoom: 6, layout: { name: "preset" } });
    layout(cy);
    let timer = null;
    cy.on("zoom", () => { clearTimeout(timer); timer = setTimeout(() => placeLabels(cy), 120); });
    cy.on("tap", "node", (ev) => onNode && onNode(ev.target.data(), ev.target));
    hoverNeighbourhood(cy);
    return cy;
  }

  // Add a graph's new nodes and edges (the explorer's "expand": edge ids must name their ends), placed around
  // the node they were reached from, then lay out again from the current positions. Returns the nodes added.
  function merge(cy, graph, aroundId) {
    const fresh = elementsOf(graph).filter((e) => cy.getElementById(e.data.id).empty());
    const centre = cy.getElementById(aroundId);
    const at = centre.nonempty() ? centre.position() : { x: 0, y: 0 };
    const nodes = fresh.filter((e) => e.group === "nodes");
    nodes.forEach((e, i) => {
      const t = (2 * Math.PI * i) / Math.max(nodes.length, 1);
      e.position = { x: at.x + 40 * Math.cos(t), y: at.y + 40 * Math.sin(t) };
    });
    cy.add(fresh);
    layout(cy, true);
    return nodes.length;
  }

  return { COLOURS, draw, merge, placeLabels, labelBox, elementsOf };
})();
window.GraphView = GraphView;
