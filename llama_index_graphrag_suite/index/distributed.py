"""Indexing on a Ray cluster: the per-chunk work of a build is sharded, the index is the one a local build makes.

``GraphRAGIndex.from_documents(docs, ray_address="local" | "auto" | "ray://head:10001")`` and
``graphrag-suite index SRC --out DIR --ray ADDRESS`` build inside :func:`ray_build`, which makes a
:class:`RayRunner` the index's executor: the build's named steps (``build.py``) are the same, and ask the
executor for four operations (chunk, fit statistics, run the extractors, embed), which run here as follows:

=====================================================  ==============================================
step                                                    where it runs
=====================================================  ==============================================
chunking (the index's own splitter)                     Ray tasks, documents in contiguous shards
n-gram document frequencies (AGRAG Eq. 2's df and N)    map on Ray (counts per shard), sum on the driver
statistical entities (Eq. 2-3): score each chunk        Ray tasks, against the summed statistics
which n-grams are entities anywhere (the vocabulary)    driver, in chunk order (first surface form wins)
linking chunks to vocabulary names, co-occurrences      Ray tasks, with the whole vocabulary
spaCy parse of the NER extractor                        Ray tasks; parsed docs return as ``DocBin`` bytes
NER after the parse (aliases per document, name types   driver: each needs every chunk's names (the parse
by majority over the corpus, gazetteer linking,         is about 80% of the NER extractor's time on
dependency relations)                                   hotpotqa_train100)
LLM relations, user extractors                          driver (bound by the LLM server, not the CPU)
embedding chunks, entity names, fact texts              Ray tasks, by length in contiguous shards
synonym edges (Eq. 5), BM25, graph snapshot, faiss      driver: global over all entities / chunks
=====================================================  ==============================================

Everything crosses the wire as plain data: documents and chunks as LlamaIndex ``to_dict()`` dicts, extractor
output as lists of ``[name, label, properties]``, statistics as dicts, vectors as float32 arrays (or, with a
staging folder, as ``.npy`` files the workers write and the driver memory-maps: ``distributed_embed.py``). Workers
rebuild the same extractors from their settings and the driver merges their output in chunk order, so the
merged tables are those of the single-process build (``tests/test_ray_indexing.py`` checks it).

Workers build the embedder themselves when it has a name they can load (the bundled all-MiniLM-L6-v2, ``hash``);
any other ``embed_model`` is sent as Ray serialises it, and one that cannot be serialised is refused up front.
Workers need this package installed (same version) and, for ``entities="ner"``, the same spaCy model.
"""

from __future__ import annotations

import contextlib
import logging
import os
import tempfile
import time
from pathlib import Path
from typing import Any, Callable, Iterator, Sequence

import numpy as np
from llama_index.core import Document
from llama_index.core.base.embeddings.base import BaseEmbedding
from llama_index.core.graph_stores.types import KG_NODES_KEY, KG_RELATIONS_KEY, EntityNode, Relation
from llama_index.core.ingestion import run_transformations
from llama_index.core.schema import BaseNode, MetadataMode, TextNode, TransformComponent

from ..config import IndexConfig
from ..extractors.entity_stats import EntityStatistics
from ..extractors.statistical import CooccurrenceRelationExtractor, StatisticalEntityExtractor
from .chunking import check_new_documents, chunk_documents
from .distributed_embed import _embed_shard, _embed_shard_to_file, embedder_spec, join_staged

log = logging.getLogger(__name__)

RAY_HINT = "pip install -c constraints.txt -e '.[ray]' (from a clone of the repository)"
# Environment the workers of a cluster need to build the same embedder and pipeline as the driver.
_FORWARDED_ENV = ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE", "GRAPHRAG_SUITE_EMBED_BACKEND", "GRAPHRAG_SUITE_CACHE")
_MIN_TEXTS_PER_SHARD = 32  # below this a task's start-up costs more than it saves


