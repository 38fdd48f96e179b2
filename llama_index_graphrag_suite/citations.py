"""Cited answers: the passages an answer prompt shows are numbered [1], [2], ...; the answer cites them.

Every method's answer prompt asks the model to cite the passages it used by number. The query engine
(:class:`~llama_index_graphrag_suite.methods.base.GraphRAGQueryEngine`) numbers the passages before
the prompt is filled (:func:`number_passages`), and reads the citations back from the answer
(:func:`resolve_citations`), as LlamaIndex's ``CitationQueryEngine`` does with its ``Source N:`` nodes:

* ``response.source_nodes`` are the nodes the prompt showed, in prompt order; a passage node keeps its
  chunk id and has ``metadata["citation"] = n`` (its number) and ``metadata["cited"]`` (whether the
  answer cites it). The method's evidence node (the reasoning graph, the paths) is shown without a number.
* ``response.metadata["citations"]`` is :meth:`Citations.to_json`: the numbered passages, the numbers
  cited, their chunk ids, and ``invalid``: numbers the answer cites that no passage has (``[9]`` when 5
  were given) - a sign the model made a source up.

Unlike ``CitationQueryEngine`` we do not split chunks into smaller sources: a citation names a chunk of
the index, so the page (and a reader) can open exactly what was cited.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

from llama_index.core import PromptTemplate
from llama_index.core.schema import NodeWithScore

__all__ = [
    "CITATION_RULES",
    "CITED_QA_PROMPT",
    "CITED_REFINE_PROMPT",
    "CitedAnswers",
    "Citations",
    "attach_citations",
    "cite_passages",
    "citation_markers",
    "number_passages",
    "resolve_citations",
]

# One wording of the rule for every answer prompt, so all methods ask for the same thing.
CITATION_RULES = (
    "The passages are numbered [1], [2], .... After each statement in your answer, cite the passages it "
    "rests on by their numbers in square brackets, for example [2] or [1][3]. Cite only numbers that "
    "appear in front of a passage; do not cite anything else."
)

CITED_QA_TEMPLATE = f"""\
Answer the question from the numbered passages below. Use only these passages; if they do not \
contain the answer, say so. {CITATION_RULES}

Passages:
{{context_str}}

Question: {{query_str}}
Answer: """

CITED_QA_PROMPT = PromptTemplate(CITED_QA_TEMPLATE)

CITED_REFINE_TEMPLATE = f"""\
You wrote an answer to a question from numbered passages; more passages follow. Improve the answer \
with them if they help, and keep it unchanged if they do not. {CITATION_RULES}

Question: {{query_str}}
Answer so far: {{existing_answer}}

More passages:
{{context_msg}}

