// The page of `graphrag-suite serve`: ask (one or two methods side by side, each with its settings; chunks,
// cited answer, evidence graph), documents (list, upload, delete) and a graph explorer.
// Every text from the server is inserted with textContent (never as HTML).
"use strict";

const $ = (id) => document.getElementById(id);
const state = { llm: false, auth: false, readOnly: false, maxBody: 1000000, maxUpload: 50000000, methods: {}, graphs: {} };
window.graphragGraphs = state.graphs; // for tests: the Cytoscape instance of each column and of the explorer

function el(tag, cls, text) {
  const e = document.createElement(tag);
  if (cls) e.className = cls;
  if (text !== undefined) e.textContent = text;
  return e;
}

// ---- talking to the server: readable errors, a busy indicator -------------------------------------------

function headers(json) {
  const h = json ? { "Content-Type": "application/json" } : {};
  const key = $("api-key").value || sessionStorage.getItem("graphrag-key") || "";
  if (key) { h.Authorization = "Bearer " + key; sessionStorage.setItem("graphrag-key", key); }
  return h;
}

// The server's `detail` as one sentence: a string, or a list of {loc|field, msg|message} from a validator.
function detailText(detail) {
  if (typeof detail === "string") return detail;
  if (Array.isArray(detail)) {
    return detail.map((d) => {
      const where = (d.field || (d.loc || []).filter((p) => p !== "body").join(".")) || "request";
      return where + ": " + (d.message || d.msg || "invalid");
    }).join("; ");
  }
  return detail == null ? "" : JSON.stringify(detail);
}

async function api(path, options) {
  const opts = options || {};
  const form = opts.body instanceof FormData;  // files: the browser sets the multipart Content-Type itself
  const init = { method: opts.method || (opts.body === undefined ? "GET" : "POST"), headers: headers(opts.body !== undefined && !form) };
  if (opts.body !== undefined) init.body = form ? opts.body : JSON.stringify(opts.body);
  let res;
  try {
    res = await fetch(path, init);
  } catch (e) {
    throw new Error("the server did not answer (is it still running?)");
  }
  if (!res.ok) {
    let detail = "";
    try { detail = detailText((await res.json()).detail); } catch (e) { /* not JSON */ }
    if (res.status === 401) { $("key-row").hidden = false; detail = "this server wants an API key: enter it above"; }
    if (res.status === 413 && !detail) detail = "the request is larger than the server accepts";
    throw new Error(detail || "the server answered " + res.status + " " + res.statusText);
  }
  return res;
}

const getJSON = async (path) => (await api(path)).json();

function showError(message) {
  $("error").hidden = !message;
  $("error-text").textContent = message || "";
}
$("error-close").addEventListener("click", () => showError(""));

// One indicator for everything in flight: what is being done, and for how long.
const busy = { tasks: new Map(), next: 0, started: 0, timer: null };

function renderBusy() {
  const labels = [...busy.tasks.values()];
  $("busy").hidden = labels.length === 0;
  document.body.dataset.busy = labels.length ? "true" : "false";
  if (!labels.length) return;
  const secs = ((performance.now() - busy.started) / 1000).toFixed(1);
  $("busy-text").textContent = labels.join(", ") + "… " + secs + " s";
}

async function whileBusy(label, work) {
  const id = busy.next++;
  if (busy.tasks.size === 0) {
    busy.started = performance.now();
    busy.timer = setInterval(renderBusy, 200);
  }
  busy.tasks.set(id, label);
  renderBusy();
  try {
    return await work();
  } finally {
    busy.tasks.delete(id);
    if (busy.tasks.size === 0) clearInterval(busy.timer);
    renderBusy();
  }
}

// ---- tabs ---------------------------------------------------------------------------------------------

