"""LLM relation extraction between the entities of a chunk (AGRAG Eq. 4).

AGRAG finds entities statistically and asks the LLM only for the relations among them. LLMs still
hallucinate ends that are not in the passage, and a hallucinated entity becomes a wrong bridge in
every multi-hop path through it. So each triple is *grounded*: both its subject and its object must
occur in the chunk as whole words (compared after :func:`normalize_entity`), otherwise it is dropped
and counted. Malformed answers are counted too, never fatal, unless ``raise_on_error`` is set, and
never cached. An unreachable server (:class:`LLMUnavailableError`, a missed deadline included) always
stops the run, because every further chunk would fail the same way. A server that *refuses* requests
(401/403, 400/404, HTML or invalid JSON) stops it after ``max_consecutive_failures`` refusals in a row
with :class:`LLMUnusableError` (``on_llm_error="abort"``, the default), or has its chunks skipped and
counted (``"skip"``). ``build_timeout`` bounds the LLM time of one run. That policy is
:class:`~..llm.failure_policy.FailurePolicy`, shared with ``PathRAGExtractor``. Built with
``build_llm(..., structured_output=...)``, the LLM is asked for JSON by ``response_format``
(:mod:`..llm.structured`), the lenient parser still reading what comes back.
"""

from __future__ import annotations

import asyncio
import json
import logging
import threading
from dataclasses import asdict, dataclass
from typing import Any, Literal, Sequence

from llama_index.core.async_utils import run_jobs
from llama_index.core.bridge.pydantic import Field, PrivateAttr
from llama_index.core.graph_stores.types import KG_NODES_KEY, KG_RELATIONS_KEY, EntityNode, Relation
from llama_index.core.llms.llm import LLM
from llama_index.core.prompts.base import BasePromptTemplate
from llama_index.core.schema import BaseNode, TransformComponent
from llama_index.core.utils import get_tqdm_iterable

from ..llm.failure_policy import FailurePolicy
from ..llm.structured import TRIPLES_SCHEMA, apredict_json, predict_json
from ..llm.triples import parse_triples
from ..text import normalize_entity
from .prompts import RELATION_EXTRACTION_PROMPT

__all__ = ["LLMRelationExtractor"]

logger = logging.getLogger(__name__)


@dataclass
class _Stats:
    kept: int = 0
    dropped_ungrounded: int = 0
    dropped_malformed: int = 0
    dropped_over_limit: int = 0
    llm_calls: int = 0
    failed_chunks: int = 0


def _usable_answer(text: str) -> bool:
    """Whether an answer is worth caching: some triple, or a clean empty list."""
    parsed = parse_triples(text)
    return bool(parsed.triples) or not parsed.dropped


