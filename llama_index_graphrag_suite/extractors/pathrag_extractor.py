"""The indexing graph PathRAG assumes (LightRAG-style): typed entities with descriptions, relations with
a description and keywords, from one LLM prompt per chunk (plus optional gleaning rounds).

Use it in ``PropertyGraphIndex(kg_extractors=[PathRAGExtractor(llm=...)])``. Each chunk gets:

* ``EntityNode(name=<normalised name>, label="entity", properties={"surface", "entity_type", "description"})``;
* ``Relation(label=<keywords>, source, target, properties={"text": description, "description",
  "keywords", "strength", "kind": "llm", "chunk_id"})``, so :class:`GraphRAGIndex` reads each relation
  as a fact whose text is its description;
* ``contains`` relations chunk -> entity (``link_passages``), so the chunk is the entity's source.

Merging descriptions. An entity met in several chunks has several descriptions; LightRAG joins them.
``PropertyGraphIndex`` inserts all kg nodes of one call with ``upsert_nodes`` (the last copy
replaces the others whole) and skips nodes already in the store. So, after a call, every copy of
an entity carries the merged description of every chunk seen so far (the last-written copy is
complete), and relations repeated within a call carry their merged description (the store keeps
the first copy). With ``property_graph_store`` given, entities already stored by an earlier call
are merged with what the store holds and written back directly, because the index would skip them.
LightRAG's LLM re-summarisation of long merged descriptions is not done: at most
``max_descriptions`` distinct descriptions are kept per entity, in the order they were seen.

Robustness, the failure policy of :class:`LLMRelationExtractor`: answers are parsed with the lenient
JSON parser; malformed items are counted and skipped, and only answers that parse are cached. A
failed request leaves the chunk with no LLM entities. An unreachable server (:class:`LLMUnavailableError`,
a missed deadline included) always stops the run. A server that *refuses* requests (401/403, 400/404,
HTML or invalid JSON) stops it after ``max_consecutive_failures`` refusals in a row with
:class:`LLMUnusableError` (``on_llm_error="abort"``, the default), or has its chunks skipped and counted
(``"skip"``). The three settings default to the LLM's (``RobustLLM``: ``on_error``,
``max_consecutive_failures``, ``build_timeout``); ``build_timeout`` bounds the LLM time of one run.
The policy is :class:`~..llm.failure_policy.FailurePolicy`, the one object both extractors use, and
JSON is asked for with ``response_format`` when the LLM was built with ``structured_output``
(:mod:`..llm.structured`).
"""

from __future__ import annotations

import asyncio
import json
import logging
import threading
from collections import Counter
from dataclasses import asdict, dataclass, field
from typing import Any, Literal, Sequence

from llama_index.core.async_utils import run_jobs
from llama_index.core.bridge.pydantic import Field, PrivateAttr
from llama_index.core.graph_stores.types import KG_NODES_KEY, KG_RELATIONS_KEY, EntityNode, PropertyGraphStore, Relation
from llama_index.core.llms.llm import LLM
from llama_index.core.prompts.base import BasePromptTemplate
from llama_index.core.schema import BaseNode, MetadataMode, TransformComponent

from ..llm.failure_policy import FailurePolicy
from ..llm.json_repair import parse_json_lenient
from ..llm.structured import PATHRAG_EXTRACTION_SCHEMA, apredict_json, predict_json
from ..text import normalize_entity
from .prompts import EXTRACTION_PROMPT, GLEANING_PROMPT
from .statistical import CONTAINS, ENTITY_LABEL

__all__ = ["PathRAGExtractor"]

log = logging.getLogger(__name__)
DEFAULT_ENTITY_TYPES = ("organization", "person", "geo", "event", "category")  # LightRAG's defaults
SEPARATOR = " | "


@dataclass
class _Stats:
    llm_calls: int = 0
    entities: int = 0
    relations: int = 0
    dropped_malformed: int = 0
    failed_chunks: int = 0


@dataclass
class _Extraction:
    """One chunk's parsed answer: entities by key, relations by (source, target)."""

    entities: dict[str, dict] = field(default_factory=dict)  # key -> {surface, type, description}
    relations: dict[tuple[str, str], dict] = field(default_factory=dict)  # -> {description, keywords, strength}
    malformed: int = 0

    def as_json(self) -> str:
        return json.dumps({
            "entities": [{"name": e["surface"], "type": e["type"], "description": e["description"]} for e in self.entities.values()],
            "relations": [{"source": self.entities[s]["surface"] if s in self.entities else s,
                           "target": self.entities[t]["surface"] if t in self.entities else t,
                           "description": r["description"], "keywords": r["keywords"]} for (s, t), r in self.relations.items()],
        }, ensure_ascii=False)