def import_ray():
    """The ``ray`` module, or an ImportError naming the extra that installs it."""
    try:
        import ray
    except ImportError:
        raise ImportError(f"indexing on Ray needs the 'ray' extra: {RAY_HINT}") from None
    return ray


@contextlib.contextmanager
def ray_build(index, address: str = "local", num_cpus: int | None = None,
              staging: str | os.PathLike | bool | None = None) -> Iterator["RayRunner"]:
    """Within the block, ``index.insert(documents)`` shards its per-chunk work over Ray.

    ``address``: ``"local"`` starts a Ray instance on this machine (``num_cpus`` of its cores, default all) and
    stops it afterwards; ``"auto"`` joins the cluster this machine belongs to; ``"ray://host:10001"`` connects
    a Ray client. When Ray is already initialised in this process (``ray.init`` by the caller) it is used as
    it is and left running.

    ``staging``: a folder every node can write and this process can read (shared storage on a cluster), where
    embedding workers write their vector shards instead of returning them (``distributed_embed.py``); a
    temporary folder inside it is removed afterwards. ``None``: a temporary folder on this machine for
    ``"local"``, Ray's object store otherwise; ``False``: the object store.
    """
    ray = import_ray()
    with contextlib.ExitStack() as stack:
        folder = None
        if (staging is None and address == "local") or staging is True:
            folder = stack.enter_context(tempfile.TemporaryDirectory(prefix="graphrag-ray-"))
        elif staging:
            Path(staging).mkdir(parents=True, exist_ok=True)
            folder = stack.enter_context(tempfile.TemporaryDirectory(prefix="graphrag-ray-", dir=staging))
        yield stack.enter_context(_ray_build(ray, index, address, num_cpus, folder))


@contextlib.contextmanager
def ray_session(address: str = "local", num_cpus: int | None = None) -> Iterator[Any]:
    """Ray initialised for the block (``address`` and ``num_cpus`` as for :func:`ray_build`), then shut down; when
    Ray is already initialised in this process it is used as it is and left running. A build in batches holds one
    session around all its batches, so a local instance starts once, not once per batch."""
    ray = import_ray()
    started = False
    if not ray.is_initialized():
        env = {k: os.environ[k] for k in _FORWARDED_ENV if k in os.environ}
        options: dict[str, Any] = {"log_to_driver": False, "runtime_env": {"env_vars": env} if env else None}
        if address == "local":
            ray.init(num_cpus=num_cpus, include_dashboard=False, **options)
        else:
            ray.init(address=address, **options)
        started = True
    try:
        yield ray
    finally:
        if started:
            ray.shutdown()


@contextlib.contextmanager
def _ray_build(ray, index, address: str, num_cpus: int | None, staging: str | None) -> Iterator["RayRunner"]:
    with ray_session(address, num_cpus):
        runner = RayRunner(ray, staging)
        log.info("indexing on Ray: %d CPUs", runner.cpus)
        previous, index.executor = index.executor, runner
        try:
            yield runner
        finally:
            index.executor = previous


