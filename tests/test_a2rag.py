"""A2RAG retriever on the conftest corpus (HashEmbedding): gate, seeds, staged escalation, LLM sufficiency, map-back."""

import asyncio
import json

import numpy as np
import pytest

from llama_index_graphrag_suite import GraphRAGIndex, IndexConfig
from llama_index_graphrag_suite.llm import ScriptedLLM
from llama_index_graphrag_suite.llm.verdicts import yes_no as parse_yes_no
from llama_index_graphrag_suite.methods.a2rag import A2RAGConfig, A2RAGRetriever
from llama_index_graphrag_suite.methods.a2rag.summaries import (
    DocumentSummaries, build_mapback, build_summaries, extractive_summary,
)

# A low ER threshold gives the six-passage corpus a usable graph (people, places and works as entities).
CONFIG = IndexConfig(entities="statistical", entity_threshold=0.1)
EASY = "Where was Ada Lorne born?"
TWO_HOP = "Did Piers Vant hold works by Tomas Brey?"
NO_SEEDS = "Which painting shows fishing boats at dawn?"
OUT_OF_SCOPE = "How do I bake sourdough bread?"
SEED_PROMPT = r"Find the seeds of a graph search"
SUFFICIENCY = r"Is this evidence sufficient"


@pytest.fixture(scope="module")
def index():
    import sys
    from pathlib import Path

    sys.path.insert(0, str(Path(__file__).parent))
    from conftest import CORPUS

    from llama_index_graphrag_suite.documents import make_document
    from llama_index_graphrag_suite.embeddings import HashEmbedding

    docs = [make_document(i, text, title) for i, title, text in CORPUS]
    # the gate's thresholds below were set with one hashed dimension per word
    return GraphRAGIndex.from_documents(docs, embed_model=HashEmbedding(dim=128, spread=1), config=CONFIG)


def chunks_of(nodes):
    return [n for n in nodes if n.node.metadata["kind"] == "chunk"]


def docs_of(nodes):
    return [n.node.metadata["doc_id"] for n in chunks_of(nodes)]


# ---------------------------------------------------------------------- offline artefacts and gate


def test_extractive_summary_is_title_and_lead_sentences():
    text = "Marlow\n\nMarlow is a town on the Esk River. Marlow is known for its harbour. The Esk River reaches the sea."
    assert extractive_summary("Marlow", text, max_chars=80) == (
        "Marlow Marlow is a town on the Esk River. Marlow is known for its harbour.")
    # The first sentence always makes it in, cut to the budget if needed.
    assert extractive_summary("", "A very long first sentence indeed.", max_chars=10) == "A very lon"


def test_gate_abstains_out_of_scope(index):
    r = A2RAGRetriever(index)
    out, inside = r.gate_score(OUT_OF_SCOPE), r.gate_score(EASY)
    assert 0.0 <= out < 0.2 < 0.5 < inside <= 1.0
    assert not r.gate(OUT_OF_SCOPE) and r.gate(EASY)
    # Eq. 1 is the max over documents of the clipped cosine with each summary.
    s = r.summaries()
    assert s.kind == "extractive" and len(s.doc_ids) == 6
    q = index.embed_query(EASY)
    assert r.gate_score(EASY) == pytest.approx(float(np.clip(s.vectors @ q, 0, 1).max()), abs=1e-6)
    assert A2RAGRetriever(index, tau_g=0.99).gate(EASY) is False


def test_summaries_persist_and_llm_summaries_are_not_recomputed(index, tmp_path):
    llm = ScriptedLLM(responder=lambda prompt: "A short summary about " + prompt.split("Title: ")[1].split("\n")[0])
    first = A2RAGRetriever(index, llm=llm, llm_summaries=True, summaries_dir=str(tmp_path))
    s = first.summaries()
    assert s.kind == "llm" and llm.call_count == 6 and "A short summary about Ada Lorne" in s.texts
    assert sorted(p.name for p in tmp_path.iterdir()) == ["summaries.json", "summary_vectors.npy"]
    loaded = DocumentSummaries.load(tmp_path)
    assert loaded.texts == s.texts and np.allclose(loaded.vectors, s.vectors) and loaded.matches(index)
    # A fresh index view (new memo) with the same folder loads instead of calling the LLM again.
    again = A2RAGRetriever(index.view(), llm=ScriptedLLM(), llm_summaries=True, summaries_dir=str(tmp_path))
    assert again.summaries().texts == s.texts
    # A failing LLM falls back to the extractive summary for that document, counted.
    mixed = build_summaries(index, ScriptedLLM(responder=lambda p: "ok summary", fail_on={2}))
    assert mixed.kind == "mixed" and mixed.llm_failures == 1
    (tmp_path / "summaries.json").write_text("{not json")
    with pytest.raises(ValueError, match="corrupt"):
        DocumentSummaries.load(tmp_path)