const tabLoaded = {};
function showTab(name) {
  for (const b of document.querySelectorAll("#tabs button")) b.setAttribute("aria-selected", String(b.dataset.tab === name));
  for (const s of document.querySelectorAll(".tab")) s.hidden = s.id !== "tab-" + name;
  if (name === "documents" && !tabLoaded.documents) { tabLoaded.documents = true; loadDocuments(false); }
  if (name === "graph" && state.graphs.explorer) state.graphs.explorer.resize();
  if (name === "graph") $("entity-search").focus();
}
for (const b of document.querySelectorAll("#tabs button")) b.addEventListener("click", () => showTab(b.dataset.tab));

// ---- per-method settings, from each method's config (GET /methods) ------------------------------------

function settingInput(name, spec) {
  const schema = spec.schema || {}, def = spec.default;
  let input;
  if (schema.type === "boolean" && schema.nullable) {
    // three states: a checkbox would send false for "none" (the default that decides by itself)
    input = el("select"); input.dataset.kind = "boolean";
    for (const [label, value] of [["(none)", ""], ["true", "true"], ["false", "false"]]) {
      const o = el("option", "", label); o.value = value; input.append(o);
    }
    input.value = def == null ? "" : String(def);
  } else if (schema.type === "boolean") {
    input = el("input"); input.type = "checkbox"; input.checked = !!def;
  } else if (schema.type === "integer" || schema.type === "number") {
    input = el("input"); input.type = "number";
    input.step = schema.type === "integer" ? "1" : "any";
    if (schema.minimum !== undefined) input.min = schema.minimum;
    if (schema.maximum !== undefined) input.max = schema.maximum;
    input.value = def == null ? "" : String(def);
    if (schema.nullable) input.placeholder = "none";
  } else if (schema.enum) {
    input = el("select");
    if (schema.nullable) { const o = el("option", "", "(none)"); o.value = ""; input.append(o); }
    for (const v of schema.enum) { const o = el("option", "", String(v)); o.value = String(v); input.append(o); }
    input.value = def == null ? "" : String(def);
  } else if (schema.type === "array" && schema.items && schema.items.enum) {
    input = el("span", "choices");
    for (const v of schema.items.enum) {
      const box = el("input"); box.type = "checkbox"; box.value = v; box.checked = (def || []).includes(v);
      const label = el("label"); label.append(box, " " + v); input.append(label);
    }
  } else {
    input = el("input"); input.type = "text"; input.value = def == null ? "" : JSON.stringify(def);
    input.placeholder = "JSON";
  }
  input.dataset.setting = name;
  input.classList.add("setting-input");
  return input;
}

function settingValue(input, spec) {
  const schema = spec.schema || {};
  if (input.classList.contains("choices")) {
    return [...input.querySelectorAll("input")].filter((b) => b.checked).map((b) => b.value);
  }
  if (input.type === "checkbox") return input.checked;
  const raw = input.value.trim();
  if (raw === "") return schema.nullable ? null : spec.default;
  if (input.dataset.kind === "boolean") return raw === "true";
  if (input.type === "number") return Number(raw);
  if (input.tagName === "SELECT") return raw;
  try { return JSON.parse(raw); } catch (e) { throw new Error("setting " + input.dataset.setting + ": not valid JSON"); }
}

function renderSettings(details, methodName) {
  const m = state.methods[methodName];
  details.replaceChildren();
  details.dataset.method = methodName || "";
  details.hidden = !m;
  if (!m) return;
  const summary = el("summary", "", "settings for " + m.name);
  details.append(summary);
  const grid = el("div", "setting-grid");
  if (m.variants && m.variants.length) {
    const variant = el("select", "variant");
    const o = el("option", "", "(as configured)"); o.value = ""; variant.append(o);
    for (const v of m.variants) { const opt = el("option", "", v); opt.value = v; variant.append(opt); }
    const label = el("label", "setting-name", "variant");
    grid.append(label, variant, el("span", "setting-help", "a preset of the settings (an ablation of the paper)"));
  }
  const names = Object.keys(m.settings);
  if (!names.length) details.append(el("p", "setting-help", m.name + " has no settings."));
  for (const name of names) {
    const spec = m.settings[name];
    grid.append(el("label", "setting-name", name), settingInput(name, spec), el("span", "setting-help", spec.description || ""));
  }
  const reset = el("button", "reset", "defaults"); reset.type = "button";
  reset.addEventListener("click", () => { renderSettings(details, methodName); details.open = true; });
  details.append(grid, reset);
  details.addEventListener("input", () => markChanged(details));
  details.addEventListener("change", () => markChanged(details));
}

