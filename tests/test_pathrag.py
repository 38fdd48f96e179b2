"""PathRAG retriever, path prompt and extractor."""

import asyncio
import json

import pytest

from llama_index_graphrag_suite import GraphRAGIndex, IndexConfig
from llama_index_graphrag_suite.documents import make_document
from llama_index_graphrag_suite.embeddings import HashEmbedding
from llama_index_graphrag_suite.llm import ScriptedLLM
from llama_index_graphrag_suite.methods.pathrag import PATHS_HEADER, PathRAGRetriever, RenderedPath, render_paths

pytestmark = pytest.mark.usefixtures("evidence_in_retrieve")  # these tests read the evidence node

QUESTION = "Which gallery holds The Grey Harbour by Ada Lorne, the painter born in Marlow?"


@pytest.fixture(scope="module")
def index():
    from conftest import CORPUS

    docs = [make_document(i, text, title) for i, title, text in CORPUS]
    return GraphRAGIndex.from_documents(docs, embed_model=HashEmbedding(dim=128), config=IndexConfig(entities="statistical", entity_threshold=0.1))


def split(nodes):
    chunks = [n for n in nodes if n.node.metadata["kind"] == "chunk"]
    evidence = [n for n in nodes if n.node.metadata["kind"] == "evidence"]
    return chunks, evidence


def test_llm_free_retrieval_returns_chunks_and_paths(index):
    nodes = PathRAGRetriever(index, top_k=3).retrieve(QUESTION)
    chunks, evidence = split(nodes)
    assert len(chunks) == 3 and len(evidence) == 1 and nodes[-1] is evidence[0]
    ev = evidence[0].node.metadata["evidence"]
    assert ev["keywords_from"] == "statistical" and ev["keywords"][-1] == QUESTION
    assert "Ada Lorne" in ev["keywords"] or "Grey Harbour" in " ".join(ev["keywords"])
    assert ev["paths"], "the query's entities are connected in this corpus"
    reliabilities = [p["reliability"] for p in ev["paths"]]
    assert reliabilities == sorted(reliabilities, reverse=True)
    for p in ev["paths"]:
        assert len(p["nodes"]) == p["hops"] + 1 == len(p["edges"]) + 1 == len(p["resources"])
        for (u, v), edge in zip(zip(p["nodes"], p["nodes"][1:]), p["edges"]):
            assert (edge["u"], edge["v"]) == (u, v) and edge["facts"]  # relation edges only by default
            for fact in edge["facts"]:
                assert {fact["subject"], fact["object"]} == {u, v}
        # Eq. 4: mean over edges of the summed node resources.
        assert p["reliability"] == pytest.approx(sum(p["resources"]) / p["hops"], abs=1e-5)
    # The most reliable path's supporting chunks come first among path chunks.
    assert [c["from"] for c in ev["chunks"]] == [n.node.metadata["pathrag_source"] for n in chunks]
    assert json.dumps(ev)  # JSON-serialisable
    # The evidence text lists the paths least reliable first (Eq. 6), each as node / edge lines (Eq. 5).
    text = evidence[0].node.text
    assert text.startswith(PATHS_HEADER)
    shown = [float(line.rsplit("reliability ", 1)[1].rstrip("):")) for line in text.splitlines() if line.startswith("Path (")]
    assert shown == sorted(shown) and shown[-1] == pytest.approx(reliabilities[0], abs=1e-4)