def test_mapback_is_entity_provenance(index):
    pi = build_mapback(index)
    snap, order = index.snapshot, index.chunk_order
    ent = index.entities["ada lorne"]
    assert {order[c] for c in pi[snap.row("ada lorne")].indices} == ent.chunks
    assert [order[c] for c in pi[snap.row("p-kell#0")].indices] == ["p-kell#0"]


# ---------------------------------------------------------------------- staged retrieval


def test_output_contract_and_top_k_always_filled(index):
    nodes, trace = A2RAGRetriever(index, top_k=6).retrieve_with_trace(EASY)
    chunks = chunks_of(nodes)
    assert len(chunks) == 6 and len(nodes) == 7 and nodes[-1].node.metadata["kind"] == "evidence"
    assert len(set(docs_of(nodes))) == 6  # no duplicates; the rest filled from the hybrid ranking
    assert {n.node.metadata["a2rag_source"] for n in chunks} <= {"graph", "hybrid_fill", "hybrid_anchor", "title_anchor",
                                                                "hop_anchor"}
    assert json.loads(json.dumps(nodes[-1].node.metadata)) == nodes[-1].node.metadata
    assert {k: v for k, v in trace.items() if k != "timings_ms"} == nodes[-1].node.metadata["evidence"]
    assert set(trace["timings_ms"]) == {"local", "total"}
    for key in ("stage_reached", "seeds", "stages_tried", "graph_evidence", "chunks", "llm_calls"):
        assert key in trace


def test_easy_query_stops_at_stage_one(index):
    nodes, trace = A2RAGRetriever(index, top_k=3).retrieve_with_trace(EASY)
    assert trace["stage_reached"] == "local"
    assert [s["stage"] for s in trace["stages_tried"]] == ["local"] and trace["stages_tried"][0]["sufficient"]
    assert {s["node"] for s in trace["seeds"]} == {"ada lorne", "p-ada#0"}
    assert docs_of(nodes)[0] == "p-ada"
    assert trace["graph_evidence"]["edges"]  # the 1-hop neighbourhood, serialised


def test_two_hop_query_needs_bridges(index):
    nodes, trace = A2RAGRetriever(index, top_k=3).retrieve_with_trace(TWO_HOP)
    tried = trace["stages_tried"]
    assert trace["stage_reached"] == "bridge" and [s["stage"] for s in tried] == ["local", "bridge"]
    assert not tried[0]["sufficient"] and "connect" in tried[0]["reason"]
    assert tried[1]["sufficient"] and tried[1]["bridges"]
    mentions = {s["mention"] for s in trace["seeds"]}
    assert mentions == {"Piers Vant", "Tomas Brey"}
    # Some bridge path joins the two mentions' seeds.
    seed_nodes = {s["node"]: s["mention"] for s in trace["seeds"]}
    ends = [{seed_nodes.get(p[0]), seed_nodes.get(p[-1])} for p in trace["graph_evidence"]["paths"]]
    reached = set().union(*[{seed_nodes[p[-1]]} for p in trace["graph_evidence"]["paths"] if p[-1] in seed_nodes])
    assert reached == mentions and ends
    assert "p-vant" in docs_of(nodes)  # the passage that holds both names


def test_query_without_graph_seeds_reaches_global_and_finds_the_chunk(index):
    nodes, trace = A2RAGRetriever(index, top_k=3).retrieve_with_trace(NO_SEEDS)
    assert trace["seeds"] == [] and trace["stage_reached"] == "global"
    assert [s["stage"] for s in trace["stages_tried"]] == ["local", "bridge", "global"]
    assert all("no seed" in s["reason"] for s in trace["stages_tried"][:2])
    assert trace["stages_tried"][2]["restart"] == {"seeds": 0, "hybrid_chunks": A2RAGConfig().ppr_dense_seeds}
    assert docs_of(nodes)[0] == "p-harbour"


