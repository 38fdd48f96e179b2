// The page of `graphrag-suite serve`: ask, pick one or two methods, see chunks, answer and evidence graph.
// Every text from the server is inserted with textContent (never as HTML).
"use strict";

const $ = (id) => document.getElementById(id);
const state = { llm: false, auth: false, graphs: {} };
window.graphragGraphs = state.graphs; // for tests: cytoscape instance per column

function headers() {
  const h = { "Content-Type": "application/json" };
  const key = $("api-key").value || sessionStorage.getItem("graphrag-key") || "";
  if (key) { h.Authorization = "Bearer " + key; sessionStorage.setItem("graphrag-key", key); }
  return h;
}

async function api(path, body) {
  const res = await fetch(path, body === undefined ? { headers: headers() }
    : { method: "POST", headers: headers(), body: JSON.stringify(body) });
  if (!res.ok) {
    let detail = res.status + " " + res.statusText;
    try { const j = await res.json(); detail = typeof j.detail === "string" ? j.detail : JSON.stringify(j.detail); } catch (e) { /* not JSON */ }
    throw new Error(detail);
  }
  return res;
}

function el(tag, cls, text) {
  const e = document.createElement(tag);
  if (cls) e.className = cls;
  if (text !== undefined) e.textContent = text;
  return e;
}

function showError(msg) { $("error").hidden = !msg; $("error").textContent = msg || ""; }

async function init() {
  const health = await (await fetch("/health")).json();
  state.llm = health.llm; state.auth = health.auth;
  $("key-row").hidden = !health.auth;
  $("answer-label").hidden = !health.llm;
  $("status").textContent = health.chunks + " chunks" + (health.llm ? ", LLM ready" : ", no LLM (retrieval only)");
  try {
    const methods = await (await api("/methods")).json();
    for (const m of methods) {
      for (const sel of [$("method-a"), $("method-b")]) {
        const o = el("option", "", m.name); o.value = m.name; o.title = m.description; sel.append(o);
      }
    }
    $("method-a").value = methods.some((m) => m.name === "agrag") ? "agrag" : methods[0].name;
  } catch (e) { showError(e.message); }
  document.body.dataset.state = "ready";
}

const COLOURS = { entity: "#4c78a8", chunk: "#f58518", community: "#b279a2" };

function drawGraph(container, graph, info) {
  const elements = {
    nodes: graph.nodes.map((n) => ({ data: n, classes: [n.kind, n.retrieved ? "retrieved" : "", n.evidence ? "evidence" : ""].join(" ") })),
    edges: graph.edges.map((e) => ({ data: e, classes: e.kind })),
  };
  const cy = cytoscape({
    container, elements, wheelSensitivity: 0.3,
    style: [
      { selector: "node", style: { label: "data(label)", "font-size": 9, width: 16, height: 16, "text-wrap": "ellipsis",
        "text-max-width": 110, "background-color": COLOURS.entity } },
      { selector: "node.chunk", style: { shape: "round-rectangle", "background-color": COLOURS.chunk } },
      { selector: "node.community", style: { shape: "hexagon", "background-color": COLOURS.community } },
      { selector: "node.retrieved", style: { "border-width": 3, "border-color": "#333" } },
      { selector: "edge", style: { width: 1.2, "line-color": "#bbb", "curve-style": "bezier" } },
      { selector: "edge.relation", style: { width: 2, "line-color": "#54a24b", label: "data(label)", "font-size": 7, color: "#386" } },
      { selector: "edge.member", style: { "line-style": "dashed", "line-color": "#b279a2" } },
      { selector: "node:selected", style: { "background-color": "#e45756" } },
    ],
    layout: { name: graph.nodes.length > 300 ? "grid" : "cose", animate: false, randomize: false },
  });
  cy.on("tap", "node", (ev) => showNode(info, ev.target.data(), graph.chunks));
  return cy;
}