def test_chunk_ranking_modes(index):
    paths_only = split(PathRAGRetriever(index, top_k=6, variant="paths_only").retrieve(QUESTION))[0]
    assert paths_only and all(n.node.metadata["pathrag_source"] == "path" for n in paths_only)
    scores = [n.score for n in paths_only]
    assert scores == sorted(scores, reverse=True)  # by best supporting path reliability
    first = split(PathRAGRetriever(index, top_k=6, chunk_ranking="paths_first").retrieve(QUESTION))[0]
    assert [n.node.node_id for n in first][: len(paths_only)] == [n.node.node_id for n in paths_only]
    # Combined: dense cosine + path_weight x reliability / best reliability. Weight 0 is the dense ranking;
    # a weight far above any cosine gap puts the path chunks first, in the paths_first order.
    from llama_index_graphrag_suite.methods.baselines import DenseRetriever

    dense_ids = [n.node.node_id for n in DenseRetriever(index, top_k=6).retrieve(QUESTION)]
    no_paths = PathRAGRetriever(index, top_k=6, path_weight=0.0, sparse_weight=0.0)  # ranks as dense
    assert [n.node.node_id for n in split(no_paths.retrieve(QUESTION))[0]] == dense_ids
    heavy = split(PathRAGRetriever(index, top_k=6, path_weight=100.0).retrieve(QUESTION))[0]
    assert [n.node.node_id for n in heavy][: len(paths_only)] == [n.node.node_id for n in paths_only]
    default = split(PathRAGRetriever(index, top_k=6).retrieve(QUESTION))[0]
    scores = [n.score for n in default]
    assert scores == sorted(scores, reverse=True) and len(default) == 6
    with pytest.raises(ValueError):
        PathRAGRetriever(index, variant="nope")
    with pytest.raises(ValueError):
        PathRAGRetriever(index, edge_kinds=("contains",))


def test_path_prompt_order_truncation_and_ablations():
    paths = [RenderedPath(f"Path {name}:\n  node {name}\n  -[rel]-> shared edge\n  node z", rel, hops)
             for name, rel, hops in (("a", 0.9, 1), ("c", 0.7, 2), ("b", 0.5, 3), ("d", 0.3, 1))]  # most reliable first
    text, kept = render_paths(paths, question="Who?")
    assert text.startswith("Question: Who?\n\n" + PATHS_HEADER)
    order = [text.index(f"Path {n}:") for n in "dbca"]
    assert order == sorted(order)  # ascending reliability: the most reliable path (a) is last
    assert kept == [3, 2, 1, 0]
    # Budget for two paths: the two least reliable are dropped.
    from llama_index_graphrag_suite.llm.usage import count_tokens

    budget = count_tokens(paths[0].text) + count_tokens(paths[1].text) + 2
    text, kept = render_paths(paths, max_tokens=budget)
    assert kept == [1, 0] and "Path b:" not in text and "Path d:" not in text
    # Hop-first: more hops first, so the shortest paths end the prompt (ties by reliability ascending).
    assert render_paths(paths, order="hop_first")[1] == [2, 1, 3, 0]
    shuffled = render_paths(paths, order="random", seed=3)[1]
    assert sorted(shuffled) == [0, 1, 2, 3] and shuffled == render_paths(paths, order="random", seed=3)[1]
    flat, _ = render_paths(paths, flat=True)
    assert "Path a:" not in flat and flat.count("shared edge") == 1 and "node d" in flat
    assert render_paths([])[0].startswith("No relational path")
    with pytest.raises(ValueError):
        render_paths(paths, order="descending")


def test_prompt_variants_keep_retrieval(index):
    base = PathRAGRetriever(index, top_k=3).retrieve(QUESTION)
    flat = PathRAGRetriever(index, top_k=3, variant="flat").retrieve(QUESTION)
    hops = PathRAGRetriever(index, top_k=3, variant="hop_first").retrieve(QUESTION)
    ids = [n.node.node_id for n in split(base)[0]]
    assert ids == [n.node.node_id for n in split(flat)[0]] == [n.node.node_id for n in split(hops)[0]]
    assert split(flat)[1][0].node.text.startswith("Entities and relations:")
    assert split(hops)[1][0].node.metadata["evidence"]["order"] == "hop_first"


