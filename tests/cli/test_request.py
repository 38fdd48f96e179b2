"""The method spec and the request: resolved and checked once, then passed down unchanged."""

from __future__ import annotations

import pytest

from llama_index_graphrag_suite.registry import MethodSpec, RequestError, UnknownMethodError, get_retriever, resolve_method
from llama_index_graphrag_suite.request import Request


def test_resolve_checks_name_variant_and_settings_once():
    spec = resolve_method(" agrag:no_mcmi ", {"fact_top_k": 3})
    assert (spec.name, spec.variant, spec.label, dict(spec.settings)) == ("agrag", "no_mcmi", "agrag:no_mcmi", {"fact_top_k": 3})
    assert spec.config.fact_top_k == 3 and spec.config.mcmi is False  # preset, then the setting
    with pytest.raises(TypeError):
        spec.settings["fact_top_k"] = 4  # the resolved settings cannot change on the way down
    assert resolve_method(spec) is spec  # a spec passes through untouched
    with pytest.raises(RequestError, match="settings given twice"):
        resolve_method(spec, {"fact_top_k": 4})
    with pytest.raises(UnknownMethodError, match="available: .*hybrid"):
        resolve_method("nope")
    assert issubclass(UnknownMethodError, RequestError)
    with pytest.raises(RequestError, match="no setting 'alpha'.*settings:"):
        resolve_method("agrag", {"alpha": 1})
    with pytest.raises(RequestError, match="bad setting for pathrag: alpha"):
        resolve_method("pathrag", {"alpha": 5})
    with pytest.raises(RequestError, match="method is empty"):
        resolve_method("  ")


def test_request_make_checks_question_and_top_k():
    request = Request.make("Who?", "hybrid", 3)
    assert request.spec == MethodSpec("hybrid", None, {}) and request.top_k == 3
    for question, top_k, match in (("  ", 3, "question is empty"), ("Who?", 0, "at least 1"),
                                   ("Who?", True, "a whole number"), ("Who?", 5.5, "a whole number, got 5.5")):
        with pytest.raises(RequestError, match=match):
            Request.make(question, "hybrid", top_k)
    with pytest.raises(RequestError, match="between 1 and 100"):
        Request.make("Who?", "hybrid", 101, max_top_k=100)


def test_a_spec_builds_the_same_retriever_as_the_string(documents, embed):
    from llama_index_graphrag_suite import GraphRAGIndex, IndexConfig

    index = GraphRAGIndex.from_documents(documents, embed_model=embed, config=IndexConfig(entities="statistical"))
    by_spec = get_retriever(index, resolve_method("agrag:no_mcmi", {"fact_top_k": 2}), top_k=3)
    by_name = get_retriever(index, "agrag:no_mcmi", top_k=3, fact_top_k=2)
    assert by_spec.config == by_name.config and by_spec.variant == by_name.variant == "no_mcmi"
    question = "Where was the painter of The Grey Harbour born?"
    assert [n.node.node_id for n in by_spec.retrieve(question)] == [n.node.node_id for n in by_name.retrieve(question)]