def _text(value: Any) -> str:
    if isinstance(value, (list, tuple)):
        return ", ".join(_text(v) for v in value if _text(v))
    return " ".join(str(value).split()) if isinstance(value, (str, int, float)) and not isinstance(value, bool) else ""


def parse_extraction(answer: str, into: _Extraction | None = None) -> _Extraction:
    """Read entities and relations from an LLM answer (lenient JSON); add them to ``into``."""
    out = into if into is not None else _Extraction()
    value = parse_json_lenient(answer).value
    if isinstance(value, list):  # a bare list: entities and relations mixed
        value = {"entities": [v for v in value if isinstance(v, dict) and "name" in v],
                 "relations": [v for v in value if isinstance(v, dict) and "source" in v]}
    if not isinstance(value, dict):
        out.malformed += 1
        return out
    for item in value.get("entities") or []:
        name = _text(item.get("name") or item.get("entity_name")) if isinstance(item, dict) else ""
        key = normalize_entity(name)
        if not key:
            out.malformed += 1
            continue
        seen = out.entities.setdefault(key, {"surface": name, "type": "", "description": ""})
        seen["type"] = seen["type"] or _text(item.get("type") or item.get("entity_type")).lower()
        description = _text(item.get("description"))
        if description and description not in seen["description"]:
            seen["description"] = f"{seen['description']}{SEPARATOR}{description}" if seen["description"] else description
    for item in value.get("relations") or value.get("relationships") or []:
        if not isinstance(item, dict):
            out.malformed += 1
            continue
        source, target = _text(item.get("source") or item.get("src")), _text(item.get("target") or item.get("tgt"))
        s_key, t_key = normalize_entity(source), normalize_entity(target)
        if not s_key or not t_key or s_key == t_key:
            out.malformed += 1
            continue
        for key, surface in ((s_key, source), (t_key, target)):  # LightRAG keeps unlisted ends as entities
            out.entities.setdefault(key, {"surface": surface, "type": "unknown", "description": ""})
        try:
            strength = float(item.get("strength", item.get("weight", 1.0)))
        except (TypeError, ValueError):
            strength = 1.0
        rel = out.relations.setdefault((s_key, t_key), {"description": "", "keywords": "", "strength": 0.0})
        description = _text(item.get("description"))
        if description and description not in rel["description"]:
            rel["description"] = f"{rel['description']}{SEPARATOR}{description}" if rel["description"] else description
        rel["keywords"] = rel["keywords"] or _text(item.get("keywords"))
        rel["strength"] += strength
    return out


def _parses(text: str) -> bool:
    """Whether an answer is worth caching: it reads as a JSON object or list."""
    return isinstance(parse_json_lenient(text).value, (dict, list))


