"""AGRAG retriever: filters, subgraph evidence, ablations (config presets), prompts, query engine."""

import asyncio
import json

import pytest
from llama_index.core import PromptTemplate

from llama_index_graphrag_suite import GraphRAGIndex, IndexConfig
from llama_index_graphrag_suite.documents import make_document
from llama_index_graphrag_suite.llm import ScriptedLLM
from llama_index_graphrag_suite.methods.agrag import AGRAGConfig, AGRAGRetriever, MCMIRatio
from llama_index_graphrag_suite.methods.agrag.prompts import AGRAG_QA_PROMPT, TRIPLE_FILTER_PROMPT
from llama_index_graphrag_suite.registry import get_retriever

pytestmark = pytest.mark.usefixtures("evidence_in_retrieve")  # these tests read the evidence node

DOCS = [
    ("orrin", "Orrin Theatre", "The Orrin Theatre is an opera house in Ostravel. The Orrin Theatre was designed by "
     "Cassia Reyes. The Orrin Theatre opened in 1879."),
    ("cassia", "Cassia Reyes", "Cassia Reyes was an architect. Cassia Reyes was born in Lunmoor. Cassia Reyes "
     "studied at the Polytechnic."),
    ("lunmoor", "Lunmoor", "Lunmoor is a town on the Sevrin River. Lunmoor has a harbour. Lunmoor hosts a fair."),
    ("sevrin", "Sevrin River", "The Sevrin River rises in the Haldmere Mountains. The Sevrin River reaches the sea."),
    ("other1", "Brennock", "Brennock is a village on the Ashfall River. Brennock has a mill."),
    ("other2", "Tollard", "Tollard is a hamlet known for cheese. Tollard has a chapel."),
    ("other3", "Vask", "Teodor Vask painted boats. Teodor Vask lived in Brennick."),
]
QUESTION = "On which river lies the birthplace of the architect who designed the Orrin Theatre?"


@pytest.fixture(scope="module")
def index():
    from llama_index_graphrag_suite.embeddings import HashEmbedding

    docs = [make_document(i, t, title) for i, title, t in DOCS]
    return GraphRAGIndex.from_documents(docs, embed_model=HashEmbedding(dim=256), config=IndexConfig(entities="statistical", entity_threshold=0.3))


def split(nodes):
    return [n for n in nodes if n.node.metadata["kind"] == "chunk"], [n for n in nodes if n.node.metadata["kind"] == "evidence"]


def test_llm_free_retrieval_returns_ranked_chunks_and_a_subgraph(index):
    nodes = AGRAGRetriever(index).retrieve(QUESTION)
    chunks, evidence = split(nodes)
    assert 1 <= len(chunks) <= 5 and len(evidence) == 1 and nodes[-1] is evidence[0]
    assert [n.score for n in chunks] == sorted((n.score for n in chunks), reverse=True)
    ev = json.loads(json.dumps(evidence[0].node.metadata))["evidence"]
    assert ev["filter"] == "score_margin"
    mapped = [f["id"] for f in ev["mapped_facts"]]
    assert ev["kept_facts"] and set(ev["kept_facts"]) <= set(mapped) and ev["kept_facts"][0] == mapped[0]
    assert set(ev["terminals"]) <= set(ev["mcmi_nodes"])
    if len(ev["terminals"]) > 1:
        assert ev["steiner_edges"]
    assert ev["mcmi_stopped"] in ("ratio", "frontier", "cap")
    assert "Reasoning graph, part 1:" in evidence[0].node.text
    assert all(n.node.metadata["agrag_source"] in ("graph", "hybrid", "both") for n in chunks)
    assert set(ev["graph_chunks"]) | set(ev["hybrid_chunks"]) >= {n.node.node_id for n in chunks}


