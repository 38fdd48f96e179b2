"""The registry, typed method configs, variants as presets, prompts and --set."""

from __future__ import annotations

import json
import re

import pytest
from llama_index.core.prompts import BasePromptTemplate, PromptTemplate

from llama_index_graphrag_suite import GraphRAGIndex, IndexConfig
from llama_index_graphrag_suite.cli import main
from llama_index_graphrag_suite.documents import make_document
from llama_index_graphrag_suite.llm import ScriptedLLM
from llama_index_graphrag_suite.methods.base import GraphIndexRetriever, MethodConfig, chunk_node, param
from llama_index_graphrag_suite.registry import (
    UnknownMethodError, available_methods, get_retriever, method_info, method_settings, register_method,
    unregister_method,
)

PAPER_METHODS = ("agrag", "pathrag", "archrag", "a2rag")
DOCS = [
    ("Ada Lorne", "Ada Lorne was a painter born in Marlow. Ada Lorne studied at the Kell Academy in Dunmore."),
    ("Marlow", "Marlow is a river town on the Teme. The painter Ada Lorne was born in Marlow."),
    ("Kell Academy", "The Kell Academy is an art school in Dunmore founded by Tomas Brey."),
    ("Tomas Brey", "Tomas Brey was a sculptor from Dunmore who founded the Kell Academy."),
]


@pytest.fixture(scope="module")
def index():
    from llama_index_graphrag_suite.embeddings import HashEmbedding

    docs = [make_document(f"d{i}", text, title) for i, (title, text) in enumerate(DOCS)]
    return GraphRAGIndex.from_documents(docs, embed_model=HashEmbedding(), config=IndexConfig(entities="statistical", entity_threshold=0.1))


@pytest.mark.parametrize("name", sorted(available_methods()))
def test_every_setting_is_documented_with_its_source(name):
    config_class = method_info(name).config_class
    assert issubclass(config_class, MethodConfig)
    for field, spec in config_class.model_fields.items():
        assert spec.description and len(spec.description) > 10, f"{name}.{field} has no description"
        assert (spec.json_schema_extra or {}).get("paper"), f"{name}.{field} names no source for its default"


@pytest.mark.parametrize("name", sorted(available_methods()))
def test_variants_are_presets_of_the_config(index, name):
    info = method_info(name)
    for variant, values in info.config_class.PRESETS.items():
        retriever = get_retriever(index, f"{name}:{variant}", top_k=3)
        assert retriever.variant == variant
        assert retriever.config == info.config_class(**values), f"{name}:{variant} is more than its preset"
        assert [n.node.node_id for n in retriever.retrieve("Where was Ada Lorne born?")]


@pytest.mark.parametrize("name", PAPER_METHODS)
def test_paper_methods_expose_their_prompts(index, name):
    retriever = get_retriever(index, name, top_k=3)
    prompts = retriever.get_prompts()
    assert prompts and all(isinstance(p, BasePromptTemplate) for p in prompts.values())
    key = next(iter(prompts))
    variables = prompts[key].template_vars
    replacement = PromptTemplate("REPLACED " + " ".join("{" + v + "}" for v in variables))
    retriever.update_prompts({key: replacement})
    assert retriever.get_prompts()[key].get_template() == replacement.get_template()
    with pytest.raises(KeyError):
        retriever.update_prompts({"no_such_prompt": replacement})


def test_query_engine_lists_retriever_and_answer_prompts(index):
    engine = get_retriever(index, "agrag", top_k=3).as_query_engine(llm=ScriptedLLM(default="Marlow."))
    prompts = engine.get_prompts()
    assert any(k.startswith("retriever:") for k in prompts)
    assert "response_synthesizer:text_qa_template" in prompts


def test_unknown_method_variant_and_setting_are_clear_errors(index):
    with pytest.raises(UnknownMethodError, match="available: .*agrag"):
        get_retriever(index, "nope")
    with pytest.raises(UnknownMethodError, match="no variants"):
        get_retriever(index, "dense:fast")
    with pytest.raises(UnknownMethodError, match="no variant 'fast'.*no_mcmi"):
        get_retriever(index, "agrag:fast")
    with pytest.raises(ValueError, match="no_such_setting"):
        get_retriever(index, "agrag", no_such_setting=1)


class EchoConfig(MethodConfig):
    first: int = param(1, "How many chunks to return first, best first.", "ours: a test method")
    PRESETS = {"two": {"first": 2}}


class EchoRetriever(GraphIndexRetriever):
    """Chunks in index order (a third-party method for the registry test)."""

    method = "echo"
    config_class = EchoConfig

    def _retrieve(self, query_bundle):
        order = self.index.chunk_order[: min(self.config.first, self.top_k)]
        return [chunk_node(self.index, c, 1.0, self.method) for c in order]