def test_variants_and_fuzzy_seed(index):
    # node_only: no relation seeds; global_only: straight to PPR; no_global: stops at bridges. (TWO_HOP's only
    # relation label touches none of its seed entities, so the full variant keeps none either:
    # tests/test_a2rag_seeds_rules.py covers the anchored labels.)
    assert A2RAGRetriever(index, variant="node_only").retrieve_with_trace(TWO_HOP)[1]["relation_seeds"] == []
    assert A2RAGRetriever(index, variant="global_only").retrieve_with_trace(EASY)[1]["stage_reached"] == "global"
    assert A2RAGRetriever(index, variant="no_global").retrieve_with_trace(NO_SEEDS)[1]["stage_reached"] == "bridge"
    with pytest.raises(ValueError):
        A2RAGRetriever(index, variant="nope")
    with pytest.raises(ValueError):
        A2RAGRetriever(index, tau_g=2.0)
    # A misspelt name still aligns (rapidfuzz ratio >= 0.9), with a lexical score below 1.
    seeds = A2RAGRetriever(index).retrieve_with_trace("Where was Ada Lorn born?")[1]["seeds"]
    assert {s["node"] for s in seeds} >= {"ada lorne"} and all(0.9 <= s["lexical"] < 1 for s in seeds)


def test_relation_seeds_filter_local_edges(index):
    _, trace = A2RAGRetriever(index).retrieve_with_trace("Who founded the Vant Gallery?")
    labels = {r["label"] for r in trace["relation_seeds"]}
    assert "was founded by piers" in labels
    relations = [e for e in trace["graph_evidence"]["edges"] if e["kind"] == "relation"]
    assert relations and all(e["predicate"] in labels for e in relations)


# ---------------------------------------------------------------------- LLM paths


def scripted(*sufficiency_answers, seeds='{"entities": ["Piers Vant", "Tomas Brey"], "relations": ["holds works"]}', **kw):
    return ScriptedLLM(rules=[(SEED_PROMPT, seeds)], responses=list(sufficiency_answers), **kw)


def test_llm_sufficiency_decides_escalation(index):
    llm = scripted("No, the passages do not say.", "Yes.")
    nodes, trace = A2RAGRetriever(index, llm=llm, top_k=3).retrieve_with_trace(TWO_HOP)
    assert trace["stage_reached"] == "bridge" and trace["seed_extraction"] == "llm"
    assert [s["reason"] for s in trace["stages_tried"]] == ["LLM said no", "LLM said yes"]
    assert trace["llm_calls"] == 3 and llm.call_count == 3  # seeds + two checks
    assert "Graph facts:" in llm.prompts[1] and TWO_HOP in llm.prompts[1]
    # The first check said yes: stop at once.
    assert A2RAGRetriever(index, llm=scripted("yes")).retrieve_with_trace(TWO_HOP)[1]["stage_reached"] == "local"


def test_malformed_llm_answers_do_not_crash(index):
    # Unreadable sufficiency answers count as "not sufficient"; an unreadable seed answer falls back.
    llm = scripted("maybe?", "", seeds="entities: Piers Vant")
    nodes, trace = A2RAGRetriever(index, llm=llm, top_k=3).retrieve_with_trace(TWO_HOP)
    assert trace["stage_reached"] == "global" and trace["unparseable_sufficiency"] == 2
    assert trace["seed_extraction"] == "statistical (LLM answer unreadable)"
    assert len(chunks_of(nodes)) == 3
    # A dead server on every call: still three chunks, every failure counted.
    dead = ScriptedLLM(fail_from=1)
    nodes, trace = A2RAGRetriever(index, llm=dead, top_k=3).retrieve_with_trace(TWO_HOP)
    assert len(chunks_of(nodes)) == 3 and trace["stage_reached"] == "global" and trace["unparseable_sufficiency"] == 2


def test_parse_yes_no():
    assert parse_yes_no("Yes") is True and parse_yes_no("**No**, not enough") is False
    assert parse_yes_no("The evidence is sufficient.") is True and parse_yes_no("insufficient") is False
    assert parse_yes_no("yes and no") is None and parse_yes_no("") is None and parse_yes_no("maybe") is None


def test_async_retrieve_matches_sync(index):
    r = A2RAGRetriever(index, top_k=3)
    sync = [n.node.node_id for n in r.retrieve(TWO_HOP)]
    got = [n.node.node_id for n in asyncio.run(r.aretrieve(TWO_HOP))]
    assert got == sync


def test_config_object_and_overrides(index):
    cfg = A2RAGConfig(bridge_hops=3, ppr_top_l=5)
    r = A2RAGRetriever(index, config=cfg, max_paths=7)
    assert r.config.bridge_hops == 3 and r.config.max_paths == 7 and cfg.max_paths == 40
    with pytest.raises(ValueError):
        A2RAGConfig(not_a_field=1)


