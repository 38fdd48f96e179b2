"""What every method shares: its typed config, its retriever base class, and the nodes it returns.

A method is a :class:`GraphIndexRetriever` subclass with three class attributes:

* ``method``: its registry name;
* ``config_class``: a :class:`MethodConfig` (pydantic) holding every tunable with its default, a
  description and its paper reference; variants are named presets of that config (``PRESETS``);
* ``default_prompts``: its LlamaIndex ``PromptTemplate`` s by name (``get_prompts()`` /
  ``update_prompts()`` read and replace them; ``"answer"`` is the query engine's QA template, by
  default :data:`~llama_index_graphrag_suite.citations.CITED_QA_PROMPT`).

The query engine numbers the passages ``[1]``, ``[2]``, ... and the answer cites them; the response's
``source_nodes`` carry ``citation`` / ``cited`` and ``response.metadata["citations"]`` what was cited
(see :mod:`llama_index_graphrag_suite.citations`).

``retrieve()`` returns exactly the ``top_k`` chunk nodes in rank order (fewer only when the method
finds fewer); ``include_evidence=True`` appends the method's evidence node, and
``retrieve_with_evidence()`` returns ``(chunks, evidence node or None)``.
Chunk nodes: ``TextNode(id_=chunk id, text=chunk text)`` with metadata ``kind="chunk"``, ``chunk_id``,
``doc_id``, ``title``, ``method``, ``raw_score`` (the method's own score), and a SOURCE relationship
to the document. Their ``score`` is in [0, 1], nonincreasing, with the meaning the class states in
``score_meaning`` (``score_scale``: ``"cosine"`` clips a cosine to [0, 1]; ``"unit"`` keeps a score
already in [0, 1]; ``"relative"`` divides by the top chunk's raw score, so the best chunk is 1.0).
Evidence node: ``kind="evidence"``, a readable text and the method's structure in JSON-serialisable
metadata; its id is a content hash, so it is unique and stable; its score is the top chunk's.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
from contextlib import AbstractContextManager, nullcontext
from typing import Any, ClassVar

from llama_index.core import PropertyGraphIndex
from llama_index.core.prompts import BasePromptTemplate
from llama_index.core.retrievers import BaseRetriever
from llama_index.core.schema import NodeRelationship, NodeWithScore, QueryBundle, RelatedNodeInfo, TextNode
from pydantic import BaseModel, ConfigDict, Field

from ..citations import CITED_QA_PROMPT, CITED_REFINE_PROMPT
from ..index.derive import graph_index_of
from .query_scores import shared_query_scores
from .scoring import check_top_k
from .query_engine import (  # noqa: F401  (re-exported: the query engine lived here)
    EvidenceFirst,
    EvidenceLast,
    GraphRAGQueryEngine,
    aretrieve_nodes,
    build_query_engine,
    resolve_llm,
    retrieve_nodes,
)

__all__ = [
    "EvidenceFirst",
    "EvidenceLast",
    "GraphIndexRetriever",
    "GraphRAGQueryEngine",
    "MethodConfig",
    "build_query_engine",
    "chunk_node",
    "evidence_node",
    "param",
    "resolve_llm",
    "retrieve_nodes",
]


# ---------------------------------------------------------------------------------------- config

def param(default: Any, description: str, paper: str, **constraints: Any) -> Any:
    """A config field: its default, what it does, and where it comes from.

    ``paper`` names the source of the default: an equation or section ("AGRAG Eq. 12"), the
    authors' code ("PathRAG code"), or "ours" with the measurement behind it.
    """
    return Field(default, description=description, json_schema_extra={"paper": paper}, **constraints)


class MethodConfig(BaseModel):
    """Base of every method's typed configuration (immutable; derive with :meth:`resolve`).

    ``PRESETS`` maps a variant name (the paper's ablations, the authors' options) to field values;
    a variant is nothing but those values applied to the config.
    """

    model_config = ConfigDict(extra="forbid", frozen=True, validate_default=True)

    PRESETS: ClassVar[dict[str, dict[str, Any]]] = {}

    @classmethod
    def resolve(cls, config: "MethodConfig | None" = None, variant: str | None = None, **overrides: Any):
        """``config`` (default: the defaults), then the preset ``variant``, then ``overrides``, validated."""
        if config is not None and not isinstance(config, cls):
            raise TypeError(f"expected a {cls.__name__}, got {type(config).__name__}")
        values = (config or cls()).model_dump()
        if variant is not None:
            if variant not in cls.PRESETS:
                raise ValueError(f"unknown {cls.method_label()} variant {variant!r}; "
                                 f"choose from {', '.join(cls.PRESETS) or '(none)'}")
            values.update(cls.PRESETS[variant])
        values.update(overrides)
        return cls.model_validate(values)

    @classmethod
    def method_label(cls) -> str:
        return cls.__name__.removesuffix("Config") or cls.__name__

    @classmethod
    def parse_setting(cls, text: str) -> tuple[str, Any]:
        """``"key=value"`` (the CLI's ``--set``) -> ``(key, value)``, the value read as JSON when it is JSON.

        The value is validated later with the whole config, so ``"5"`` becomes an int for an int
        field and ``"combined"`` an enum member for an enum field.
        """
        key, sep, raw = text.partition("=")
        key = key.strip()
        if not sep or not key:
            raise ValueError(f"expected key=value, got {text!r}")
        if key not in cls.model_fields:
            raise ValueError(f"{cls.method_label()} has no setting {key!r}; settings: {', '.join(sorted(cls.model_fields))}")
        try:
            value = json.loads(raw)
        except ValueError:
            value = raw.strip()
        return key, value

    def digest(self) -> str:
        """A short stable hash of the values (names artefacts built with this config)."""
        return hashlib.sha1(self.model_dump_json().encode()).hexdigest()[:12]


class NoConfig(MethodConfig):
    """For methods with nothing to tune."""


# ---------------------------------------------------------------------------------------- nodes

def chunk_node(index, chunk_id: str, score: float, method: str, **extra: Any) -> NodeWithScore:
    rec = index.chunks[chunk_id]
    node = TextNode(
        id_=chunk_id,
        text=rec.text,
        metadata={"kind": "chunk", "chunk_id": chunk_id, "doc_id": rec.doc_id, "title": rec.title, "method": method, **extra},
        relationships={NodeRelationship.SOURCE: RelatedNodeInfo(node_id=rec.doc_id)},
    )
    # The synthesizer should see the text, not our bookkeeping.
    node.excluded_llm_metadata_keys = [k for k in node.metadata if k != "title"] + ["raw_score"]
    node.excluded_embed_metadata_keys = list(node.metadata) + ["raw_score"]
    return NodeWithScore(node=node, score=float(score))


SCORE_SCALES = ("cosine", "unit", "relative")


def normalise_scores(chunks: list[NodeWithScore], scale: str) -> list[NodeWithScore]:
    """Chunk scores mapped to [0, 1] (rank order kept), the method's own score kept as ``metadata["raw_score"]``.

    ``"cosine"`` and ``"unit"`` clip to [0, 1] (the value keeps its meaning); ``"relative"`` divides by the
    top-ranked chunk's raw score (it is 1.0; all 0.0 when it scores 0 or less). A score is never above
    the one ranked before it: methods that fill a graph ranking with another one (PathRAG
    ``paths_first``, A2RAG ``evidence_first``) mix raw scales, and their rank order is what counts.
    """
    if scale not in SCORE_SCALES:
        raise ValueError(f"score_scale must be one of {SCORE_SCALES}, got {scale!r}")
    for n in chunks:
        if "raw_score" not in n.node.metadata:  # a node returned twice (a cache) is scaled once
            n.node.metadata["raw_score"] = float(n.score) if n.score is not None else 0.0
            for keys in (n.node.excluded_llm_metadata_keys, n.node.excluded_embed_metadata_keys):
                if "raw_score" not in keys:
                    keys.append("raw_score")
    top = float(chunks[0].node.metadata["raw_score"]) if chunks else 0.0
    previous = 1.0
    for n in chunks:
        raw = float(n.node.metadata["raw_score"])
        value = raw / top if scale == "relative" and top > 0 else (0.0 if scale == "relative" else raw)
        n.score = previous = min(previous, 1.0, max(0.0, value))
    return chunks


def evidence_node(method: str, text: str, evidence: dict[str, Any], score: float | None = None) -> NodeWithScore:
    payload = json.dumps(evidence, sort_keys=True, default=str)
    digest = hashlib.sha1(f"{method}\n{text}\n{payload}".encode()).hexdigest()[:16]
    node = TextNode(id_=f"evidence-{method}-{digest}", text=text,
                    metadata={"kind": "evidence", "method": method, "evidence": json.loads(payload)})
    node.excluded_llm_metadata_keys = list(node.metadata)
    node.excluded_embed_metadata_keys = list(node.metadata)
    return NodeWithScore(node=node, score=score)


# ---------------------------------------------------------------------------------------- retriever

def _check_query(query: str | QueryBundle) -> None:
    """An empty question would rank arbitrary chunks: refuse it with a clear error instead."""
    text = query.query_str if isinstance(query, QueryBundle) else query
    if not isinstance(text, str) or not text.strip():
        raise ValueError("the query is empty")


class GraphIndexRetriever(BaseRetriever):
    """Base for retrievers over the shared index: config, prompts, top_k, async off the event loop.

    ``index`` is a :class:`~llama_index_graphrag_suite.index.GraphRAGIndex` or a plain
    ``PropertyGraphIndex`` built with this project's extractors (derived once, see ``index/derive.py``).
    ``config`` / ``variant`` / keyword ``overrides`` build the method's config (:meth:`MethodConfig.resolve`).
    """

    method: ClassVar[str] = "base"
    config_class: ClassVar[type[MethodConfig]] = NoConfig
    default_prompts: ClassVar[dict[str, BasePromptTemplate]] = {}
    evidence_placement: ClassVar[str] = "first"  # where the query engine puts the evidence node
    uses_llm: ClassVar[bool] = False  # whether an ``llm=`` changes what the method does
    score_scale: ClassVar[str] = "relative"  # how the raw chunk score maps to [0, 1] (see normalise_scores)
    score_meaning: ClassVar[str] = "relative to the best chunk for this query (top chunk = 1.0)"

    def __init__(self, index, top_k: int = 5, *, config: MethodConfig | None = None, variant: str | None = None,
                 llm: Any = None, callback_manager=None, verbose: bool = False, include_evidence: bool = False,
                 **overrides: Any):
        check_top_k(top_k)
        self.include_evidence = include_evidence  # append the evidence node to retrieve()'s chunks
        self.config = self.config_class.resolve(config, variant, **overrides)
        self.variant = variant
        self.llm = llm
        # a PropertyGraphIndex built with our extractors: derive the artefacts once; anything else is
        # read through the GraphIndexReader protocol (index/protocol.py)
        self.index = graph_index_of(index) if isinstance(index, PropertyGraphIndex) else index
        self.top_k = top_k
        # every method answers with [n] citations: its own "answer" prompt, or the plain cited one
        self._prompts: dict[str, BasePromptTemplate] = {"answer": CITED_QA_PROMPT, **self.default_prompts}
        super().__init__(callback_manager=callback_manager, verbose=verbose)

    def reading(self) -> AbstractContextManager:
        """The index's read lock (re-entrant): an insert or delete in another thread waits until the block ends,
        so everything read inside it belongs to one state of the index. Every public entry point takes it."""
        reading = getattr(self.index, "reading", None)  # any GraphIndexReader; ours has one
        return reading() if reading is not None else nullcontext()

    def retrieve(self, str_or_query_bundle) -> list[NodeWithScore]:
        """The top_k chunk nodes, scores in [0, 1]; then the evidence node when ``include_evidence``."""
        return self._assemble(*self.retrieve_with_evidence(str_or_query_bundle))

    async def aretrieve(self, str_or_query_bundle) -> list[NodeWithScore]:
        return self._assemble(*await self.aretrieve_with_evidence(str_or_query_bundle))

    def retrieve_with_evidence(self, str_or_query_bundle) -> tuple[list[NodeWithScore], NodeWithScore | None]:
        """``(chunk nodes, evidence node or None)``: the chunks as ``retrieve`` returns them, and the structure."""
        _check_query(str_or_query_bundle)
        if not self.index.chunks:  # an index with no documents yet finds nothing (as LlamaIndex's own retrievers)
            return [], None
        with self.reading(), shared_query_scores():
            return self._split(super().retrieve(str_or_query_bundle))

    async def aretrieve_with_evidence(self, str_or_query_bundle) -> tuple[list[NodeWithScore], NodeWithScore | None]:
        _check_query(str_or_query_bundle)
        if not self.index.chunks:
            return [], None
        return self._split(await super().aretrieve(str_or_query_bundle))

    def _split(self, nodes: list[NodeWithScore]) -> tuple[list[NodeWithScore], NodeWithScore | None]:
        chunks = [n for n in nodes if n.node.metadata.get("kind") != "evidence"]
        evidence = next((n for n in nodes if n.node.metadata.get("kind") == "evidence"), None)
        normalise_scores(chunks, self.score_scale)
        if evidence is not None:  # as relevant as the best chunk: a cutoff that keeps any chunk keeps it
            evidence.score = chunks[0].score if chunks else 1.0
        return chunks, evidence

    def _assemble(self, chunks: list[NodeWithScore], evidence: NodeWithScore | None) -> list[NodeWithScore]:
        return chunks + [evidence] if self.include_evidence and evidence is not None else chunks

    async def _aretrieve(self, query_bundle: QueryBundle) -> list[NodeWithScore]:
        # Retrieval is CPU-bound numpy/faiss work: keep it off the event loop (the lock is taken in the thread).
        return await asyncio.to_thread(self._locked_retrieve, query_bundle)

    def _locked_retrieve(self, query_bundle: QueryBundle) -> list[NodeWithScore]:
        with self.reading(), shared_query_scores():  # a wrapper (the hybrid guard) reuses the method's scores
            return self._retrieve(query_bundle)

    def query_vector(self, query_bundle: QueryBundle):
        """The query embedding with the index's model (a bundle's precomputed embedding may come from another model)."""
        return self.index.embed_query(query_bundle.query_str)

    # -- prompts (LlamaIndex's PromptMixin) -------------------------------------------------------
    def prompt(self, name: str) -> BasePromptTemplate:
        """The current template called ``name`` (the default until ``update_prompts`` replaces it)."""
        return self._prompts[name]

    def _get_prompts(self) -> dict[str, BasePromptTemplate]:
        return dict(self._prompts)

    def _get_prompt_modules(self) -> dict[str, Any]:
        return {}

    def _update_prompts(self, prompts: dict[str, BasePromptTemplate]) -> None:
        unknown = set(prompts) - set(self._prompts)
        if unknown:
            raise KeyError(f"{self.method} has no prompt {sorted(unknown)}; prompts: {sorted(self._prompts) or 'none'}")
        self._prompts.update(prompts)

    # -- query engine -----------------------------------------------------------------------------
    def as_query_engine(self, llm: Any = None, streaming: bool = False, **kwargs: Any) -> "GraphRAGQueryEngine":
        """A query engine over this retriever with the method's answer prompt: numbered passages, [n] citations."""
        if "answer" in self._prompts:
            kwargs.setdefault("text_qa_template", self._prompts["answer"])
        kwargs.setdefault("refine_template", CITED_REFINE_PROMPT)  # when the passages need a second call
        kwargs.setdefault("evidence", self.evidence_placement)
        return build_query_engine(self, resolve_llm(llm if llm is not None else self.llm), streaming=streaming, **kwargs)