def test_llm_keywords_and_malformed_answers(index):
    good = ScriptedLLM(responder=lambda p: '{"high_level_keywords": ["art"], "low_level_keywords": ["Kell Academy", "Tomas Brey"]}')
    nodes = PathRAGRetriever(index, top_k=3, llm=good).retrieve("Where did Tomas Brey teach?")
    ev = split(nodes)[1][0].node.metadata["evidence"]
    assert ev["keywords_from"] == "llm" and ev["keywords"][:3] == ["Kell Academy", "Tomas Brey", "art"]
    assert "KEYWORDS" not in good.prompts[0] and "low_level_keywords" in good.prompts[0]
    assert {"kell academy", "tomas brey"} <= {n["id"] for n in ev["nodes"]}
    for bad in ("Sorry, I cannot do that.", '{"low_level_keywords": 7}', "[1, 2"):
        llm = ScriptedLLM(responder=lambda p, bad=bad: bad)
        nodes = PathRAGRetriever(index, top_k=3, llm=llm).retrieve("Where did Tomas Brey teach?")
        chunks, evidence = split(nodes)
        assert len(chunks) == 3 and evidence[0].node.metadata["evidence"]["keywords_from"] == "llm_unreadable_statistical"
    failing = ScriptedLLM(responses=["unused"], fail_on=[1], error=lambda n: RuntimeError("boom"))
    nodes = PathRAGRetriever(index, top_k=3, llm=failing).retrieve("Where did Tomas Brey teach?")
    assert split(nodes)[1][0].node.metadata["evidence"]["keywords_from"] == "llm_unreadable_statistical"


def test_async_retrieve_matches_sync(index):
    retriever = PathRAGRetriever(index, top_k=4)
    sync_ids = [n.node.node_id for n in retriever.retrieve(QUESTION)]
    async_ids = [n.node.node_id for n in asyncio.run(retriever.aretrieve(QUESTION))]
    assert sync_ids == async_ids


def test_query_engine_puts_question_first_and_paths_last(index):
    llm = ScriptedLLM(responder=lambda prompt: "The Vant Gallery.")
    engine = PathRAGRetriever(index, top_k=2).as_query_engine(llm=llm)
    response = engine.query(QUESTION)
    assert str(response) == "The Vant Gallery."
    prompt = llm.prompts[-1]
    assert prompt.startswith(f"Question: {QUESTION}")
    assert prompt.index(PATHS_HEADER) > max(prompt.index(n.node.get_content()[:40]) for n in response.source_nodes
                                            if n.node.metadata["kind"] == "chunk")
    assert response.source_nodes[-1].node.metadata["kind"] == "evidence"


# ---------------------------------------------------------------------- config, presets, prompts

def test_config_defaults_validation_and_sources():
    from llama_index_graphrag_suite.methods.pathrag import ChunkRanking, EdgeKind, PathOrder, PathRAGConfig

    cfg = PathRAGConfig()
    assert (cfg.num_nodes, cfg.num_paths, cfg.alpha, cfg.theta, cfg.paths_per_pair, cfg.max_hops) == (40, 15, 0.7, 0.01, 1, None)
    assert (cfg.max_keywords, cfg.keyword_max_df, cfg.max_path_tokens, cfg.max_edge_texts) == (8, 0.005, 5000, 2)
    assert (cfg.order, cfg.flat, cfg.edge_kinds, cfg.chunk_ranking, cfg.path_weight, cfg.sparse_weight) == (
        PathOrder.ASCENDING, False, (EdgeKind.RELATION,), ChunkRanking.COMBINED, 0.2, 0.25)
    # str Enums: the strings validate and compare equal to the members
    assert PathRAGConfig(order="hop_first", chunk_ranking="paths_first").order == "hop_first" == PathOrder.HOP_FIRST
    for field in PathRAGConfig.model_fields.values():
        assert field.description and field.json_schema_extra["paper"]
    for bad in ({"num_nodes": 0}, {"num_paths": 0}, {"paths_per_pair": 0}, {"max_keywords": 0}, {"max_edge_texts": 0},
                {"alpha": 0.0}, {"alpha": 1.5}, {"theta": -0.1}, {"keyword_max_df": 0.0}, {"keyword_max_df": 2.0},
                {"path_weight": -1.0}, {"chunk_ranking": "nope"}, {"order": "descending"}, {"edge_kinds": ()},
                {"edge_kinds": ("contains",)}, {"no_such_setting": 1}):
        with pytest.raises(ValueError):
            PathRAGConfig(**bad)