function showNode(info, node, chunks) {
  info.replaceChildren(el("strong", "", node.label + " (" + node.kind + ")"));
  if (node.chunk_count !== undefined) info.append(el("span", "meta", " in " + node.chunk_count + " chunk(s)"));
  for (const cid of node.chunks || []) {
    const c = chunks[cid];
    if (!c) continue;
    info.append(el("div", "meta", cid + " — " + (c.title || c.doc_id)));
    info.append(el("div", "chunk-text", c.text));
  }
}

function renderChunks(list, nodes) {
  list.replaceChildren();
  for (const n of nodes) {
    const li = el("li");
    if (n.kind === "evidence") {
      li.append(el("div", "meta", "evidence"), el("div", "evidence", n.text));
    } else {
      li.append(el("div", "meta", (n.score == null ? "" : n.score.toFixed(3) + "  ") + n.doc_id + (n.metadata.title ? " — " + n.metadata.title : "")));
      li.append(el("div", "chunk-text", n.text));
    }
    list.append(li);
  }
}

function renderResult(col, key, result) {
  col.querySelector(".timing").textContent = "retrieve " + result.timing_ms.retrieve.toFixed(1) + " ms";
  renderChunks(col.querySelector(".chunks"), result.nodes);
  if (state.graphs[key]) state.graphs[key].destroy();
  const info = col.querySelector(".node-info");
  const graph = result.graph || { nodes: [], edges: [], chunks: {} };
  state.graphs[key] = drawGraph(col.querySelector(".graph"), graph, info);
  const legend = el("div", "legend", graph.nodes.length + " nodes, " + graph.edges.length + " edges:");
  for (const [kind, colour] of Object.entries(COLOURS)) {
    const dot = el("span", "dot"); dot.style.background = colour; legend.append(dot, kind);
  }
  info.before(legend);
}

async function streamQuery(body, col, key) {
  const res = await api("/query", { ...body, stream: true });
  const reader = res.body.getReader(), decoder = new TextDecoder();
  const answer = col.querySelector(".answer");
  answer.hidden = false; answer.textContent = "";
  let buffer = "";
  for (;;) {
    const { value, done } = await reader.read();
    if (done) break;
    buffer += decoder.decode(value, { stream: true });
    let cut;
    while ((cut = buffer.indexOf("\n\n")) >= 0) {
      const block = buffer.slice(0, cut); buffer = buffer.slice(cut + 2);
      const event = (block.match(/^event: (.*)$/m) || [])[1];
      const data = JSON.parse((block.match(/^data: (.*)$/m) || [, "null"])[1]);
      if (event === "retrieval") renderResult(col, key, data);
      else if (event === "token") answer.textContent += data.delta;
      else if (event === "error") throw new Error(data.detail);
    }
  }
}

async function runColumn(method, key, question, topK) {
  const col = $("column").content.firstElementChild.cloneNode(true);
  col.querySelector(".title").textContent = method;
  $("columns").append(col);
  const body = { question, method, top_k: topK };
  if (state.llm && $("want-answer").checked) await streamQuery(body, col, key);
  else renderResult(col, key, await (await api("/retrieve", body)).json());
}

$("ask").addEventListener("submit", async (ev) => {
  ev.preventDefault();
  showError("");
  document.body.dataset.state = "busy";
  for (const k of Object.keys(state.graphs)) { state.graphs[k].destroy(); delete state.graphs[k]; }
  $("columns").replaceChildren();
  const question = $("question").value, topK = parseInt($("top-k").value, 10) || 5;
  const methods = [$("method-a").value, $("method-b").value].filter(Boolean);
  try {
    await Promise.all(methods.map((m, i) => runColumn(m, i ? "b" : "a", question, topK)));
  } catch (e) { showError(e.message); }
  document.body.dataset.state = "done";
});

init().catch((e) => { showError(e.message); document.body.dataset.state = "ready"; });