class LLMRelationExtractor(TransformComponent):
    """Add LLM-extracted, grounded relations to chunks that already carry entity nodes.

    Reads the ``EntityNode``\\ s (label ``"entity"``, display name in ``properties["surface"]``) that
    an earlier extractor put in ``node.metadata["nodes"]``, asks ``llm`` for triples among them, and
    appends new entity nodes and ``Relation``\\ s (``properties["kind"] == "llm"``) following the
    ``kg_extractors`` contract of ``PropertyGraphIndex``.
    """

    llm: LLM = Field(description="Any LlamaIndex LLM (use build_llm() for a self-hosted server).")
    prompt: BasePromptTemplate = Field(
        default_factory=lambda: RELATION_EXTRACTION_PROMPT,
        description="Template with the variables `text` and `entities`.",
    )
    max_triples_per_chunk: int = Field(default=20, ge=0)
    num_workers: int = Field(default=4, ge=1, description="Concurrent LLM requests in acall().")
    show_progress: bool = False
    raise_on_error: bool = Field(
        default=False, description="Raise on malformed output or a rejected request instead of counting it."
    )
    on_llm_error: Literal["abort", "skip"] | None = Field(
        default=None, description="On auth/protocol refusals: abort after `max_consecutive_failures` in a row, "
        "or skip those chunks. None: the LLM's `on_error` (RobustLLM), else abort."
    )
    max_consecutive_failures: int | None = Field(
        default=None, ge=1, description="Refusals in a row that abort (None: the LLM's setting, else 3)."
    )
    build_timeout: float | None = Field(
        default=None, gt=0, description="Seconds all LLM calls of one run may take (None: the LLM's `build_timeout`)."
    )

    _stats: _Stats = PrivateAttr(default_factory=_Stats)
    _stats_lock: threading.Lock = PrivateAttr(default_factory=threading.Lock)
    _failures: FailurePolicy | None = PrivateAttr(default=None)

    @classmethod
    def class_name(cls) -> str:
        return "LLMRelationExtractor"

    @property
    def stats(self) -> dict[str, int]:
        """Running totals over all calls: triples kept and dropped (by reason), LLM calls, failed chunks."""
        with self._stats_lock:
            return asdict(self._stats)

    def reset_stats(self) -> None:
        with self._stats_lock:
            self._stats = _Stats()

    def _count(self, **deltas: int) -> None:
        with self._stats_lock:
            for name, value in deltas.items():
                setattr(self._stats, name, getattr(self._stats, name) + value)

    # -- policy -----------------------------------------------------------------------------------
    @property
    def failure_policy(self) -> FailurePolicy:
        """This extractor's failure state: the abort (``aborted``) and the last refusal, kept across runs."""
        if self._failures is None:
            self._failures = FailurePolicy(self, "relation extraction", logger)
        return self._failures

    def _run_scope(self):
        """The budget of this run, and caching of parsable answers only."""
        return self.failure_policy.run_scope(_usable_answer)

    def _count_failure(self) -> None:
        self._count(failed_chunks=1)

    def _report(self, before: int, total: int) -> None:
        failed = self.stats["failed_chunks"] - before
        if failed:
            logger.warning("relation extraction: %d of %d chunks got no LLM relations (last error: %s)",
                           failed, total, self.failure_policy.last_refusal or "see above")

    # -- entry points -----------------------------------------------------------------------------
    def __call__(self, nodes: Sequence[BaseNode], show_progress: bool = False, **kwargs: Any) -> Sequence[BaseNode]:
        """Extract for all nodes; concurrently when no event loop is running, sequentially inside one
        (``asyncio.run`` cannot be nested, and blocking a caller's loop briefly beats failing)."""
        try:
            asyncio.get_running_loop()
        except RuntimeError:
            if self.num_workers > 1 and len(nodes) > 1:
                return asyncio.run(self.acall(nodes, show_progress=show_progress, **kwargs))
        before = self.stats["failed_chunks"]
        with self._run_scope():
            progress = get_tqdm_iterable(nodes, self.show_progress or show_progress, "Extracting relations")
            for node in progress:
                self._apply(node, self._ask(node))
        self._report(before, len(nodes))
        return nodes

    async def acall(self, nodes: Sequence[BaseNode], show_progress: bool = False, **kwargs: Any) -> Sequence[BaseNode]:
        """Extract for all nodes with at most ``num_workers`` LLM requests in flight."""

        async def one(node: BaseNode) -> None:
            self._apply(node, await self._aask(node))

        before = self.stats["failed_chunks"]
        jobs = [one(node) for node in nodes]
        try:
            with self._run_scope():  # tasks copy the context, so budget and cache check reach them
                await run_jobs(jobs, show_progress=self.show_progress or show_progress, workers=self.num_workers,
                               desc="Extracting relations")
        finally:
            for job in jobs:  # after an abort, the jobs that never started are closed, not leaked
                job.close()
        self._report(before, len(nodes))
        return nodes

    # -- one chunk --------------------------------------------------------------------------------
    def _prompt_args(self, node: BaseNode) -> dict[str, str]:
        names = [
            n.properties.get("surface", n.name)
            for n in node.metadata.get(KG_NODES_KEY, [])
            if isinstance(n, EntityNode) and n.label == "entity"
        ]
        return {"text": node.get_content(), "entities": json.dumps(names, ensure_ascii=False)}

    def _ask(self, node: BaseNode) -> str | None:
        answer = None
        with self.failure_policy.guard(node.node_id, self._count_failure):
            self._count(llm_calls=1)
            answer = predict_json(self.llm, self.prompt, TRIPLES_SCHEMA, "triples", **self._prompt_args(node))
        return answer

    async def _aask(self, node: BaseNode) -> str | None:
        answer = None
        with self.failure_policy.guard(node.node_id, self._count_failure):
            self._count(llm_calls=1)
            answer = await apredict_json(self.llm, self.prompt, TRIPLES_SCHEMA, "triples", **self._prompt_args(node))
        return answer

    def _apply(self, node: BaseNode, answer: str | None) -> None:
        """Parse and ground ``answer``, then write the chunk's kg nodes and relations back."""
        kg_nodes = node.metadata.pop(KG_NODES_KEY, [])
        kg_relations = node.metadata.pop(KG_RELATIONS_KEY, [])
        try:
            if answer is not None:
                self._add_triples(node, answer, kg_nodes, kg_relations)
        finally:
            node.metadata[KG_NODES_KEY] = kg_nodes
            node.metadata[KG_RELATIONS_KEY] = kg_relations

    def _add_triples(self, node: BaseNode, answer: str, kg_nodes: list, kg_relations: list) -> None:
        parsed = parse_triples(answer)
        self._count(dropped_malformed=len(parsed.dropped))
        if parsed.dropped and self.raise_on_error:
            raise ValueError(f"malformed LLM output for chunk {node.node_id}: {parsed.dropped}")

        chunk = f" {normalize_entity(node.get_content())} "
        node_ids = {n.id for n in kg_nodes}
        seen = {(r.source_id, r.label, r.target_id) for r in kg_relations}
        kept = ungrounded = over_limit = 0
        for subject, predicate, obj in parsed.triples:
            s_key, o_key = normalize_entity(subject), normalize_entity(obj)
            if not (s_key and o_key and f" {s_key} " in chunk and f" {o_key} " in chunk):
                ungrounded += 1
                continue
            label = " ".join(predicate.split()).lower()
            if (s_key, label, o_key) in seen:
                continue  # the same fact twice in one answer is not a second fact
            if kept >= self.max_triples_per_chunk:
                over_limit += 1
                continue
            seen.add((s_key, label, o_key))
            for key, surface in ((s_key, subject), (o_key, obj)):
                if key not in node_ids:
                    node_ids.add(key)
                    kg_nodes.append(EntityNode(name=key, label="entity", properties={"surface": surface}))
            kg_relations.append(
                Relation(
                    label=label,
                    source_id=s_key,
                    target_id=o_key,
                    properties={"text": f"{subject} {predicate} {obj}", "kind": "llm", "chunk_id": node.node_id},
                )
            )
            kept += 1
        self._count(kept=kept, dropped_ungrounded=ungrounded, dropped_over_limit=over_limit)
