// Drawing a graph so that a person can read it at 150 nodes (Cytoscape.js, vendored):
// - a force layout, then the drawing scaled to fill its box at zoom 1, then node overlaps pushed apart;
// - labels placed greedily, most important node first, only where they do not cover a label already placed
//   (re-done after every zoom, with the font kept at the same size on screen: zooming in shows more names);
// - hovering a node shows it and its neighbours with their names and fades the rest.
"use strict";

const GraphView = (() => {
  const COLOURS = { entity: "#4c78a8", chunk: "#f58518", community: "#b279a2" };
  const FONT_PX = 11;          // label size on screen, whatever the zoom
  const LABEL_PX = 120;        // widest label on screen (longer ones end in an ellipsis)
  const NODE_GAP = 4;          // on-screen pixels kept between two nodes

  const STYLE = [
    { selector: "node", style: { width: 14, height: 14, "background-color": COLOURS.entity, label: "",
      "font-size": FONT_PX, "text-wrap": "ellipsis", "text-max-width": LABEL_PX, "text-valign": "bottom",
      "text-margin-y": 2, color: "#222", "text-background-color": "#fff", "text-background-opacity": 0.75,
      "text-background-padding": 1, "min-zoomed-font-size": 0 } },
    { selector: "node.chunk", style: { shape: "round-rectangle", "background-color": COLOURS.chunk } },
    { selector: "node.community", style: { shape: "hexagon", "background-color": COLOURS.community, width: 18, height: 18 } },
    { selector: "node.retrieved", style: { "border-width": 3, "border-color": "#333" } },
    { selector: "node.evidence", style: { width: 18, height: 18 } },
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
    return { group: kind, data, classes: [data.kind, ...(extra || [])].filter(Boolean).join(" ") };
  }

  function elementsOf(graph) {
    return [
      ...graph.nodes.map((n) => element("nodes", n, [n.retrieved ? "retrieved" : "", n.evidence ? "evidence" : "",
        n.focus ? "focus" : ""])),
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

  function overlaps(a, b) {
    return a.x1 < b.x2 && b.x1 < a.x2 && a.y1 < b.y2 && b.y1 < a.y2;
  }

  // A label's box on screen as Cytoscape draws it (centred under the node, one line, cut at LABEL_PX with an
  // ellipsis): measured with a canvas in the label font, because Cytoscape sizes labels only when it renders.
  const measure = document.createElement("canvas").getContext("2d");
  function labelBox(node) {
    const font = node.style("font-family") || "Helvetica Neue, Helvetica, sans-serif";
    measure.font = (node.hasClass("hover") ? "bold " : "") + FONT_PX + "px " + font;
    const width = Math.min(measure.measureText(String(node.data("label") || "")).width, LABEL_PX) + 4;
    const nb = node.renderedBoundingBox({ includeLabels: false, includeOverlays: false });
    const x = (nb.x1 + nb.x2) / 2, top = nb.y2 + 1;
    return { x1: x - width / 2, x2: x + width / 2, y1: top, y2: top + FONT_PX * 1.3 + 2, w: width, h: FONT_PX * 1.3 + 2 };
  }

  // Greedy label placement in screen space: a node gets its label when the label's box covers no label
  // already placed and no other node, and lies inside the view.
  function placeLabels(cy) {
    const zoom = cy.zoom();
    cy.style().selector("node").style({ "font-size": FONT_PX / zoom, "text-max-width": LABEL_PX / zoom,
      "text-margin-y": 2 / zoom, "text-background-padding": 1 / zoom }).update();
    const nodes = cy.nodes().sort((a, b) => priority(b) - priority(a));
    const nodeBoxes = nodes.map((n) => n.renderedBoundingBox({ includeLabels: false, includeOverlays: false }));
    const placed = [], keep = [], w = cy.width(), h = cy.height();
    nodes.forEach((n, i) => {
      const box = labelBox(n);
      if (box.x1 < 0 || box.y1 < 0 || box.x2 > w || box.y2 > h) return;
      if (placed.some((p) => overlaps(p, box))) return;
      if (nodeBoxes.some((nb, j) => j !== i && overlaps(nb, box))) return;
      placed.push(box); keep.push(n);
    });
    cy.batch(() => {
      cy.nodes().removeClass("labelled");
      keep.forEach((n) => n.addClass("labelled"));
    });
    cy.scratch("labelBoxes", placed);
  }

  // Scale the laid-out positions so the drawing fills the box at zoom 1 (never closer than the node size
  // allows), then push apart nodes that still overlap.
  function fitAtZoomOne(cy) {
    const nodes = cy.nodes();
    if (nodes.length === 0) return;
    const pad = 30, bb = nodes.boundingBox({ includeLabels: false });
    const w = Math.max(cy.width() - 2 * pad, 50), h = Math.max(cy.height() - 2 * pad, 50);
    const sx = bb.w > 1 ? w / bb.w : 1, sy = bb.h > 1 ? h / bb.h : 1;
    const scale = Math.min(sx, sy, 3);
    const cx = (bb.x1 + bb.x2) / 2, cyy = (bb.y1 + bb.y2) / 2;
    nodes.positions((n) => ({ x: (n.position("x") - cx) * scale, y: (n.position("y") - cyy) * scale }));
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
    fitAtZoomOne(cy);
    placeLabels(cy);
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