def test_variants_are_presets_of_the_config():
    from llama_index_graphrag_suite.methods.pathrag import VARIANTS, ChunkRanking, PathOrder, PathRAGConfig

    assert set(VARIANTS) == set(PathRAGConfig.PRESETS) == {"random_order", "hop_first", "flat", "paths_only", "paper"}
    assert PathRAGConfig.resolve(variant="random_order").order is PathOrder.RANDOM
    assert PathRAGConfig.resolve(variant="hop_first").order is PathOrder.HOP_FIRST
    assert PathRAGConfig.resolve(variant="flat").flat is True
    assert PathRAGConfig.resolve(variant="paths_only").chunk_ranking is ChunkRanking.PATHS_ONLY
    # each preset changes only what it names
    default = PathRAGConfig().model_dump()
    for name, values in PathRAGConfig.PRESETS.items():
        changed = {k for k, v in PathRAGConfig.resolve(variant=name).model_dump().items() if v != default[k]}
        assert changed == set(values), name
    # a setting given with a variant is applied after the preset
    assert PathRAGConfig.resolve(variant="hop_first", num_paths=3).num_paths == 3


def test_a_variant_is_the_same_as_its_settings(index):
    def run(**kw):
        nodes = PathRAGRetriever(index, top_k=4, **kw).retrieve(QUESTION)
        chunks, evidence = split(nodes)
        ev = dict(evidence[0].node.metadata["evidence"])
        ev.pop("variant")
        return [(n.node.node_id, n.score) for n in chunks], evidence[0].node.text, ev

    for variant, settings in (("random_order", {"order": "random"}), ("hop_first", {"order": "hop_first"}),
                              ("flat", {"flat": True}), ("paths_only", {"chunk_ranking": "paths_only"})):
        retriever = PathRAGRetriever(index, variant=variant)
        assert retriever.variant == variant and retriever.config == PathRAGRetriever(index, **settings).config
        assert run(variant=variant) == run(**settings)
    evidence = split(PathRAGRetriever(index, top_k=4, variant="paths_only").retrieve(QUESTION))[1][0]
    assert evidence.node.metadata["evidence"]["variant"] == "paths_only"


def test_prompts_are_listed_and_update_prompts_changes_the_keyword_prompt(index):
    from llama_index.core import PromptTemplate

    from llama_index_graphrag_suite.methods.pathrag import KEYWORDS_PROMPT, PATH_QA_PROMPT

    answer = '{"high_level_keywords": [], "low_level_keywords": ["Tomas Brey"]}'
    llm = ScriptedLLM(responder=lambda p: answer)
    retriever = PathRAGRetriever(index, top_k=3, llm=llm)
    prompts = retriever.get_prompts()
    assert set(prompts) == {"keywords", "answer"}
    assert prompts["keywords"].get_template() == KEYWORDS_PROMPT.get_template()
    assert prompts["answer"].get_template() == PATH_QA_PROMPT.get_template()
    retriever.retrieve("Where did Tomas Brey teach?")
    assert llm.prompts[-1] == KEYWORDS_PROMPT.format(question="Where did Tomas Brey teach?")

    retriever.update_prompts({"keywords": PromptTemplate("CUSTOM KEYWORDS for: {question}")})
    assert retriever.get_prompts()["keywords"].get_template() == "CUSTOM KEYWORDS for: {question}"
    nodes = retriever.retrieve("Where did Tomas Brey teach?")
    assert llm.prompts[-1] == "CUSTOM KEYWORDS for: Where did Tomas Brey teach?"
    assert split(nodes)[1][0].node.metadata["evidence"]["keywords"][0] == "Tomas Brey"
    # a fresh retriever still has the default prompt
    other = ScriptedLLM(responder=lambda p: answer)
    PathRAGRetriever(index, top_k=3, llm=other).retrieve("Where did Tomas Brey teach?")
    assert other.prompts[-1].startswith("Extract keywords from the question")
    with pytest.raises(KeyError):
        retriever.update_prompts({"no_such_prompt": PromptTemplate("x")})