Improved answer: """

CITED_REFINE_PROMPT = PromptTemplate(CITED_REFINE_TEMPLATE)

# [3], [1, 2], [1][3] (two markers), [ 4 ]: the forms models write. "[entity 12]" or "[2a]" are not citations.
_MARKER = re.compile(r"\[\s*(\d{1,4}(?:\s*[,;]\s*\d{1,4})*)\s*\]")


def _is_passage(nws: NodeWithScore) -> bool:
    return nws.node.metadata.get("kind") != "evidence"


def number_passages(nodes: Sequence[NodeWithScore]) -> list[NodeWithScore]:
    """The nodes in the same order, each passage a copy whose text starts with its number ``[n]``.

    The copy keeps the chunk's id, score and metadata (plus ``citation = n``); its title, if any, is
    written after the number and all metadata is kept out of the prompt, so the model sees
    ``[n] Title`` then the passage. The evidence node (``kind="evidence"``) is passed through unnumbered.
    """
    out: list[NodeWithScore] = []
    number = 0
    for nws in nodes:
        if not _is_passage(nws):
            out.append(nws)
            continue
        number += 1
        node = nws.node.model_copy(deep=True)
        title = str(node.metadata.get("title") or "").strip()
        body = nws.node.get_content()  # the text alone (no metadata)
        node.set_content(f"[{number}] {title}\n{body}" if title else f"[{number}] {body}")
        node.metadata["citation"] = number
        node.excluded_llm_metadata_keys = list(node.metadata)
        node.excluded_embed_metadata_keys = list(node.metadata)
        out.append(NodeWithScore(node=node, score=nws.score))
    return out


def citation_markers(text: str) -> list[dict[str, Any]]:
    """Each citation marker of ``text``: ``{"start", "end", "numbers"}`` (character offsets of ``[..]``)."""
    return [{"start": m.start(), "end": m.end(), "numbers": [int(x) for x in re.split(r"[,;]", m.group(1))]}
            for m in _MARKER.finditer(text or "")]


@dataclass
class Citations:
    """What an answer cites, resolved against the numbered passages its prompt showed."""

    passages: list[dict[str, Any]]  # number, chunk_id, doc_id, title, cited - in number order
    cited: list[int] = field(default_factory=list)  # valid numbers, in order of first citation
    invalid: list[int] = field(default_factory=list)  # numbers cited that no passage has
    markers: list[dict[str, Any]] = field(default_factory=list)

    @property
    def cited_chunk_ids(self) -> list[str]:
        by_number = {p["number"]: p.get("chunk_id") for p in self.passages}
        return [by_number[n] for n in self.cited if by_number[n] is not None]

    def to_json(self) -> dict[str, Any]:
        return {"passages": self.passages, "cited": self.cited, "cited_chunk_ids": self.cited_chunk_ids,
                "invalid": self.invalid, "markers": self.markers}


def resolve_citations(answer: str, source_nodes: Sequence[NodeWithScore]) -> Citations:
    """The citations of ``answer`` against ``source_nodes`` numbered by :func:`number_passages`.

    A number no passage carries (0, or above the count) goes to ``invalid``; nothing is dropped silently.
    """
    passages = []
    for nws in source_nodes:
        number = nws.node.metadata.get("citation")
        if isinstance(number, int):
            meta = nws.node.metadata
            passages.append({"number": number, "chunk_id": nws.node.node_id, "doc_id": meta.get("doc_id"),
                             "title": meta.get("title")})
    return cite_passages(answer, passages)


def cite_passages(answer: str, passages: Sequence[dict[str, Any]]) -> Citations:
    """The citations of ``answer`` against ``passages`` shown as ``[1]``, ``[2]``, ... in that order.

    Each passage is a dict describing it (``chunk_id``, ``doc_id``, ``title`` for a chunk; ArchRAG's reports
    give ``item_id``, ``kind``, ``layer``), copied into ``passages``; ``number`` defaults to its position from 1.
    For prompts that number their sources themselves (the A2RAG control loop, ArchRAG's filtering).
    ``cited_chunk_ids`` lists the ``chunk_id`` of the cited ones that have one.
    """
    rows = [{**p, "number": p.get("number", i), "cited": False} for i, p in enumerate(passages, 1)]
    known = {p["number"]: p for p in rows}
    markers = citation_markers(answer)
    cited: list[int] = []
    invalid: list[int] = []
    for marker in markers:
        for n in marker["numbers"]:
            bucket = cited if n in known else invalid
            if n not in bucket:
                bucket.append(n)
    for n in cited:
        known[n]["cited"] = True
    return Citations(passages=rows, cited=cited, invalid=invalid, markers=markers)


def _record(response: Any, answer: str) -> Citations:
    found = resolve_citations(answer, response.source_nodes)
    cited = set(found.cited)
    for nws in response.source_nodes:
        if isinstance(nws.node.metadata.get("citation"), int):
            nws.node.metadata["cited"] = nws.node.metadata["citation"] in cited
            if "cited" not in nws.node.excluded_llm_metadata_keys:
                nws.node.excluded_llm_metadata_keys.append("cited")
    if response.metadata is None:
        response.metadata = {}
    response.metadata["citations"] = found.to_json()
    return found


def attach_citations(response: Any) -> Any:
    """Record the answer's citations on ``response`` (a LlamaIndex ``Response`` or ``StreamingResponse``).

    A streaming response is recorded when its last piece has been read: its ``response_gen`` is wrapped,
    so ``response.metadata["citations"]`` is there once the stream is consumed.
    """
    gen = getattr(response, "response_gen", None)
    if gen is not None and not isinstance(getattr(response, "response", None), str):
        def pieces() -> Iterator[str]:
            text = []
            for piece in gen:
                text.append(piece)
                yield piece
            _record(response, "".join(text))

        if hasattr(gen, "__next__"):  # a sync generator; an async stream is resolved by the caller
            response.response_gen = pieces()
        return response
    text = getattr(response, "response", None)
    _record(response, text if isinstance(text, str) else str(response))
    return response


class CitedAnswers:
    """Mixin for a LlamaIndex ``RetrieverQueryEngine``: numbered passages in, citations recorded on the response.

    ``synthesize`` / ``asynthesize`` number the passages (:func:`number_passages`) before the synthesizer fills
    the prompt and record what the answer cites (:func:`attach_citations`); ``query`` / ``aquery`` go through
    them (``RetrieverQueryEngine._query`` would call its synthesizer directly and skip the numbering).
    """

    def synthesize(self, query_bundle, nodes, additional_source_nodes=None):
        response = super().synthesize(query_bundle, number_passages(nodes), additional_source_nodes)
        return attach_citations(response)

    async def asynthesize(self, query_bundle, nodes, additional_source_nodes=None):
        response = await super().asynthesize(query_bundle, number_passages(nodes), additional_source_nodes)
        return attach_citations(response)

    def _query(self, query_bundle):
        from llama_index.core.callbacks.schema import CBEventType, EventPayload

        with self.callback_manager.event(CBEventType.QUERY, payload={EventPayload.QUERY_STR: query_bundle.query_str}) as event:
            response = self.synthesize(query_bundle, self.retrieve(query_bundle))
            event.on_end(payload={EventPayload.RESPONSE: response})
        return response

    async def _aquery(self, query_bundle):
        from llama_index.core.callbacks.schema import CBEventType, EventPayload

        with self.callback_manager.event(CBEventType.QUERY, payload={EventPayload.QUERY_STR: query_bundle.query_str}) as event:
            response = await self.asynthesize(query_bundle, await self.aretrieve(query_bundle))
            event.on_end(payload={EventPayload.RESPONSE: response})
        return response