def test_llm_filter_keeps_what_the_llm_picks_and_snaps_triples(index):
    plain = AGRAGRetriever(index, variant="no_filter").retrieve(QUESTION)[-1].node.metadata["evidence"]
    mapped = [f["id"] for f in plain["mapped_facts"]]
    assert len(mapped) >= 2
    llm = ScriptedLLM(responses=['```json\n{"keep": [2]}\n```'])
    ev = AGRAGRetriever(index, llm=llm).retrieve(QUESTION)[-1].node.metadata["evidence"]
    assert ev["filter"] == "llm" and ev["kept_facts"] == [mapped[1]]
    assert "Candidate facts:" in llm.prompts[0] and QUESTION in llm.prompts[0]
    second = plain["mapped_facts"][1]
    # a triple written out (slightly differently) instead of a number is snapped to the candidate
    llm = ScriptedLLM(responses=[json.dumps({"keep": [[second["subject"].title(), second["predicate"], second["object"]]]})])
    assert AGRAGRetriever(index, llm=llm).retrieve(QUESTION)[-1].node.metadata["evidence"]["kept_facts"] == [mapped[1]]
    # an invented triple matches nothing: nothing kept, hybrid chunks only
    llm = ScriptedLLM(responses=['{"keep": [["Queen Mab", "rules", "Faerie"]]}'])
    ev = AGRAGRetriever(index, llm=llm).retrieve(QUESTION)[-1].node.metadata["evidence"]
    assert ev["kept_facts"] == [] and ev["fallback"] == "no fact kept"
    # an unreadable answer keeps every candidate and says so
    llm = ScriptedLLM(responses=["I think the second one is best."])
    ev = AGRAGRetriever(index, llm=llm).retrieve(QUESTION)[-1].node.metadata["evidence"]
    assert ev["filter"] == "llm_unreadable_kept_all" and ev["kept_facts"] == mapped


def test_ablations(index):
    hybrid_only = AGRAGRetriever(index, variant="hybrid_only").retrieve(QUESTION)
    hybrid = get_retriever(index, "hybrid").retrieve(QUESTION)
    assert [n.node.node_id for n in split(hybrid_only)[0]] == [n.node.node_id for n in hybrid]
    assert "mapped_facts" not in hybrid_only[-1].node.metadata["evidence"]
    no_mcmi = AGRAGRetriever(index, variant="no_mcmi").retrieve(QUESTION)[-1].node.metadata["evidence"]
    assert no_mcmi["mcmi_stopped"] == "no_mcmi" and no_mcmi["mcmi_added"] == []
    assert {(e["u"], e["v"]) for e in no_mcmi["mcmi_edges"]} == {(e["u"], e["v"]) for e in no_mcmi["steiner_edges"]
                                                                  if e["kind"] != "pseudo"}
    with pytest.raises(ValueError, match="unknown AGRAG variant"):
        AGRAGRetriever(index, variant="nope")


def test_async_and_after_an_update(index):
    r = AGRAGRetriever(index)
    sync = [n.node.node_id for n in r.retrieve(QUESTION)]
    assert [n.node.node_id for n in asyncio.run(r.aretrieve(QUESTION))] == sync
    index.insert([make_document("extra", "The Haldmere Mountains are high. Haldmere Mountains have snow.", "Haldmere")])
    assert r.retrieve("Where does the Sevrin River rise?")[-1].node.metadata["kind"] == "evidence"
    index.delete("extra")


def test_query_engine_puts_the_reasoning_graph_first(index):
    llm = ScriptedLLM(responder=lambda prompt: "The Sevrin River.")
    engine = AGRAGRetriever(index).as_query_engine(llm=llm)
    response = engine.query(QUESTION)
    assert str(response) == "The Sevrin River."
    prompt = llm.prompts[-1]
    assert "reasoning graph" in prompt and prompt.index("Reasoning graph, part 1") < prompt.index("Question:")
    assert response.source_nodes[0].node.metadata["kind"] == "evidence"


def test_built_from_a_plain_property_graph_index():
    from llama_index.core import PropertyGraphIndex
    from llama_index.core.node_parser import TokenTextSplitter

    from llama_index_graphrag_suite.embeddings import HashEmbedding
    from llama_index_graphrag_suite.extractors import CooccurrenceRelationExtractor, StatisticalEntityExtractor

    embed = HashEmbedding(dim=256)
    docs = [make_document(i, t, title) for i, title, t in DOCS]
    pg = PropertyGraphIndex.from_documents(
        docs, kg_extractors=[StatisticalEntityExtractor(threshold=0.3), CooccurrenceRelationExtractor()],
        transformations=[TokenTextSplitter(chunk_size=256, chunk_overlap=32)], embed_model=embed,
        embed_kg_nodes=False, use_async=False)
    retriever = AGRAGRetriever(pg)
    derived = retriever.index
    assert len(derived.chunks) == len(DOCS) and derived.facts and derived.entities
    assert {c.doc_id for c in derived.chunks.values()} == {i for i, _, _ in DOCS}
    nodes = retriever.retrieve(QUESTION)
    chunks, evidence = split(nodes)
    assert chunks and evidence and chunks[0].node.metadata["doc_id"] in {i for i, _, _ in DOCS}