def test_summaries_are_saved_beside_the_index_and_reused(tmp_path, index):
    from llama_index_graphrag_suite.embeddings import HashEmbedding
    from llama_index_graphrag_suite.methods.a2rag import retriever as a2rag_module

    first = A2RAGRetriever(index).gate_score("Who painted The Grey Harbour?")
    index.persist(tmp_path / "idx")
    loaded = GraphRAGIndex.load(tmp_path / "idx", embed_model=HashEmbedding(dim=128, spread=1))
    original = a2rag_module.build_summaries
    a2rag_module.build_summaries = lambda *a, **k: pytest.fail("summaries rebuilt instead of loaded")
    try:
        assert A2RAGRetriever(loaded).gate_score("Who painted The Grey Harbour?") == pytest.approx(first)
    finally:
        a2rag_module.build_summaries = original


# ---------------------------------------------------------------------- config presets and prompts


def test_variants_are_presets_over_explicit_fields(index):
    from llama_index_graphrag_suite.methods.a2rag import ChunkRanking, GlobalOrder, Stage

    assert set(A2RAGConfig.PRESETS) == {"node_only", "no_global", "global_only", "paper", "unguarded"}
    full = A2RAGConfig()
    assert full.stages == (Stage.LOCAL, Stage.BRIDGE, Stage.GLOBAL) and full.relation_seeds is True
    assert A2RAGConfig.resolve(variant="node_only") == A2RAGConfig(relation_seeds=False)
    assert A2RAGConfig.resolve(variant="no_global").stages == ("local", "bridge")
    assert A2RAGConfig.resolve(variant="global_only").stages == ("global",)
    # A variant is nothing but its preset: the same fields given directly behave the same.
    by_fields = A2RAGRetriever(index, top_k=3, stages=["global"]).retrieve_with_trace(EASY)[1]
    by_variant = A2RAGRetriever(index, top_k=3, variant="global_only").retrieve_with_trace(EASY)[1]
    assert by_fields["variant"] == "full" and by_variant["variant"] == "global_only"
    strip = lambda t: {k: v for k, v in t.items() if k not in ("variant", "timings_ms")}  # noqa: E731
    assert strip(by_fields) == strip(by_variant)
    # Choices are str enums: the string and the member both validate; bad values are clear errors.
    assert A2RAGConfig(global_order="sum").global_order is GlobalOrder.SUM
    assert A2RAGConfig(chunk_ranking=ChunkRanking.RRF).chunk_ranking == "rrf"
    assert A2RAGRetriever(index, top_k=3, chunk_ranking="rrf").retrieve_with_trace(EASY)[1]["chunk_ranking"] == "rrf"
    for bad in ({"global_order": "random"}, {"stages": []}, {"stages": ["global", "local"]},
                {"stages": ["local", "local"]}):
        with pytest.raises(ValueError):
            A2RAGConfig(**bad)


def test_prompts_are_listed_and_update_prompts_changes_what_the_llm_sees(index):
    from llama_index.core import PromptTemplate

    r = A2RAGRetriever(index, llm=scripted("No.", "Yes."), top_k=3)
    assert set(r.get_prompts()) == {"seed_extraction", "sufficiency", "doc_summary", "answer"}
    r.retrieve_with_trace(TWO_HOP)
    assert SUFFICIENCY in r.llm.prompts[1]

    llm = scripted("No.", "Yes.")
    r = A2RAGRetriever(index, llm=llm, top_k=3)
    r.update_prompts({"sufficiency": PromptTemplate("CUSTOM CHECK for {question}\n{evidence}\nEnough? yes or no: ")})
    _, trace = r.retrieve_with_trace(TWO_HOP)
    assert llm.prompts[1].startswith(f"CUSTOM CHECK for {TWO_HOP}") and SUFFICIENCY not in llm.prompts[1]
    assert [s["reason"] for s in trace["stages_tried"]] == ["LLM said no", "LLM said yes"]
    with pytest.raises(KeyError):
        r.update_prompts({"no_such_prompt": PromptTemplate("{query_str}")})
    # The gate's LLM summaries follow a replaced doc_summary prompt too (and are not the default's cached ones).
    llm = ScriptedLLM(responder=lambda prompt: "summary")
    r = A2RAGRetriever(index, llm=llm, llm_summaries=True)
    r.update_prompts({"doc_summary": PromptTemplate("SUMMARISE {title} in {max_words} words: {text}")})
    assert r.summaries().kind == "llm" and llm.call_count == 6
    assert all(p.startswith("SUMMARISE ") for p in llm.prompts)


