"""The query engine over a method's retriever: the evidence node placed, numbered passages, cited answers.

Split from :mod:`.base` (which re-exports every name here); nothing here imports it.
"""

from __future__ import annotations

from typing import Any

from llama_index.core.postprocessor.types import BaseNodePostprocessor
from llama_index.core.query_engine import RetrieverQueryEngine
from llama_index.core.schema import NodeWithScore, QueryBundle

from ..citations import CitedAnswers


class EvidenceFirst(BaseNodePostprocessor):
    """Moves the evidence node in front of the chunks, so a prompt sees the reasoning before the passages."""

    @classmethod
    def class_name(cls) -> str:
        return "EvidenceFirst"

    def _postprocess_nodes(self, nodes: list[NodeWithScore], query_bundle: QueryBundle | None = None) -> list[NodeWithScore]:
        return sorted(nodes, key=lambda n: n.node.metadata.get("kind") != "evidence")  # stable: chunk order kept


class EvidenceLast(BaseNodePostprocessor):
    """Moves the evidence node after the chunks (PathRAG Eq. 6 puts the most reliable path at the very end)."""

    @classmethod
    def class_name(cls) -> str:
        return "EvidenceLast"

    def _postprocess_nodes(self, nodes: list[NodeWithScore], query_bundle: QueryBundle | None = None) -> list[NodeWithScore]:
        return sorted(nodes, key=lambda n: n.node.metadata.get("kind") == "evidence")  # stable: chunk order kept


def retrieve_nodes(retriever: Any, query: Any) -> list[NodeWithScore]:
    """The chunks then the evidence node (when the method has one), whatever ``include_evidence`` says:
    for features that show or prompt with the evidence. Any other LlamaIndex retriever: its ``retrieve``."""
    if not hasattr(retriever, "retrieve_with_evidence"):
        return retriever.retrieve(query)
    chunks, evidence = retriever.retrieve_with_evidence(query)
    return chunks + ([evidence] if evidence is not None else [])


async def aretrieve_nodes(retriever: Any, query: Any) -> list[NodeWithScore]:
    """:func:`retrieve_nodes` off the event loop."""
    if not hasattr(retriever, "aretrieve_with_evidence"):
        return await retriever.aretrieve(query)
    chunks, evidence = await retriever.aretrieve_with_evidence(query)
    return chunks + ([evidence] if evidence is not None else [])


class GraphRAGQueryEngine(CitedAnswers, RetrieverQueryEngine):
    """A ``RetrieverQueryEngine`` whose ``get_prompts()`` also lists the retriever's prompts (``retriever:<name>``).

    It retrieves the chunks *and* the evidence node (``retrieve_with_evidence``), so the prompt has the
    method's structure even though the retriever's ``retrieve`` returns only the top_k chunks.

    ``synthesize`` numbers the passages ``[1]``, ``[2]``, ... (the evidence node stays unnumbered) and
    records the answer's citations: ``response.source_nodes`` are the numbered nodes in prompt order and
    ``response.metadata["citations"]`` lists the cited chunk ids and any number that was never given
    (see :class:`llama_index_graphrag_suite.citations.CitedAnswers`). ``query`` goes through ``synthesize``.
    """

    def retrieve(self, query_bundle: QueryBundle) -> list[NodeWithScore]:
        return self._apply_node_postprocessors(retrieve_nodes(self._retriever, query_bundle), query_bundle=query_bundle)

    async def aretrieve(self, query_bundle: QueryBundle) -> list[NodeWithScore]:
        nodes = await aretrieve_nodes(self._retriever, query_bundle)
        return await self._async_apply_node_postprocessors(nodes, query_bundle=query_bundle)

    def _get_prompt_modules(self) -> dict[str, Any]:
        return {"response_synthesizer": self._response_synthesizer, "retriever": self._retriever}


def resolve_llm(llm: Any = None):
    """``llm``, else the ``Settings.llm`` the user set, with one clear error when there is neither.

    Only an explicitly set ``Settings.llm`` counts: reading the public property would create
    LlamaIndex's OpenAI default (see :mod:`..llm.settings`).
    """
    if llm is not None:
        return llm
    from ..llm.settings import settings_llm

    chosen = settings_llm()
    if chosen is None:
        raise ValueError(
            "a query engine needs an LLM: pass llm=... (e.g. llama_index_graphrag_suite.llm.build_llm("
            "'http://localhost:8000/v1') for a vLLM or OpenAI-compatible server) or set Settings.llm"
        )
    return chosen


def build_query_engine(retriever, llm: Any, streaming: bool = False, text_qa_template: Any = None,
                       evidence: str = "first", **engine_kwargs: Any) -> GraphRAGQueryEngine:
    """``RetrieverQueryEngine.from_args`` with the evidence node placed and callbacks that really count.

    ``evidence="first"`` puts the method's evidence node before the passages (the reasoning before the
    text), ``"last"`` after them (PathRAG's prompt ends with its most reliable path).

    ``from_args`` builds its response synthesizer with ``Settings.callback_manager`` and then overwrites
    the LLM's callback manager, so a ``callback_manager=`` passed here would never see the LLM's tokens.
    When one is given, the synthesizer is built here with it (a ``TokenCountingHandler`` then counts).
    """
    from llama_index.core import get_response_synthesizer

    if evidence not in ("first", "last"):
        raise ValueError("evidence must be 'first' or 'last'")
    placement = EvidenceFirst() if evidence == "first" else EvidenceLast()
    engine_kwargs["node_postprocessors"] = [*engine_kwargs.get("node_postprocessors", []), placement]
    callback_manager = engine_kwargs.get("callback_manager")
    if callback_manager is not None and "response_synthesizer" not in engine_kwargs:
        synth_kwargs = {k: engine_kwargs.pop(k) for k in ("response_mode", "refine_template", "use_async", "verbose")
                        if k in engine_kwargs}
        engine_kwargs["response_synthesizer"] = get_response_synthesizer(
            llm=llm, callback_manager=callback_manager, streaming=streaming, text_qa_template=text_qa_template,
            **synth_kwargs)
        retriever.callback_manager = callback_manager  # retrieval events reach the same handlers
    elif text_qa_template is not None:
        engine_kwargs["text_qa_template"] = text_qa_template
    return GraphRAGQueryEngine.from_args(retriever, llm=llm, streaming=streaming, **engine_kwargs)