def test_update_prompts_changes_the_answer_prompt_of_the_query_engine(index):
    from llama_index.core import PromptTemplate

    llm = ScriptedLLM(responder=lambda prompt: "The Vant Gallery.")
    retriever = PathRAGRetriever(index, top_k=2)
    retriever.update_prompts({"answer": PromptTemplate("CUSTOM ANSWER {query_str}\n{context_str}\nEND")})
    retriever.as_query_engine(llm=llm).query(QUESTION)
    prompt = llm.prompts[-1]
    assert prompt.startswith(f"CUSTOM ANSWER {QUESTION}") and prompt.rstrip().endswith("END")
    assert PATHS_HEADER in prompt  # the evidence node is still placed last


# ---------------------------------------------------------------------- extractor

EXTRACTED = {
    "p-ada": {"entities": [{"name": "Ada Lorne", "type": "person", "description": "A painter born in Marlow."},
                           {"name": "Marlow", "type": "geo", "description": "Ada Lorne's birthplace."},
                           {"name": "The Grey Harbour", "type": "work", "description": "A painting of 1901."}],
              "relations": [{"source": "Ada Lorne", "target": "The Grey Harbour", "description": "Ada Lorne painted The Grey Harbour.",
                             "keywords": "painted", "strength": 9},
                            {"source": "Ada Lorne", "target": "Marlow", "description": "Ada Lorne was born in Marlow.",
                             "keywords": "born in", "strength": "high"}]},
    "p-harbour": {"entities": [{"name": "The Grey Harbour", "type": "work", "description": "It hangs in the Vant Gallery."},
                               {"name": "Vant Gallery", "type": "organization", "description": "A gallery."},
                               {"name": "", "type": "person"}, "junk"],
                  "relations": [{"source": "The Grey Harbour", "target": "Vant Gallery",
                                 "description": "The Grey Harbour hangs in the Vant Gallery.", "keywords": "hangs in"},
                                {"source": "Nobody"}]},
}


def _extraction_llm(gleaned=None, broken=()):
    def respond(prompt):
        if "were missed" in prompt:
            return json.dumps(gleaned or {"entities": [], "relations": []})
        for key, answer in EXTRACTED.items():
            marker = {"p-ada": "Ada Lorne was a painter", "p-harbour": "The Grey Harbour is a painting"}[key]
            if marker in prompt:
                return "not json at all" if key in broken else "Here you go:\n```json\n" + json.dumps(answer) + "\n```"
        return '{"entities": [], "relations": []}'
    return ScriptedLLM(responder=respond)


def _pg_index(extractor, ids=("p-ada", "p-harbour", "p-vant"), store=None):
    from llama_index.core import PropertyGraphIndex
    from llama_index.core.node_parser import TokenTextSplitter

    from conftest import CORPUS

    docs = [make_document(i, text, title) for i, title, text in CORPUS if i in ids]
    kwargs = {"property_graph_store": store} if store is not None else {}
    return PropertyGraphIndex.from_documents(docs, kg_extractors=[extractor], embed_model=HashEmbedding(dim=64),
                                             transformations=[TokenTextSplitter(chunk_size=256, chunk_overlap=0)],
                                             embed_kg_nodes=False, use_async=False, **kwargs)