function markChanged(details) {
  let changed = 0;
  try { changed = Object.keys(collectSettings(details).settings).length; } catch (e) { /* shown on ask */ }
  const variant = details.querySelector("select.variant");
  details.querySelector("summary").textContent = "settings for " + details.dataset.method
    + (changed ? " (" + changed + " changed)" : "") + (variant && variant.value ? " · " + variant.value : "");
}

// {method: "name" or "name:variant", settings: {only the ones that differ from the default}}
function collectSettings(details) {
  const m = state.methods[details.dataset.method];
  const settings = {};
  for (const input of details.querySelectorAll("[data-setting]")) {
    const spec = m.settings[input.dataset.setting];
    const value = settingValue(input, spec);
    if (JSON.stringify(value) !== JSON.stringify(spec.default)) settings[input.dataset.setting] = value;
  }
  const variant = details.querySelector("select.variant");
  return { method: m.name + (variant && variant.value ? ":" + variant.value : ""), settings };
}

$("method-a").addEventListener("change", () => renderSettings($("settings-a"), $("method-a").value));
$("method-b").addEventListener("change", () => renderSettings($("settings-b"), $("method-b").value));

// ---- asking: chunks, the cited answer, the evidence graph -----------------------------------------------

const CITATION = /\[\s*(\d{1,4}(?:\s*[,;]\s*\d{1,4})*)\s*\]/g;

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
  let number = 0;
  for (const n of nodes) {
    const li = el("li");
    if (n.kind === "evidence") {
      li.className = "evidence-item";
      li.append(el("div", "meta", "evidence"), el("div", "evidence", n.text));
    } else {
      number += 1;
      li.dataset.chunk = n.id; li.dataset.passage = String(number);
      const meta = el("div", "meta", "[" + number + "] " + (n.score == null ? "" : n.score.toFixed(3) + "  ")
        + n.doc_id + (n.metadata.title ? " — " + n.metadata.title : ""));
      li.append(meta, el("div", "chunk-text", n.text));
    }
    list.append(li);
  }
}

function flashChunk(col, key, chunkId) {
  const li = col.querySelector('.chunks li[data-chunk="' + CSS.escape(chunkId) + '"]');
  if (li) {
    li.classList.remove("flash"); void li.offsetWidth; li.classList.add("flash");
    li.scrollIntoView({ block: "nearest" });
  }
  const cy = state.graphs[key];
  if (cy) { cy.elements().unselect(); cy.getElementById(chunkId).select(); }
}

// The answer with each [n] a link to passage n's chunk; a number with no passage is flagged.
function renderAnswer(col, key, text, citations, chunkNodes) {
  const box = col.querySelector(".answer");
  box.hidden = false;
  box.replaceChildren();
  const passages = (citations && citations.passages)
    || chunkNodes.map((n, i) => ({ number: i + 1, chunk_id: n.id, doc_id: n.doc_id, title: n.metadata.title }));
  const byNumber = new Map(passages.map((p) => [p.number, p]));
  let last = 0;
  const cited = new Set();
  for (const m of text.matchAll(CITATION)) {
    box.append(document.createTextNode(text.slice(last, m.index)));
    for (const num of m[1].split(/\s*[,;]\s*/).map(Number)) {
      const p = byNumber.get(num);
      if (p) {
        cited.add(num);
        const a = el("a", "cite", "[" + num + "]");
        a.href = "#"; a.title = (p.title || p.doc_id || "") + " (" + p.chunk_id + ")"; a.dataset.chunk = p.chunk_id;
        a.addEventListener("click", (ev) => { ev.preventDefault(); flashChunk(col, key, p.chunk_id); });
        box.append(a);
      } else {
        const bad = el("span", "cite invalid", "[" + num + "]");
        bad.title = "cites passage " + num + ", which was not given to the model";
        box.append(bad);
      }
    }
    last = m.index + m[0].length;
  }
  box.append(document.createTextNode(text.slice(last)));
  const invalid = [...box.querySelectorAll(".cite.invalid")].length;
  if (invalid) box.append(el("div", "cite-warning", invalid + " citation(s) name a passage that was not given"));
  for (const li of col.querySelectorAll(".chunks li[data-passage]")) {
    li.classList.toggle("cited", cited.has(Number(li.dataset.passage)));
  }
}