class PathRAGExtractor(TransformComponent):
    """LightRAG/PathRAG-style entity and relation extraction with descriptions (see the module docstring)."""

    llm: LLM = Field(description="Any LlamaIndex LLM.")
    prompt: BasePromptTemplate = Field(default_factory=lambda: EXTRACTION_PROMPT,
                                       description="Template with the variables `text` and `entity_types`.")
    gleaning_prompt: BasePromptTemplate = Field(default_factory=lambda: GLEANING_PROMPT,
                                                description="Template with the variables `text` and `previous`.")
    max_gleaning: int = Field(default=1, ge=0, description="Extra 'what was missed?' rounds per chunk (code: 1).")
    entity_types: list[str] = Field(default_factory=lambda: list(DEFAULT_ENTITY_TYPES))
    max_descriptions: int = Field(default=10, ge=1, description="Distinct descriptions kept per merged entity.")
    link_passages: bool = Field(default=True, description="Add chunk -contains-> entity relations.")
    property_graph_store: PropertyGraphStore | None = Field(
        default=None, description="The index's store: lets later calls merge into entities stored earlier.")
    num_workers: int = Field(default=4, ge=1)
    show_progress: bool = False
    raise_on_error: bool = False
    on_llm_error: Literal["abort", "skip"] | None = Field(
        default=None, description="On auth/protocol refusals: abort after `max_consecutive_failures` in a row, "
        "or skip those chunks. None: the LLM's `on_error` (RobustLLM), else abort.")
    max_consecutive_failures: int | None = Field(
        default=None, ge=1, description="Refusals in a row that abort (None: the LLM's setting, else 3).")
    build_timeout: float | None = Field(
        default=None, gt=0, description="Seconds all LLM calls of one run may take (None: the LLM's `build_timeout`).")

    _stats: _Stats = PrivateAttr(default_factory=_Stats)
    _lock: threading.Lock = PrivateAttr(default_factory=threading.Lock)
    _descriptions: dict[str, list[str]] = PrivateAttr(default_factory=dict)
    _types: dict[str, Counter] = PrivateAttr(default_factory=dict)
    _relation_descriptions: dict[tuple[str, str, str], list[str]] = PrivateAttr(default_factory=dict)
    _failures: FailurePolicy | None = PrivateAttr(default=None)

    @classmethod
    def class_name(cls) -> str:
        return "PathRAGExtractor"

    @property
    def stats(self) -> dict[str, int]:
        with self._lock:
            return asdict(self._stats)

    def _count(self, **deltas: int) -> None:
        with self._lock:
            for name, value in deltas.items():
                setattr(self._stats, name, getattr(self._stats, name) + value)

    # -- entry points -----------------------------------------------------------------------------
    def __call__(self, nodes: Sequence[BaseNode], show_progress: bool = False, **kwargs: Any) -> Sequence[BaseNode]:
        try:
            asyncio.get_running_loop()
        except RuntimeError:
            return asyncio.run(self.acall(nodes, show_progress=show_progress, **kwargs))
        # Inside a running loop asyncio.run cannot nest: extract sequentially with the sync API.
        with self._run_scope():
            extractions = [self._extract(node) for node in nodes]
        return self._apply(nodes, extractions)

    async def acall(self, nodes: Sequence[BaseNode], show_progress: bool = False, **kwargs: Any) -> Sequence[BaseNode]:
        jobs = [self._aextract(node) for node in nodes]
        try:
            with self._run_scope():  # tasks copy the context, so budget and cache check reach them
                extractions = await run_jobs(jobs, workers=self.num_workers, show_progress=self.show_progress
                                             or show_progress, desc="Extracting entities (PathRAG)")
        finally:
            for job in jobs:  # after an abort, the jobs that never started are closed, not leaked
                job.close()
        return self._apply(nodes, extractions)

    # -- failure policy (the one LLMRelationExtractor uses too) ------------------------------------
    @property
    def failure_policy(self) -> FailurePolicy:
        """This extractor's failure state: the abort (``aborted``) and the last refusal, kept across runs."""
        if self._failures is None:
            self._failures = FailurePolicy(self, "PathRAG extraction", log)
        return self._failures

    def _count_failure(self) -> None:
        self._count(failed_chunks=1)

    def _run_scope(self):
        """The budget of this run, and caching of parsable answers only."""
        return self.failure_policy.run_scope(_parses)

    # -- one chunk --------------------------------------------------------------------------------
    def _extract(self, node: BaseNode) -> _Extraction:
        text = node.get_content(metadata_mode=MetadataMode.LLM)
        found = _Extraction()
        answer = self._ask(node, self.prompt, text=text, entity_types=", ".join(self.entity_types))
        if answer is None:
            return self._checked(node, found)
        parse_extraction(answer, found)
        for _ in range(self.max_gleaning):
            before = (len(found.entities), len(found.relations))
            answer = self._ask(node, self.gleaning_prompt, text=text, previous=found.as_json())
            if answer is None:
                break
            parse_extraction(answer, found)
            if (len(found.entities), len(found.relations)) == before:
                break  # nothing new: stop gleaning
        return self._checked(node, found)

    async def _aextract(self, node: BaseNode) -> _Extraction:
        text = node.get_content(metadata_mode=MetadataMode.LLM)
        found = _Extraction()
        answer = await self._aask(node, self.prompt, text=text, entity_types=", ".join(self.entity_types))
        if answer is None:
            return self._checked(node, found)
        parse_extraction(answer, found)
        for _ in range(self.max_gleaning):
            before = (len(found.entities), len(found.relations))
            answer = await self._aask(node, self.gleaning_prompt, text=text, previous=found.as_json())
            if answer is None:
                break
            parse_extraction(answer, found)
            if (len(found.entities), len(found.relations)) == before:
                break
        return self._checked(node, found)

    def _checked(self, node: BaseNode, found: _Extraction) -> _Extraction:
        self._count(dropped_malformed=found.malformed)
        if found.malformed and self.raise_on_error:
            raise ValueError(f"malformed PathRAG extraction for chunk {node.node_id}")
        return found

    def _ask(self, node: BaseNode, prompt: BasePromptTemplate, **args: str) -> str | None:
        answer = None
        with self.failure_policy.guard(node.node_id, self._count_failure):
            self._count(llm_calls=1)
            answer = predict_json(self.llm, prompt, PATHRAG_EXTRACTION_SCHEMA, "extraction", **args)
        return answer

    async def _aask(self, node: BaseNode, prompt: BasePromptTemplate, **args: str) -> str | None:
        answer = None
        with self.failure_policy.guard(node.node_id, self._count_failure):
            self._count(llm_calls=1)
            answer = await apredict_json(self.llm, prompt, PATHRAG_EXTRACTION_SCHEMA, "extraction", **args)
        return answer

    # -- merging and writing back -----------------------------------------------------------------
    def _merge(self, store: dict, key, description: str) -> None:
        kept = store.setdefault(key, [])
        for part in description.split(SEPARATOR):
            if part and part not in kept and len(kept) < self.max_descriptions:
                kept.append(part)

    def _apply(self, nodes: Sequence[BaseNode], extractions: Sequence[_Extraction]) -> Sequence[BaseNode]:
        with self._lock:
            self._merge_stored({k for ex in extractions for k in ex.entities})
            for ex in extractions:
                for key, e in ex.entities.items():
                    self._merge(self._descriptions, key, e["description"])
                    if e["type"]:
                        self._types.setdefault(key, Counter())[e["type"]] += 1
                for (s, t), r in ex.relations.items():
                    self._merge(self._relation_descriptions, (s, self._label(r), t), r["description"])
            descriptions = {k: SEPARATOR.join(v) for k, v in self._descriptions.items()}
            types = {k: c.most_common(1)[0][0] for k, c in self._types.items() if c}
            rel_descriptions = {k: SEPARATOR.join(v) for k, v in self._relation_descriptions.items()}
        for node, ex in zip(nodes, extractions):
            kg_nodes = node.metadata.pop(KG_NODES_KEY, [])
            kg_relations = node.metadata.pop(KG_RELATIONS_KEY, [])
            known = {n.id: n for n in kg_nodes if isinstance(n, EntityNode)}
            for key, e in ex.entities.items():
                props = {"surface": e["surface"], "entity_type": types.get(key, ""), "description": descriptions.get(key, "")}
                if key in known:  # another extractor's node for the same entity: add our properties
                    known[key].properties.update(props)
                else:
                    kg_nodes.append(EntityNode(name=key, label=ENTITY_LABEL, properties=props))
                if self.link_passages:
                    kg_relations.append(Relation(label=CONTAINS, source_id=node.node_id, target_id=key, properties={"kind": CONTAINS}))
            for (s, t), r in ex.relations.items():
                label = self._label(r)
                description = rel_descriptions.get((s, label, t)) or f"{ex.entities[s]['surface']} {label} {ex.entities[t]['surface']}"
                kg_relations.append(Relation(label=label, source_id=s, target_id=t, properties={
                    "text": description, "description": description, "keywords": r["keywords"],
                    "strength": float(r["strength"]), "kind": "llm", "chunk_id": node.node_id}))
            node.metadata[KG_NODES_KEY] = kg_nodes
            node.metadata[KG_RELATIONS_KEY] = kg_relations
            self._count(entities=len(ex.entities), relations=len(ex.relations))
        self._write_back_stored({k for ex in extractions for k in ex.entities}, descriptions, types)
        return nodes

    @staticmethod
    def _label(relation: dict) -> str:
        label = " ".join(relation["keywords"].split()).lower()[:80]
        return label or "related to"

    def _merge_stored(self, keys: set[str]) -> None:
        """Start from the descriptions the store already holds (an earlier call, or a reloaded index)."""
        if self.property_graph_store is None:
            return
        new = [k for k in keys if k not in self._descriptions]
        for stored in self.property_graph_store.get(ids=new) if new else []:
            description = str(stored.properties.get("description") or "")
            if description:
                self._merge(self._descriptions, stored.id, description)
            if stored.properties.get("entity_type"):
                self._types.setdefault(stored.id, Counter())[stored.properties["entity_type"]] += 1

    def _write_back_stored(self, keys: set[str], descriptions: dict[str, str], types: dict[str, str]) -> None:
        """PropertyGraphIndex skips entities already stored: update their descriptions directly."""
        if self.property_graph_store is None or not keys:
            return
        updated = []
        for stored in self.property_graph_store.get(ids=sorted(keys)):
            if isinstance(stored, EntityNode) and stored.properties.get("description") != descriptions.get(stored.id):
                props = {**stored.properties, "description": descriptions.get(stored.id, ""),
                         "entity_type": types.get(stored.id, stored.properties.get("entity_type", ""))}
                updated.append(EntityNode(name=stored.name, label=stored.label, properties=props))
        if updated:
            self.property_graph_store.upsert_nodes(updated)