def test_extractor_in_property_graph_index_merges_descriptions():
    from llama_index_graphrag_suite.extractors.pathrag_extractor import PathRAGExtractor

    extractor = PathRAGExtractor(llm=_extraction_llm(), max_gleaning=0)
    pg = _pg_index(extractor)
    store = pg.property_graph_store
    harbour = store.graph.nodes["the grey harbour"]
    # Described in two chunks: the stored node carries both descriptions, whichever chunk came last.
    assert harbour.properties["description"] == "A painting of 1901. | It hangs in the Vant Gallery."
    assert harbour.properties["entity_type"] == "work" and harbour.label == "entity"
    triplets = {(s.id, r.label, o.id): r for s, r, o in store.graph.get_triplets()}
    painted = triplets[("ada lorne", "painted", "the grey harbour")]
    assert painted.properties["text"] == "Ada Lorne painted The Grey Harbour." and painted.properties["keywords"] == "painted"
    assert triplets[("ada lorne", "born in", "marlow")].properties["strength"] == 1.0  # unreadable strength -> 1
    assert any(label == "contains" and obj == "ada lorne" for _, label, obj in triplets)
    stats = extractor.stats
    assert stats["llm_calls"] == 3 and stats["dropped_malformed"] == 3  # empty name, "junk", relation without target

    # The retriever runs on the plain PropertyGraphIndex and describes nodes with the extracted descriptions.
    retriever = PathRAGRetriever(pg, top_k=2)
    nodes = retriever.retrieve("Where does the painting by Ada Lorne hang?")
    chunks, evidence = split(nodes)
    assert chunks and evidence
    ev = evidence[0].node.metadata["evidence"]
    assert ev["paths"]
    assert "(person): A painter born in Marlow." in evidence[0].node.text or "(work): A painting of 1901." in evidence[0].node.text


def test_extractor_gleaning_malformed_output_and_later_inserts():
    from llama_index.core.graph_stores import SimplePropertyGraphStore

    from llama_index_graphrag_suite.extractors.pathrag_extractor import PathRAGExtractor

    gleaned = {"entities": [{"name": "Kell Academy", "type": "organization", "description": "An art school."}], "relations": []}
    store = SimplePropertyGraphStore()
    extractor = PathRAGExtractor(llm=_extraction_llm(gleaned=gleaned, broken=("p-harbour",)), max_gleaning=2,
                                 property_graph_store=store)
    pg = _pg_index(extractor, ids=("p-ada", "p-harbour"), store=store)
    nodes = pg.property_graph_store.graph.nodes
    assert "kell academy" in nodes and nodes["kell academy"].properties["description"] == "An art school."
    assert "vant gallery" not in nodes  # its chunk's answer was unreadable: skipped, not fatal
    # Each chunk: the answer (p-harbour's unreadable), a gleaning round that adds Kell Academy, a second
    # one that adds nothing new, then gleaning stops although max_gleaning would allow more -> 2 x 3 calls.
    assert extractor.stats["llm_calls"] == 6 and extractor.stats["dropped_malformed"] == 1

    # A later insert describing a stored entity again merges into the stored node (the index would skip it).
    later = PathRAGExtractor(llm=_extraction_llm(), max_gleaning=0, property_graph_store=store)
    pg._kg_extractors = [later]
    from conftest import CORPUS

    pg.insert(make_document("p-harbour-2", CORPUS[2][2], "The Grey Harbour"))
    assert store.graph.nodes["the grey harbour"].properties["description"] == "A painting of 1901. | It hangs in the Vant Gallery."


# ------------------------------------------------------------------ the faster per-query steps rank as before