def test_register_method_for_a_third_party(index):
    register_method("echo", EchoRetriever)
    try:
        assert "echo" in available_methods() and available_methods()["echo"].startswith("Chunks in index order")
        assert len(get_retriever(index, "echo:two", top_k=5).retrieve("anything")) == 2
        assert len(index.as_retriever(method="echo", first=3).retrieve("anything")) == 3
        with pytest.raises(ValueError, match="already registered"):
            register_method("echo", EchoRetriever)
        register_method("echo", f"{__name__}:EchoRetriever", "by path", replace=True)
        assert method_info("echo").load() is EchoRetriever
    finally:
        unregister_method("echo")
    assert "echo" not in available_methods()


def test_method_settings_from_set_pairs():
    got = method_settings(["alpha=0.8", "agrag.fact_top_k=3"], ["pathrag", "agrag"])
    assert got == {"pathrag": {"alpha": 0.8}, "agrag": {"fact_top_k": 3}}
    with pytest.raises(ValueError, match="no method .* has a setting 'nope'"):
        method_settings(["nope=1"], ["agrag"])
    with pytest.raises(ValueError):
        method_settings(["agrag.fact_top_k=zero"], ["agrag"])  # validated with the config before any work


def test_cli_query_and_bench_accept_set(tmp_path, capsys):
    from pathlib import Path

    fixture = Path(__file__).parent / "fixtures" / "tiny_bench"
    idx = tmp_path / "idx"
    assert main(["index", str(fixture / "corpus.jsonl"), "--out", str(idx), "--embed", "hash", "--quiet"]) == 0
    capsys.readouterr()
    assert main(["query", str(idx), "Who founded it?", "--method", "agrag:no_mcmi", "--set", "fact_top_k=2",
                 "--json", "--embed", "hash", "--quiet"]) == 0
    result = json.loads(capsys.readouterr().out)
    assert result["method"] == "agrag:no_mcmi" and result["nodes"]
    assert main(["query", str(idx), "Who?", "--method", "agrag", "--set", "fact_top_k=-1", "--embed", "hash", "--quiet"]) == 2
    assert "fact_top_k" in capsys.readouterr().err
    out = tmp_path / "report.json"
    assert main(["bench", "--dataset", str(fixture), "--methods", "hybrid,hipporag", "--set", "hipporag.damping=0.6",
                 "--out", str(out), "--embed", "hash", "--quiet", "--limit", "2", "--index-dir", str(idx)]) == 0
    assert json.loads(out.read_text())["settings"] == {"hipporag": {"damping": 0.6}}
    assert main(["methods", str(idx), "--settings", "--quiet"]) == 0
    listing = capsys.readouterr().out
    assert "fact_top_k" in listing
    # the guard's settings are listed with each guarded method, at that method's preset (A2RAG's link gain is 4)
    blocks: dict[str, list[str]] = {}
    current = None
    for line in listing.splitlines():  # a method's line starts two spaces in, its settings' lines further
        if line.startswith("   ") and current:
            blocks[current].append(line.strip())
        elif line.startswith("  ") and line[2:3].isalpha():
            current = line.split()[0]
            blocks[current] = []
    assert "guard_link_gain = 3.0" in "\n".join(blocks["agrag"])
    assert "guard_link_gain = 4.0" in "\n".join(blocks["a2rag"])
    assert "hybrid" in blocks and "guard_" not in "\n".join(blocks["hybrid"])


def test_settings_listing_is_what_set_may_change_with_the_defaults_that_run():
    """A guarded method lists its own settings, then the guard's at its preset; its plain variant only its own."""
    agrag = dict((f, d) for f, d, _ in method_info("agrag").settings_listing())
    assert agrag["fact_top_k"] == 5 and agrag["guard_link_gain"] == 3.0 and agrag["guard_rank_to_top_k"] is False
    a2rag = dict((f, d) for f, d, _ in method_info("a2rag").settings_listing())
    assert a2rag["guard_link_gain"] == 4.0 and a2rag["guard_rank_to_top_k"] is True
    plain = [f for f, _, _ in method_info("agrag").settings_listing("paper")]
    assert plain and not any(f.startswith("guard_") for f in plain)
    assert agrag.keys() == {f for c in method_info("agrag").settings_classes() for f in c.model_fields}


# a figure of a benchmark in a setting's description: "recall@5", "59/60", "95.0 / 95.5"
TUNING_FIGURE = re.compile(r"recall|\d+/\d+|\d+\.\d+ / \d+\.\d+", re.IGNORECASE)


@pytest.mark.parametrize("name", sorted(available_methods()))
def test_setting_descriptions_say_what_a_setting_does_not_how_it_scored(name):
    """How a default was chosen belongs with its source (``paper=``) and in docs/, not in what ``--settings`` prints."""
    for cls in method_info(name).settings_classes():
        for field, spec in cls.model_fields.items():
            assert not TUNING_FIGURE.search(spec.description or ""), f"{name}.{field}: {spec.description}"


def test_register_by_path_without_description_is_not_described_by_str():
    register_method("echo_path", f"{__name__}:EchoRetriever")
    try:
        assert available_methods()["echo_path"] == ""  # not str's docstring; the class is not imported yet
    finally:
        unregister_method("echo_path")