@pytest.mark.parametrize("variant", sorted(AGRAGConfig.PRESETS))
def test_variants_are_presets_and_equal_their_explicit_settings(index, variant):
    preset = AGRAGConfig(**AGRAGConfig.PRESETS[variant])
    by_variant = AGRAGRetriever(index, variant=variant)
    assert by_variant.config == preset and by_variant.variant == variant
    assert get_retriever(index, f"agrag:{variant}").config == preset
    # the explicit settings retrieve the same chunks and structure; only the reported variant name differs
    by_fields = AGRAGRetriever(index, **AGRAGConfig.PRESETS[variant])
    a, b = by_variant.retrieve(QUESTION), by_fields.retrieve(QUESTION)
    assert [(n.node.node_id, n.score) for n in a[:-1]] == [(n.node.node_id, n.score) for n in b[:-1]]
    ev_a, ev_b = a[-1].node.metadata["evidence"], b[-1].node.metadata["evidence"]
    assert ev_a.pop("variant") == variant and ev_b.pop("variant") == "full" and ev_a == ev_b


def test_config_fields_defaults_and_validation(index):
    config = AGRAGRetriever(index).config
    assert config == AGRAGConfig()
    assert (config.fact_top_k, config.hybrid_top_k, config.damping, config.passage_factor, config.pseudo_cost,
            config.filter_margin, config.mcmi_max_iter) == (5, 5, 0.5, 0.05, 10.0, 0.1, 20)
    assert config.mcmi_ratio == MCMIRatio.SUM == "sum"
    assert config.graph_retrieval and config.mcmi and config.triple_filter
    assert AGRAGRetriever(index, mcmi_ratio="mean").config.mcmi_ratio is MCMIRatio.MEAN
    assert AGRAGRetriever(index, variant="no_mcmi", fact_top_k=3).config == AGRAGConfig(mcmi=False, fact_top_k=3)
    with pytest.raises(ValueError, match="mcmi_ratio"):
        AGRAGRetriever(index, mcmi_ratio="median")
    with pytest.raises(ValueError, match="fact_top_k"):
        AGRAGRetriever(index, fact_top_k=0)
    with pytest.raises(ValueError, match="no_such_setting"):
        AGRAGRetriever(index, no_such_setting=1)


def test_mean_ratio_stops_the_expansion_itself(index):
    ev = AGRAGRetriever(index, mcmi_ratio="mean").retrieve(QUESTION)[-1].node.metadata["evidence"]
    assert ev["mcmi_stopped"] in ("ratio", "frontier", "cap") and ev["mcmi_ratio"] is not None


def test_prompts_are_listed_and_replaceable(index):
    retriever = AGRAGRetriever(index)
    prompts = retriever.get_prompts()
    assert set(prompts) == {"triple_filter", "answer"}
    assert prompts["triple_filter"].get_template() == TRIPLE_FILTER_PROMPT.get_template()
    assert prompts["answer"].get_template() == AGRAG_QA_PROMPT.get_template()

    plain = AGRAGRetriever(index, variant="no_filter").retrieve(QUESTION)[-1].node.metadata["evidence"]
    mapped = [f["id"] for f in plain["mapped_facts"]]
    llm = ScriptedLLM(responses=['{"keep": [1]}'])
    retriever = AGRAGRetriever(index, llm=llm)
    retriever.update_prompts({"triple_filter": PromptTemplate(
        "CUSTOM FILTER. Q: {question}\nCANDIDATES:\n{facts}\nReply {{\"keep\": [...]}}.")})
    ev = retriever.retrieve(QUESTION)[-1].node.metadata["evidence"]
    assert ev["filter"] == "llm" and ev["kept_facts"] == [mapped[0]]
    assert len(llm.prompts) == 1 and llm.prompts[0].startswith("CUSTOM FILTER. Q: " + QUESTION)
    assert "CANDIDATES:\n1. " in llm.prompts[0] and "Candidate facts:" not in llm.prompts[0]
    # the replacement is per retriever: a fresh one asks with the default prompt
    llm = ScriptedLLM(responses=['{"keep": [1]}'])
    AGRAGRetriever(index, llm=llm).retrieve(QUESTION)
    assert "Candidate facts:" in llm.prompts[0]


def test_query_engine_uses_the_updated_answer_prompt(index):
    llm = ScriptedLLM(responder=lambda prompt: "The Sevrin River.")
    retriever = AGRAGRetriever(index)
    retriever.update_prompts({"answer": PromptTemplate("MY ANSWER PROMPT\n{context_str}\nQ: {query_str}\nA: ")})
    engine = retriever.as_query_engine(llm=llm)
    assert str(engine.query(QUESTION)) == "The Sevrin River."
    prompt = llm.prompts[-1]
    assert prompt.startswith("MY ANSWER PROMPT") and prompt.index("Reasoning graph, part 1") < prompt.index("Q: ")