@pytest.mark.parametrize("sentence, key", [
    ("Ada Lorne was a painter born in Marlow.", "ada lorne"),
    ("The painter Ada Lorne's Grey Harbour hangs in Vant.", "ada lorne"),  # a possessive
    ("Lorne, Ada: a painter.", "ada lorne"),  # the words, not in order
    ("ADA-LORNE painted it.", "ada lorne"),  # case and punctuation
    ("The Grey Harbour (1911) by Ada Lorne.", "grey harbour"),
    ("Born in Marlow, she left at twelve.", "marlow"),
    ("Marlowe is another town.", "marlow"),  # a longer word is not the name
    ("Ada, Lorne and Vant.", "ada lorne"),  # a comma between the words: a phrase may not cross it
    ("Nothing here.", "ada lorne"),
])
def test_mentions_finds_a_name_where_find_mentions_does(sentence, key):
    """PathRAG's node description reads a chunk one sentence at a time (``render.mentions``) and stops at the first
    that names the entity; per sentence it must agree with the extractor's own matcher, which analyses the whole
    chunk."""
    from llama_index_graphrag_suite.extractors.entity_stats import find_mentions
    from llama_index_graphrag_suite.methods.pathrag.render import mentions

    assert mentions(sentence, key, 6) == bool(find_mentions(sentence, {key}, 6))


def test_entity_nodes_are_each_keywords_best_names_as_the_vector_table_ranks_them(index):
    """One matrix product for every keyword picks, per keyword, the rows ``VectorTable.search`` picks (ties by row)."""
    import numpy as np

    from llama_index_graphrag_suite.methods.pathrag.retriever import top_rows

    sims = np.array([0.2, 0.9, 0.5, 0.9, 0.1, 0.5], np.float32)
    assert top_rows(sims, 3).tolist() == [1, 3, 2] and top_rows(sims, 10).tolist() == [1, 3, 2, 5, 0, 4]
    table = index.entity_vectors
    retriever = PathRAGRetriever(index, top_k=3, num_nodes=4)
    keywords, _ = retriever.keywords(QUESTION)
    vectors = list(retriever._phrase_vectors([k for k in keywords if k != QUESTION])) + [index.embed_query(QUESTION)]
    by_search = [table.search(v, 4)[0].tolist() for v in vectors]
    by_product = [top_rows(col, 4).tolist() for col in (table.vectors() @ np.stack(vectors).T).T]
    assert by_product == by_search


def test_key_phrase_vectors_are_remembered_by_batch(index):
    """The same batch of key phrases is embedded once (a query asked again, or embedded before a latency run)."""
    calls = []
    model = index.embed_model
    original = model.get_text_embedding_batch

    def counting(texts, **kwargs):
        calls.append(tuple(texts))
        return original(texts, **kwargs)

    retriever = PathRAGRetriever(index, top_k=3)
    phrases = ["Kell Academy", "Tomas Brey unseen"]
    object.__setattr__(model, "get_text_embedding_batch", counting)
    try:
        first = retriever._phrase_vectors(phrases)
        again = retriever._phrase_vectors(list(phrases))
        retriever._phrase_vectors(phrases[:1])  # another batch: embedded on its own
    finally:
        object.__delattr__(model, "get_text_embedding_batch")
    assert calls == [tuple(phrases), tuple(phrases[:1])] and (first == again).all()


def test_pair_edges_list_what_the_neighbour_matrix_lists_for_relations_and_synonyms():
    """Parallel relation edges both ways, synonyms, a self-loop and contains edges: the edges ``edge_record``
    reads for a pair are those ``snap.neighbours_of(u)`` gives, in the same order, without the contains edges."""
    from types import SimpleNamespace

    import numpy as np

    from llama_index_graphrag_suite.graph.snapshot import CONTAINS, GraphSnapshot
    from llama_index_graphrag_suite.methods.pathrag.render import _pair_edges

    rng = np.random.default_rng(3)
    rel = (rng.integers(0, 6, 40), rng.integers(0, 6, 40))  # six entities: many parallel and reversed edges
    rel[1][:3] = rel[0][:3]  # self-loops
    con = (rng.integers(6, 9, 12), rng.integers(0, 6, 12))
    syn = (rng.integers(0, 6, 8), rng.integers(0, 6, 8), rng.random(8))
    snap = GraphSnapshot.from_edges([f"n{i}" for i in range(9)], 6, rel, con, syn)
    memo: dict = {}
    index = SimpleNamespace(snapshot=snap, cached=lambda name, build: memo.setdefault(name, build()))
    seen = 0
    for u in range(9):
        rows, eids = snap.neighbours_of(u)
        for v in range(9):
            expected = [e for e in eids[rows == v].tolist() if snap.edge_kind[e] != CONTAINS]
            assert _pair_edges(index, u, v) == expected
            seen += len(expected)
    assert seen > 80 and list(memo) == ["pathrag.pair_edges"]