function graphHeight(nodes) {
  return Math.round(Math.min(680, 380 + 2 * nodes));
}

function renderResult(col, key, result) {
  col.querySelector(".timing").textContent = "retrieve " + result.timing_ms.retrieve.toFixed(1) + " ms"
    + (result.timing_ms.graph != null ? ", graph " + result.timing_ms.graph.toFixed(1) + " ms" : "");
  renderChunks(col.querySelector(".chunks"), result.nodes);
  if (state.graphs[key]) state.graphs[key].destroy();
  const info = col.querySelector(".node-info");
  const graph = result.graph || { nodes: [], edges: [], chunks: {} };
  const box = col.querySelector(".graph");
  box.style.height = graphHeight(graph.nodes.length) + "px";
  state.graphs[key] = GraphView.draw(box, graph, (node) => showNode(info, node, graph.chunks));
  col.querySelectorAll(".legend").forEach((l) => l.remove());
  const legend = el("div", "legend", graph.nodes.length + " nodes, " + graph.edges.length + " edges"
    + (graph.truncated ? " (the first " + graph.nodes.length + ")" : "") + ":");
  for (const [kind, colour] of Object.entries(GraphView.COLOURS)) {
    const dot = el("span", "dot"); dot.style.background = colour; legend.append(dot, kind);
  }
  info.before(legend);
}

async function streamQuery(body, col, key) {
  const res = await api("/query", { body: { ...body, stream: true } });
  const reader = res.body.getReader(), decoder = new TextDecoder();
  const answer = col.querySelector(".answer");
  answer.hidden = false; answer.textContent = "";
  let buffer = "", chunkNodes = [];
  for (;;) {
    const { value, done } = await reader.read();
    if (done) break;
    buffer += decoder.decode(value, { stream: true });
    let cut;
    while ((cut = buffer.indexOf("\n\n")) >= 0) {
      const block = buffer.slice(0, cut); buffer = buffer.slice(cut + 2);
      const event = (block.match(/^event: (.*)$/m) || [])[1];
      const data = JSON.parse((block.match(/^data: (.*)$/m) || [, "null"])[1]);
      if (event === "retrieval") {
        renderResult(col, key, data);
        chunkNodes = data.nodes.filter((n) => n.kind === "chunk");
      } else if (event === "token") answer.textContent += data.delta;
      else if (event === "done") renderAnswer(col, key, data.answer, data.citations, chunkNodes);
      else if (event === "error") throw new Error(data.detail);
    }
  }
}

async function runColumn(request, key, question, topK) {
  const col = $("column").content.firstElementChild.cloneNode(true);
  col.querySelector(".title").textContent = request.method
    + (Object.keys(request.settings).length ? " · " + JSON.stringify(request.settings) : "");
  col.dataset.key = key;
  $("columns").append(col);
  const body = { question, method: request.method, top_k: topK };
  if (Object.keys(request.settings).length) body.settings = request.settings;
  try {
    if (state.llm && $("want-answer").checked) await streamQuery(body, col, key);
    else renderResult(col, key, await (await api("/retrieve", { body })).json());
  } catch (e) {
    col.querySelector(".timing").textContent = "failed";
    throw new Error(request.method + ": " + e.message);
  }
}