# ---------------------------------------------------------------------- hybrid anchors and the chunk restart


def test_with_anchors_keeps_the_first_evidence_chunk_and_replaces_from_the_bottom():
    from llama_index_graphrag_suite.methods.a2rag.evidence import _with_anchors

    hyb = np.array([0.1, 0.2, 0.3, 0.9, 1.0, 0.0])
    out = [(0, 0.5, "graph"), (1, 0.3, "graph"), (2, 0.2, "graph"), (6, 0.1, "graph")]
    got = _with_anchors(out, {4: "hybrid_anchor", 3: "title_anchor"}, hyb, 3)  # 4 and 3 are missing from the top 3
    assert [c for c, _, _ in got] == [0, 4, 3, 6] and [s for _, _, s in got][1:3] == ["hybrid_anchor", "title_anchor"]
    assert [c for c, _, _ in _with_anchors(out, {1: "hybrid_anchor"}, hyb, 3)] == [0, 1, 2, 6]  # already there
    assert [c for c, _, _ in _with_anchors(out, {4: "hybrid_anchor"}, hyb, 1)] == [0, 1, 2, 6]  # top_k 1: unchanged
    assert [c for c, _, _ in _with_anchors(out[:1], {4: "hybrid_anchor", 5: "title_anchor"}, hyb, 3)] == [0, 4, 5]  # room


def test_hybrid_anchors_put_the_top_hybrid_chunks_in_every_answer(index):
    from llama_index_graphrag_suite.methods.scoring import hybrid, top_k

    queries = [EASY, TWO_HOP, NO_SEEDS, "Who founded the Vant Gallery?", "Which painter was born in a harbour town?"]
    missing_without = 0
    for q in queries:
        h = hybrid(index.chunk_dense_scores(index.embed_query(q)), index.bm25.scores(q))
        want = {index.chunk_order[c] for c in top_k(h, 2).tolist()}
        with_anchors = {n.node.node_id for n in chunks_of(A2RAGRetriever(index, top_k=3, hybrid_anchors=2).retrieve(q))}
        without = {n.node.node_id for n in chunks_of(A2RAGRetriever(index, top_k=3, hybrid_anchors=0).retrieve(q))}
        assert want <= with_anchors
        missing_without += len(want - without)
    assert missing_without  # the evidence ranking alone leaves some top hybrid chunk out


def test_documents_the_question_names_by_title_are_among_the_answer(index):
    # A comparison names two pages; the walk from one ranks its neighbours above the other page (hybrid anchors
    # off, top_k 2, to see the evidence ranking alone). With title anchors both named pages are returned.
    for q, named in [("Was Marlow older than Kell Academy?", {"p-marlow", "p-kell"}),
                     ("Which is older, Marlow or the Vant Gallery?", {"p-marlow", "p-vant"}),
                     ("Did Ada Lorne or Kell Academy come first?", {"p-ada", "p-kell"})]:
        without = set(docs_of(A2RAGRetriever(index, top_k=2, hybrid_anchors=0,
                                             title_anchors=False).retrieve(q)))
        nodes = chunks_of(A2RAGRetriever(index, top_k=2, hybrid_anchors=0).retrieve(q))
        assert not named <= without and {n.node.metadata["doc_id"] for n in nodes} == named
        assert "title_anchor" in {n.node.metadata["a2rag_source"] for n in nodes}


def test_node_similarity_reads_entity_rows_from_every_block_of_the_table(index):
    """Entity cosines come from the vector table row by row (no joined copy): the same values as the product with
    the whole matrix, also when the table's rows lie in several blocks (what an insert leaves)."""
    from llama_index_graphrag_suite.index.vectors import VectorTable
    from llama_index_graphrag_suite.methods.a2rag.stages import NodeSimilarity, build_graph

    g = build_graph(index, A2RAGConfig())
    table = index.entity_vectors
    whole = np.array(table.vectors())
    half = len(table) // 2
    split = VectorTable(table.dim, list(table.ids), [whole[:half], whole[half:]])
    q = index.embed_query(TWO_HOP)
    rows = np.flatnonzero(g.entity_pos >= 0)[::-1]  # entity rows, out of order
    expected = whole[g.entity_pos[rows]] @ q
    for entity_vectors in (table, split):
        g.entity_vectors = entity_vectors
        sim = NodeSimilarity(g, q, np.zeros(len(g.chunk_rows), np.float32))
        np.testing.assert_array_equal(sim[rows], expected)