def test_a_listed_entity_table_gives_the_exact_nodes_when_every_list_is_probed(index, monkeypatch):
    """A large entity table's node retrieval reads each keyword's nearest lists (no pass over every name);
    probing every list is the exact search."""
    from llama_index_graphrag_suite.graph import vector_lists
    from llama_index_graphrag_suite.graph.vector_lists import train_lists

    retriever = PathRAGRetriever(index)
    keywords = ["Ada Lorne", "Marlow", "Who sculpted The Copper Hare?"]
    exact = retriever.retrieve_nodes(keywords, keywords[-1])
    table = index.entity_vectors
    table.lists = train_lists(table.vectors())
    table.lists.moves = table.moves
    try:
        assert table.listed
        monkeypatch.setattr(vector_lists, "QUERY_NPROBE", len(table.lists.centroids))
        listed = retriever.retrieve_nodes(keywords, keywords[-1])
        assert [r for r, _ in listed] == [r for r, _ in exact]
        assert [s for _, s in listed] == pytest.approx([s for _, s in exact], abs=1e-6)
    finally:
        table.lists = None


def test_combined_ranking_reads_candidates_only_yet_ranks_as_every_chunk(index):
    """The combined ranking scores the base's top k and the path-supported chunks only: the same chunks, order and
    scores as adding the support to a copy of every chunk's score and ranking them all (ties by position)."""
    import numpy as np

    from llama_index_graphrag_suite.methods.scoring import top_k

    retriever = PathRAGRetriever(index, top_k=3)
    order, position = index.chunk_order, retriever._chunk_positions()
    rng = np.random.default_rng(0)
    for trial in range(40):
        base = rng.choice([0.0, 0.25, 0.5, 0.75, 1.0], len(order)) if trial % 2 else rng.random(len(order))
        supported = rng.choice(len(order), rng.integers(0, len(order) + 1), replace=False)
        best = {order[i]: float(rng.choice([0.2, 0.5, 1.0])) for i in supported.tolist()}
        every = base.copy()
        for c, rel in best.items():
            every[position[c]] += retriever.config.path_weight * rel / max(best.values(), default=1.0)
        expected = [order[i] for i in top_k(every, 3)]
        ranked, source, scores = retriever._rank_chunks([], best, base)
        assert ranked == expected
        assert scores == {c: float(every[position[c]]) for c in expected}
        assert source == {c: "path" if c in best else "dense" for c in expected}


def test_entity_rows_are_the_snapshot_lookups(index):
    """The entity vector rows' snapshot rows, found by one Arrow look-up, are the per-id look-ups' (-1: missing)."""
    import numpy as np

    from llama_index_graphrag_suite.methods.pathrag.retriever import _snapshot_rows

    snap, ids = index.snapshot, list(index.entity_vectors.ids)
    np.testing.assert_array_equal(PathRAGRetriever(index)._graph().entity_rows, snap.rows_or_missing(ids))
    probe = ids[::-1] + ["no such entity", snap.node_ids[-1]]
    np.testing.assert_array_equal(_snapshot_rows(snap, probe), snap.rows_or_missing(probe))