$("ask").addEventListener("submit", async (ev) => {
  ev.preventDefault();
  showError("");
  document.body.dataset.state = "busy";
  $("ask-button").disabled = true;
  for (const k of ["a", "b"]) { if (state.graphs[k]) { state.graphs[k].destroy(); delete state.graphs[k]; } }
  $("columns").replaceChildren();
  const question = $("question").value, topK = parseInt($("top-k").value, 10) || 5;
  const wanted = [["a", $("settings-a")], ["b", $("settings-b")]].filter(([, d]) => d.dataset.method);
  try {
    const requests = wanted.map(([k, d]) => [k, collectSettings(d)]);
    const label = "asking " + requests.map(([, r]) => r.method).join(" and ");
    const outcomes = await whileBusy(label, () => Promise.allSettled(
      requests.map(([k, r]) => runColumn(r, k, question, topK))));
    const failed = outcomes.filter((o) => o.status === "rejected").map((o) => o.reason.message);
    if (failed.length) showError("Could not answer. " + failed.join(" · "));
  } catch (e) { showError(e.message); }
  $("ask-button").disabled = false;
  document.body.dataset.state = "done";
});

// ---- documents: list with counts, upload, delete ------------------------------------------------------

const docs = { shown: 0, total: 0, page: 200 };

async function loadDocuments(append) {
  const q = $("doc-filter").value.trim();
  const offset = append ? docs.shown : 0;
  try {
    const body = await whileBusy("loading documents", () =>
      getJSON("/documents?" + new URLSearchParams({ q, offset, limit: docs.page })));
    const tbody = $("doc-table").querySelector("tbody");
    if (!append) tbody.replaceChildren();
    for (const d of body.documents) tbody.append(documentRow(d));
    docs.shown = offset + body.documents.length; docs.total = body.total;
    $("doc-count").textContent = body.total + " document" + (body.total === 1 ? "" : "s") + (q ? " matching" : "")
      + (docs.shown < body.total ? " (showing " + docs.shown + ")" : "");
    $("doc-more").hidden = docs.shown >= body.total;
    document.body.dataset.documents = String(Date.now());
  } catch (e) { showError("Could not list the documents: " + e.message); }
}

function documentRow(d) {
  const tr = el("tr");
  tr.dataset.doc = d.doc_id;
  tr.append(el("td", "doc-id", d.doc_id), el("td", "", d.title || ""), el("td", "num", String(d.chunks)),
    el("td", "num", d.characters.toLocaleString("en")), el("td", "num", String(d.entities)));
  const cell = el("td");
  if (!state.readOnly) {
    const del = el("button", "delete", "delete"); del.type = "button";
    del.addEventListener("click", () => deleteDocument(d.doc_id, del));
    cell.append(del);
  }
  tr.append(cell);
  return tr;
}

// The first click arms the button, a second one within 5 s deletes.
async function deleteDocument(docId, button) {
  if (!button.classList.contains("armed")) {
    button.classList.add("armed"); button.textContent = "click again to delete";
    setTimeout(() => { button.classList.remove("armed"); button.textContent = "delete"; }, 5000);
    return;
  }
  try {
    const r = await whileBusy("deleting " + docId, async () =>
      (await api("/documents/" + encodeURIComponent(docId), { method: "DELETE" })).json());
    showMessage("deleted " + r.deleted + " (" + r.chunks_removed + " chunk" + (r.chunks_removed === 1 ? "" : "s") + ")"
      + (r.persisted ? ", saved" : ", not saved (the server keeps changes in memory)"));
    await loadDocuments(false);
  } catch (e) { showError("Could not delete " + docId + ": " + e.message); }
}

function showMessage(text) { $("doc-message").hidden = !text; $("doc-message").textContent = text; }

const stem = (name) => name.replace(/\.[^.]*$/, "");