class RayRunner:
    """The build's executor on Ray (``pipeline.Executor``): its four operations shard over the cluster; see the
    module docstring."""

    name = "ray"

    def __init__(self, ray, staging: str | None = None) -> None:
        self.ray = ray
        self.staging = staging  # where embedding workers write their vector shards (None: the object store)
        self.cpus = max(1, int(ray.cluster_resources().get("CPU", 1)))
        self._remote: dict[Callable, Any] = {}
        self._specs: dict[int, tuple[BaseEmbedding, dict | BaseEmbedding]] = {}
        self.nodes_used: set[str] = set()  # ids of the cluster nodes that ran this runner's tasks
        self.min_shard = _MIN_TEXTS_PER_SHARD
        # what each task did (function, node, items, wall and CPU seconds, the worker's peak RSS), and each map's
        # wall seconds on the driver: benchmarks/ray_scale.py derives per-shard figures from them
        self.tasks: list[dict] = []
        self.maps: list[dict] = []

    # ------------------------------------------------------------------ plumbing

    def map(self, fn: Callable, shards: list, *shared: Any) -> list:
        """``fn(shard, *shared)`` on Ray for every shard; results in shard order. ``shared`` goes to the
        object store once, not once per task."""
        start = time.perf_counter()
        if len(shards) == 1:  # too little work to split: here, without a worker's start-up (same function, same result)
            done = [_on_node(fn, shards[0], *shared, driver=True)]
        else:
            if fn not in self._remote:  # shards spread over the nodes: Ray's default fills the driver's node first
                self._remote[fn] = self.ray.remote(num_cpus=1, scheduling_strategy="SPREAD")(_on_node)
            refs = [self.ray.put(value) for value in shared]
            done = self.ray.get([self._remote[fn].remote(fn, shard, *refs) for shard in shards])
            self.nodes_used.update(info["node"] for info, _ in done)
        self.maps.append({"fn": fn.__name__, "shards": len(shards), "seconds": time.perf_counter() - start})
        self.tasks += [info for info, _ in done]
        return [result for _, result in done]

    def shards(self, items: Sequence, weights: Sequence[int] | None = None, per_cpu: int = 1) -> list[list]:
        """Contiguous slices of ``items`` (concatenated, they are ``items`` in order) of about equal weight."""
        n = max(1, min(self.cpus * per_cpu, len(items) // self.min_shard))
        weights = list(weights) if weights is not None else [1] * len(items)
        total = sum(weights) or 1
        out: list[list] = [[] for _ in range(n)]
        acc = 0
        for item, w in zip(items, weights):
            out[min(n - 1, acc * n // total)].append(item)
            acc += w
        return [s for s in out if s]

    # ------------------------------------------------------------------ the steps insert() asks for

    def chunk(self, state, documents: Sequence[Document]) -> list[TextNode]:
        """The chunks ``LocalExecutor.chunk(state, documents)`` makes, split on Ray by document."""
        check_new_documents(state, documents)  # a shard sees only its own documents: duplicates are caught here
        docs = [d.to_dict() for d in documents]
        shards = self.shards(docs, [len(d.get("text") or "") for d in docs], per_cpu=2)
        out = self.map(_chunk_shard, shards, state.config.model_dump())
        del docs, shards
        return [TextNode.from_dict(d) for d in _drain(out)]

    def fit_statistics(self, stats: EntityStatistics, texts: list[str]) -> None:
        """``stats.fit(texts)`` as map/reduce: document frequencies are sums of per-shard counts."""
        for n_chunks, doc_freq in self.map(_count_shard, self.shards(texts, per_cpu=2), stats.max_ngram):
            stats.add_counts(n_chunks, doc_freq)

    def run_transformations(self, nodes: list[BaseNode], extractors: Sequence[TransformComponent],
                            show_progress: bool = False) -> None:
        """LlamaIndex's ``run_transformations(nodes, extractors)``, with our LLM-free extractors on Ray.

        Extractors run in their order, as locally; a subclass or any other extractor runs here unchanged.
        """
        from ..extractors.ner import NEREntityExtractor

        extractors = list(extractors)
        i = 0
        while i < len(extractors):
            ext = extractors[i]
            if type(ext) is StatisticalEntityExtractor:
                follows = extractors[i + 1] if i + 1 < len(extractors) else None
                cooc = follows if type(follows) is CooccurrenceRelationExtractor else None
                self._statistical(nodes, ext, cooc)
                i += 2 if cooc is not None else 1
                continue
            if type(ext) is NEREntityExtractor:
                from .distributed_ner import RayParsedNER

                RayParsedNER.wrapping(ext, self)(nodes)
            else:
                run_transformations(nodes, [ext], show_progress=show_progress)
            i += 1

    def embed(self, model: BaseEmbedding, texts: list[str], show_progress: bool = False) -> np.ndarray:
        """``model.get_text_embedding_batch(texts)`` on Ray: rows in the order of ``texts``."""
        shards = self.shards(texts, [len(t) for t in texts])
        if len(shards) == 1:  # a few names: the driver's model, no round trip
            return np.asarray(model.get_text_embedding_batch(texts), np.float32)
        if self.staging is not None:  # workers write files; the driver maps them (distributed_embed.py)
            return join_staged(self.staging, self.map(_embed_shard_to_file, shards, self._embedder_spec(model),
                                                      self.staging))
        return np.concatenate(self.map(_embed_shard, shards, self._embedder_spec(model)))

    def _embedder_spec(self, model: BaseEmbedding) -> dict | BaseEmbedding:
        """:func:`embedder_spec`, worked out once per model (it may embed a probe to check a serialised copy)."""
        if id(model) not in self._specs:  # the model is kept with its spec: its id is not reused meanwhile
            self._specs[id(model)] = (model, embedder_spec(model, self.ray))
        return self._specs[id(model)][1]

    def parse(self, nlp, model_name: str, texts: list[str], batch_size: int, relations: str = "parse") -> Iterator:
        """spaCy ``Doc``s of ``texts`` in order, parsed on Ray, read back into ``nlp``'s vocabulary."""
        from spacy.tokens import DocBin

        shards = self.shards(texts, [len(t) for t in texts])
        for blob in self.map(_parse_shard, shards, model_name, batch_size, relations):
            yield from DocBin().from_bytes(blob).get_docs(nlp.vocab)

    # ------------------------------------------------------------------ AGRAG's statistical extractor

    def _statistical(self, nodes: list[BaseNode], ext: StatisticalEntityExtractor,
                     cooc: CooccurrenceRelationExtractor | None) -> None:
        """The statistical extractor (and the co-occurrence relations after it) in two rounds.

        Locally one call scores every chunk, then links every chunk to every name extracted anywhere: the
        vocabulary between the two is global. Round 1 scores (Eq. 2-3) on Ray; the driver merges the
        vocabulary in chunk order; round 2 runs the real extractors on each shard seeded with that
        vocabulary, so their output is the local one (they score the shard again: cheaper than a second
        copy of their code).
        """
        if ext.fit_statistics:
            raise ValueError("on Ray the index fits the statistics itself (fit_statistics=False)")
        stats = ext.statistics.to_dict()
        items = [(n.node_id, n.get_content(metadata_mode=MetadataMode.NONE), kg_to_plain(n)) for n in nodes]
        shards = self.shards(items, [len(t) for _, t, _ in items], per_cpu=2)
        scored = self.map(_score_shard, [[t for _, t, _ in s] for s in shards], stats, ext.threshold, ext.length_norm)
        for entities in _drain(scored):
            ext.add_vocabulary(dict(entities))  # setdefault per key: the first chunk's surface form wins
        settings = _fields(ext), dict(ext.vocabulary), _fields(cooc) if cooc is not None else None
        linked = self.map(_link_shard, shards, stats, *settings)
        del items, shards
        for node, kg in zip(nodes, _drain(linked)):
            kg_from_plain(node, kg)


def _drain(results: list[list]) -> Iterator:
    """The items of a map's shard results in order, each shard released once read: the driver does not hold a
    step's whole output twice over (as plain data and as the objects made from it)."""
    for i in range(len(results)):
        shard, results[i] = results[i], None
        yield from shard


# ---------------------------------------------------------------------- plain data <-> LlamaIndex objects

def kg_to_plain(node: BaseNode) -> dict:
    """The entity nodes and relations an extractor put on a chunk, as lists of plain values."""
    out: dict[str, list] = {}
    if KG_NODES_KEY in node.metadata:
        for n in node.metadata[KG_NODES_KEY]:
            if not isinstance(n, EntityNode):
                raise TypeError(f"cannot send a {type(n).__name__} to Ray workers (only EntityNode)")
        out["nodes"] = [[n.name, n.label, dict(n.properties)] for n in node.metadata[KG_NODES_KEY]]
    if KG_RELATIONS_KEY in node.metadata:
        out["relations"] = [[r.label, r.source_id, r.target_id, dict(r.properties)]
                            for r in node.metadata[KG_RELATIONS_KEY]]
    return out


def kg_from_plain(node: BaseNode, kg: dict) -> None:
    node.metadata.pop(KG_NODES_KEY, None)
    node.metadata.pop(KG_RELATIONS_KEY, None)
    if "nodes" in kg:
        node.metadata[KG_NODES_KEY] = [EntityNode(name=n, label=lb, properties=p) for n, lb, p in kg["nodes"]]
    if "relations" in kg:
        node.metadata[KG_RELATIONS_KEY] = [Relation(label=lb, source_id=s, target_id=t, properties=p)
                                           for lb, s, t, p in kg["relations"]]


def _fields(component: TransformComponent) -> dict:
    """A component's settings (to rebuild it on a worker), without progress bars."""
    fields = component.model_dump()
    fields.pop("class_name", None)
    fields["show_progress"] = False
    return fields


# ---------------------------------------------------------------------- what runs on a worker
# Module-level functions, so Ray ships them by reference (the workers import this package).

def _peak_rss_mb() -> float | None:
    """This process's peak RSS (Linux reports KiB); None where the ``resource`` module is missing (Windows)."""
    try:
        import resource
    except ImportError:
        return None
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def _on_node(fn: Callable, shard: Any, *shared: Any, driver: bool = False) -> tuple[dict, Any]:
    """``fn(shard, *shared)`` on a worker (or on the driver, ``driver``), with what it took: the node it ran on
    (``RayRunner.nodes_used``), its items, wall and CPU seconds, and the process's peak RSS."""
    wall, cpu = time.perf_counter(), time.process_time()
    result = fn(shard, *shared)
    if driver:
        node = "driver"
    else:
        import ray

        node = ray.get_runtime_context().get_node_id()
    info = {"fn": fn.__name__, "node": node, "items": len(shard), "seconds": time.perf_counter() - wall,
            "cpu_seconds": time.process_time() - cpu, "peak_rss_mb": _peak_rss_mb()}
    return info, result


def _chunk_shard(docs: list[dict], config: dict) -> list[dict]:
    # The local build's own chunking, so the chunks are the same by construction.
    return [n.to_dict() for n in chunk_documents(IndexConfig(**config), [Document.from_dict(d) for d in docs])]


def _count_shard(texts: list[str], max_ngram: int) -> tuple[int, dict]:
    stats = EntityStatistics(max_ngram)
    stats.fit(texts)
    return stats.n_chunks, dict(stats.doc_freq)


def _score_shard(texts: list[str], stats: dict, threshold: float, length_norm: str) -> list[list[tuple[str, str]]]:
    fitted = EntityStatistics.from_dict(stats)
    return [[(e.key, e.surface) for e in fitted.extract(t, threshold, length_norm)] for t in texts]


def _link_shard(items: list[tuple[str, str, dict]], stats: dict, ext_fields: dict, vocabulary: dict,
                cooc_fields: dict | None) -> list[dict]:
    ext = StatisticalEntityExtractor(stats=EntityStatistics.from_dict(stats), **ext_fields)
    ext.add_vocabulary(vocabulary)
    nodes = []
    for node_id, text, kg in items:
        node = TextNode(id_=node_id, text=text)
        kg_from_plain(node, kg)
        nodes.append(node)
    ext(nodes)
    if cooc_fields is not None:
        CooccurrenceRelationExtractor(**cooc_fields)(nodes)
    return [kg_to_plain(n) for n in nodes]


def _parse_shard(texts: list[str], model_name: str, batch_size: int, relations: str = "parse") -> bytes:
    from spacy.tokens import DocBin

    from ..extractors.spacy_pipeline import load_pipeline
    from ..text import join_wrapped_lines

    docs = DocBin(store_user_data=False)  # spaCy's own binary format: token attributes, no pickle
    nlp = load_pipeline(model_name, relations)  # one process: Ray is the parallelism
    for doc in nlp.pipe((join_wrapped_lines(t) for t in texts), batch_size=batch_size):  # as spacy_pipeline.parse
        docs.add(doc)
    return docs.to_bytes()