// Formats the server reads itself (POST /documents/files), as `graphrag-suite index` reads a folder: a PDF one
// document per page ("report.pdf#page=3"), titles the document's own (a Markdown file's "# heading").
const FILE_FORMATS = [".pdf", ".docx", ".pptx", ".html", ".htm", ".xhtml", ".epub", ".txt", ".md", ".markdown"];
const extOf = (name) => (name.match(/\.[^.]*$/) || [""])[0].toLowerCase();

// A .jsonl corpus read here, as `graphrag-suite index` reads one: one {"id", "title", "text", ...} object a line
// (other plain fields: metadata), sent as JSON to POST /documents.
async function readUploads(files) {
  const out = [];
  for (const file of files) {
    const ext = extOf(file.name);
    const text = await file.text();
    if (ext === ".jsonl") {
      text.split(/\r?\n/).forEach((line, i) => {
        if (!line.trim()) return;
        let row;
        try { row = JSON.parse(line); } catch (e) { throw new Error(file.name + " line " + (i + 1) + ": not valid JSON"); }
        if (!row || typeof row !== "object" || typeof row.text !== "string") {
          throw new Error(file.name + " line " + (i + 1) + ': expected an object with a "text" string');
        }
        const metadata = {};
        for (const [k, v] of Object.entries(row)) {
          if (!["id", "title", "text", "doc_id"].includes(k) && ["string", "number", "boolean"].includes(typeof v)) metadata[k] = v;
        }
        if ("doc_id" in row) metadata.source_doc_id = String(row.doc_id);
        out.push({ doc_id: String(row.id ?? stem(file.name) + "-" + (i + 1)), title: String(row.title || ""), text: row.text,
          metadata, from: file.name });
      });
    } else {
      throw new Error(file.name + ": not a format read here (.jsonl, " + FILE_FORMATS.join(", ") + ")");
    }
  }
  const seen = new Set();
  for (const d of out) {
    if (seen.has(d.doc_id)) throw new Error(d.from + ": the id " + d.doc_id + " appears twice in the upload");
    seen.add(d.doc_id);
  }
  return out;
}

// Requests below the server's body limit (a document larger than it is sent alone and refused with a reason).
function batches(documents) {
  const limit = state.maxBody * 0.9, enc = new TextEncoder(), out = [];
  let batch = [], size = 0;
  for (const d of documents) {
    const doc = { doc_id: d.doc_id, title: d.title, text: d.text };
    if (d.metadata && Object.keys(d.metadata).length) doc.metadata = d.metadata;
    const n = enc.encode(JSON.stringify(doc)).length + 2;
    if (batch.length && size + n > limit) { out.push(batch); batch = []; size = 0; }
    batch.push(doc); size += n;
  }
  if (batch.length) out.push(batch);
  return out;
}

$("doc-upload").addEventListener("click", async () => {
  showError(""); showMessage("");
  const chosen = [...$("doc-files").files];
  if (!chosen.length) { showError("Choose files first (PDF, Word, PowerPoint, HTML, EPUB, Markdown, text or .jsonl)."); return; }
  const files = chosen.filter((f) => !FILE_FORMATS.includes(extOf(f.name)));  // read here, sent as JSON
  const documentFiles = chosen.filter((f) => FILE_FORMATS.includes(extOf(f.name)));  // read by the server
  let added = 0, chunks = 0;
  const warnings = [];
  try {
    const big = documentFiles.find((f) => f.size > state.maxUpload);
    if (big) throw new Error(big.name + " is larger than this server accepts (" + state.maxUpload + " bytes)");
    const documents = await readUploads(files);
    if (!documents.length && !documentFiles.length) throw new Error("the files hold no documents");
    await whileBusy("adding " + chosen.length + " file" + (chosen.length === 1 ? "" : "s"), async () => {
      for (const file of documentFiles) {  // one request a file: a large PDF does not hold the others back
        const form = new FormData();
        form.append("files", file, file.name);
        const r = await (await api("/documents/files", { body: form })).json();
        added += r.inserted.length; chunks += r.chunks.length; warnings.push(...(r.warnings || []));
      }
      for (const batch of batches(documents)) {
        const r = await (await api("/documents", { body: { documents: batch } })).json();
        added += r.inserted.length; chunks += r.chunks.length;
      }
    });
    showMessage("added " + added + " document" + (added === 1 ? "" : "s") + " (" + chunks + " chunks)"
                + (warnings.length ? "; " + warnings.join("; ") : ""));
    $("doc-files").value = "";
  } catch (e) {
    showError("Could not add the documents: " + e.message + (added ? " (" + added + " were added before this)" : ""));
  }
  await loadDocuments(false);
});

let filterTimer = null;
$("doc-filter").addEventListener("input", () => { clearTimeout(filterTimer); filterTimer = setTimeout(() => loadDocuments(false), 250); });
$("doc-more").addEventListener("click", () => loadDocuments(true));

// ---- graph explorer: search an entity, expand its neighbours, open its chunks ---------------------------

// Neighbourhood JSON as drawable elements: edge ids that name their ends (so expands merge), the focus marked.
function explorerGraph(body, focus) {
  const edges = new Map();
  for (const e of body.edges) {
    const id = e.fact_id || e.source + "|" + (e.kind || "") + "|" + e.target;
    if (!edges.has(id)) edges.set(id, { ...e, id });
  }
  const nodes = body.nodes.map((n) => ({ ...n, chunk_count: n.kind === "entity" ? n.chunks : undefined, chunks: undefined,
    focus: n.id === focus }));
  return { nodes, edges: [...edges.values()] };
}

async function neighbourhood(entity) {
  return getJSON("/graph/neighbourhood?" + new URLSearchParams({ entity, hops: 1, limit: 60 }));
}

async function explore(entityId) {
  showError("");
  try {
    const body = await whileBusy("loading the neighbours of " + entityId, () => neighbourhood(entityId));
    if (state.graphs.explorer) state.graphs.explorer.destroy();
    const graph = explorerGraph(body, entityId);
    state.graphs.explorer = GraphView.draw($("explorer-graph"), graph, explorerClick);
    const node = state.graphs.explorer.getElementById(entityId);
    if (node.nonempty()) showEntity(node.data());
    if (body.truncated) {
      $("explorer-info").append(el("p", "meta", "Only the nearest " + body.nodes.length
        + " nodes are drawn; expand a node to see more around it."));
    }
  } catch (e) { showError("Could not explore " + entityId + ": " + e.message); }
}

function explorerClick(data) {
  if (data.kind === "chunk") openChunk(data.id);
  else showEntity(data);
}

function showEntity(data) {
  const info = $("explorer-info"), cy = state.graphs.explorer;
  info.replaceChildren(el("h3", "", data.label), el("div", "meta", (data.type ? data.type + " · " : "")
    + "in " + (data.chunk_count ?? "?") + " chunk(s)"));
  const expand = el("button", "expand", "expand neighbours"); expand.type = "button";
  expand.addEventListener("click", async () => {
    try {
      const body = await whileBusy("expanding " + data.label, () => neighbourhood(data.id));
      const added = GraphView.merge(cy, explorerGraph(body, null), data.id);
      info.querySelector(".expand-result").textContent = (added ? " " + added + " node(s) added" : " nothing new around it")
        + (body.truncated ? " (the nearest " + body.nodes.length + ")" : "");
    } catch (e) { showError("Could not expand " + data.label + ": " + e.message); }
  });
  info.append(expand, el("span", "expand-result meta"));
  const chunks = cy.getElementById(data.id).neighborhood("node.chunk");
  if (chunks.length) info.append(el("h4", "", "Its chunks"));
  const list = el("ul", "entity-chunks");
  chunks.forEach((c) => {
    const li = el("li"), open = el("a", "", c.data("label") + " (" + c.id() + ")");
    open.href = "#"; open.dataset.chunk = c.id();
    open.addEventListener("click", (ev) => { ev.preventDefault(); openChunk(c.id()); });
    li.append(open); list.append(li);
  });
  info.append(list);
}

async function openChunk(chunkId) {
  try {
    const c = await whileBusy("opening " + chunkId, () => getJSON("/chunks/" + encodeURIComponent(chunkId)));
    const info = $("explorer-info");
    info.replaceChildren(el("h3", "", c.title || c.doc_id), el("div", "meta", c.id + " · document " + c.doc_id),
      el("div", "chunk-text open-chunk", c.text));
    if (c.entities.length) {
      info.append(el("h4", "", "Entities in it"));
      const row = el("div", "entity-links");
      for (const e of c.entities) {
        const b = el("button", "entity-link", e.label); b.type = "button";
        b.addEventListener("click", () => explore(e.id));
        row.append(b);
      }
      info.append(row);
    }
    const cy = state.graphs.explorer;
    if (cy) { cy.elements().unselect(); cy.getElementById(chunkId).select(); }
  } catch (e) { showError("Could not open " + chunkId + ": " + e.message); }
}

let searchTimer = null;
$("entity-search").addEventListener("input", () => {
  clearTimeout(searchTimer);
  searchTimer = setTimeout(async () => {
    const q = $("entity-search").value.trim(), list = $("entity-results");
    if (!q) { list.replaceChildren(); return; }
    try {
      const body = await whileBusy("searching entities", () => getJSON("/graph/entities?" + new URLSearchParams({ q, limit: 15 })));
      list.replaceChildren();
      if (!body.entities.length) list.append(el("li", "meta", "no entity named like that"));
      for (const e of body.entities) {
        const b = el("button", "entity-result", e.label); b.type = "button"; b.dataset.entity = e.id;
        b.append(el("span", "meta", " " + e.chunk_count + " chunk(s)"));
        b.addEventListener("click", () => explore(e.id));
        const li = el("li"); li.append(b); list.append(li);
      }
    } catch (e) { showError("Could not search: " + e.message); }
  }, 200);
});

// ---- start ----------------------------------------------------------------------------------------------

async function loadMethods() {
  const methods = await getJSON("/methods");
  for (const sel of [$("method-a"), $("method-b")]) {
    sel.querySelectorAll("option[value]:not([value=''])").forEach((o) => o.remove());
  }
  for (const m of methods) {
    state.methods[m.name] = m;
    for (const sel of [$("method-a"), $("method-b")]) {
      const o = el("option", "", m.name); o.value = m.name; o.title = m.description; sel.append(o);
    }
  }
  $("method-a").value = methods.some((m) => m.name === "agrag") ? "agrag" : methods[0].name;
  renderSettings($("settings-a"), $("method-a").value);
  renderSettings($("settings-b"), "");
}

async function init() {
  const health = await (await api("/health")).json();
  state.llm = health.llm; state.auth = health.auth; state.readOnly = health.read_only;
  state.maxBody = health.max_body || state.maxBody;
  state.maxUpload = health.max_upload || state.maxUpload;
  $("key-row").hidden = !health.auth;
  $("answer-label").hidden = !health.llm;
  $("upload-box").hidden = health.read_only;
  $("status").textContent = health.chunks + " chunks" + (health.llm ? ", LLM ready" : ", no LLM (retrieval only)")
    + (health.read_only ? ", read-only" : "");
  // With an API key, the lists load once the key is entered (a wrong one says so).
  $("api-key").addEventListener("change", async () => {
    showError("");
    try { await loadMethods(); } catch (e) { showError("Could not list the methods: " + e.message); }
    if (tabLoaded.documents) loadDocuments(false);
  });
  try { await loadMethods(); } catch (e) { showError("Could not list the methods: " + e.message); }
  document.body.dataset.state = "ready";
}

init().catch((e) => { showError(e.message); document.body.dataset.state = "ready"; });
