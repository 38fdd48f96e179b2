"""ArchRAG's offline artefact: attributed communities in layers, their summaries, and one C-HNSW over all layers.

Built on demand from a :class:`GraphRAGIndex` (paper Section 3.1, Algorithm 1, Appendix A.2), with the
hierarchy fields of :class:`ArchRAGConfig`:

* **Bottom layer = entities.** An entity's attribute text is its name plus the sentences it takes part
  in (the texts of its relation facts; our KG has no LLM-written descriptions). Its attribute vector is
  computed without re-embedding anything: ``normalise(name vector + normalise(mean of its sentence
  vectors))``, both read from the index's vector tables (a mean-pooled stand-in for embedding
  "name + sentences"; entities without facts keep their name vector), read as arrays (``attributes.py``). The
  bottom graph is the KG's relation edges (synonym edges are left out: KNN augmentation adds similarity links).
* **Community layers** (:func:`graph.communities.build_hierarchy`): KNN augmentation + cosine weights,
  weighted Leiden with a size cap, next-layer graph; stop on too few nodes or the layer cap.
* **Summaries** (Algorithm 1 line 7, ``summaries.py``): with an LLM, the ``community_summary`` prompt with
  the members' names and descriptions (entity sentences, or the sub-communities' summaries) and the
  relations among them; unreadable answers or failed calls fall back to the extractive summary for that
  community (counted). **LLM-free: "extractive"** summaries: the title is the names of the three most
  central members, the text their names and first sentences, most central first (centrality = weighted
  degree inside the community on the clustered graph). ``summary_kind`` in the metadata says which.
* **Community vectors**: ``community_vector="summary"`` embeds "title: summary" (the authors embed title +
  summary); ``"centroid"`` takes the normalised mean of the members' vectors (no embedding). The default
  ``"auto"`` is "summary" with an LLM and "centroid" without: an extractive summary is only the central
  members' own text, whose vectors the centroid already averages, and embedding ~2,800 extractive
  summaries took 655 s of the 790 s build on the 2wiki index (shared machine), against the 5-minute budget.
* **C-HNSW** over ``[entities, layer-1 communities, layer-2, ...]`` (:class:`graph.chnsw.CHNSW`).
* **Large indexes** (``SHARED_HNSW_ENTITIES`` entities or more, faiss builder): each layer's faiss HNSW is built
  when the layer's vectors are known, the KNN step searches it (as the authors' KNN step searches a faiss HNSW;
  the inverted-file search it replaces grows as n·√n), and the C-HNSW takes it over instead of building it again.
  The entities' HNSW is built first and its stored rows serve as the attribute vectors, held once. Smaller
  indexes get the hierarchy they always had (``studies/perf/archrag_hierarchy_scale.py`` measures both).

Index-time cost (``cost``): communities per layer, summary LLM calls/tokens/failures, seconds per step.
Built once per saved index version: the first process that needs it adds it to the version it was built for
(``index/artefacts.py``), and later processes load it. Saved to a folder atomically (``index/storage.py`` versioned
folders: JSON + ``.npy`` + ``CHNSW.save``, no pickle; the layers' vectors are stored once, in the C-HNSW, and
memory-mapped on load) and loaded back against the same index.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import scipy.sparse as sp
from llama_index.core.prompts import BasePromptTemplate

from ...graph.chnsw import CHNSW, hnsw_layer, hnsw_rows, hnsw_search
from ...graph.chnsw_search import unit_rows
from ...graph.communities import build_hierarchy, centroids
from ...graph.snapshot import CONTAINS, RELATION
from ...index.mapped_pages import trim_heap
from ...index.storage import open_version, read_json, save_version, write_json
from ...index.vectors import normalize_rows
from ...llm.usage import LLMUsage
from .attributes import attribute_vectors, entity_names, entity_texts, fact_ends
from .config import ArchRAGConfig, CommunityVector
from ..shared_graph import chunk_position_of_row
from .prompts import COMMUNITY_SUMMARY_PROMPT
from .summaries import FactLookup, summarise_layer

SUMMARY_KINDS = ("llm", "extractive")
# From this many entities on, each layer's KNN step searches the faiss HNSW the C-HNSW keeps for that layer, built
# once (as the authors' KNN step searches an HNSW), instead of an inverted-file index whose search grows as n·√n.
# Below it the hierarchy is the one it always was (the shared data sets have fewer entities).
SHARED_HNSW_ENTITIES = 100_000
KNN_EF_SEARCH = 16  # faiss's default efSearch, which the authors' KNN index searches with

__all__ = ["ArchRAGHierarchy", "SUMMARY_KINDS"]

@dataclass
class ArchRAGHierarchy:
    """Layers of attributed communities over an index's entities, with summaries and a C-HNSW."""

    entity_ids: list[str]  # bottom-layer rows (= list(index.entities) at build time)
    entity_vectors: np.ndarray  # attribute vectors, layer 0 of the C-HNSW
    memberships: list[np.ndarray]  # memberships[l - 1][i] = community (layer l) of node i of layer l - 1
    community_vectors: list[np.ndarray]  # per community layer
    titles: list[list[str]]
    summaries: list[list[str]]
    summary_kind: str
    chnsw: CHNSW
    config: ArchRAGConfig
    cost: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        # The community of every entity on every layer (composition of the memberships).
        self.entity_community: list[np.ndarray] = []
        current = np.arange(len(self.entity_ids))
        for membership in self.memberships:
            current = membership[current]
            self.entity_community.append(current)
        self._chunk_maps: tuple | None = None

    @property
    def num_layers(self) -> int:
        """Layers of the C-HNSW: entities plus community layers."""
        return 1 + len(self.memberships)

    def communities_per_layer(self) -> list[int]:
        return [int(v.shape[0]) for v in self.community_vectors]

    def community_members(self, layer: int, community: int) -> np.ndarray:
        """Entity rows under a community of ``layer`` (>= 1)."""
        return np.flatnonzero(self.entity_community[layer - 1] == community)

    # ------------------------------------------------------------------ chunk mapping (retrieval)

    def chunk_maps(self, index) -> tuple[sp.csr_matrix, list[sp.csr_matrix]]:
        """Sparse incidence: entity row -> chunk positions (``index.chunk_order``), and per community layer
        community -> chunk positions (the chunks of all entities under it)."""
        if self._chunk_maps is None:
            entity_chunks = _entity_chunks(index, self.entity_ids)
            n = len(self.entity_ids)
            per_layer = []
            for layer, ec in enumerate(self.entity_community, start=1):
                onehot = sp.csr_matrix((np.ones(n, np.float32), (ec, np.arange(n))), shape=(self.communities_per_layer()[layer - 1], n))
                per_layer.append((onehot @ entity_chunks).tocsr())
            self._chunk_maps = (entity_chunks, per_layer)
        return self._chunk_maps

    # ------------------------------------------------------------------ build

    @classmethod
    def build(cls, index, config: ArchRAGConfig | None = None, llm=None,
              summary_prompt: BasePromptTemplate | None = None, summary_workers: int | None = None
              ) -> "ArchRAGHierarchy":
        """Algorithm 1 + Algorithm 3 on ``index`` (LLM summaries when ``llm`` is given, else extractive).

        Only the hierarchy fields of ``config`` matter here; the hierarchy records
        :meth:`ArchRAGConfig.hierarchy_config`. ``summary_prompt``: the LLM summary template (default:
        ``prompts.COMMUNITY_SUMMARY_PROMPT``; the retriever passes its ``community_summary`` prompt).
        ``summary_workers``: LLM summary calls in flight at most (default: ``config.summary_workers``).
        """
        workers = summary_workers or (config or ArchRAGConfig()).summary_workers
        config = (config or ArchRAGConfig()).hierarchy_config()
        summary_prompt = summary_prompt if summary_prompt is not None else COMMUNITY_SUMMARY_PROMPT
        if index.snapshot is None or not index.entities:
            raise ValueError("ArchRAG needs an index with entities; build or load one first")
        started = time.perf_counter()
        timings: dict[str, float] = {}
        entity_ids = list(index.entities)
        ends = fact_ends(index, entity_ids)
        texts = entity_texts(ends, len(entity_ids))  # member "descriptions", layer 0: two sentences each
        attr = attribute_vectors(index, entity_ids, ends)
        del ends
        timings["attribute_vectors"] = time.perf_counter() - started
        trim_heap()  # the fact columns' arrays and the incidence are gone

        snap = index.snapshot
        rel = snap.edge_kind == RELATION
        src, dst = snap.edge_src[rel].astype(np.int64), snap.edge_dst[rel].astype(np.int64)

        usage = LLMUsage()
        names = entity_names(index, entity_ids)
        state = {"names": names, "texts": texts, "titles": [], "summaries": [], "fallbacks": 0}
        facts_between = FactLookup(index, entity_ids) if llm is not None else None
        summarise_seconds = [0.0]

        def community_vectors(layer: int, membership: np.ndarray, below: np.ndarray, graph) -> np.ndarray:
            t0 = time.perf_counter()
            trim_heap()  # Leiden's graph is gone: give its memory back before the summaries
            titles, summaries = summarise_layer(layer, membership, graph, state, config, llm, usage,
                                                facts_between, entity_ids, state_memberships, summary_prompt,
                                                workers)
            state_memberships.append(membership)
            state["titles"].append(titles)
            state["summaries"].append(summaries)
            state["names"], state["texts"] = titles, summaries
            vector = config.community_vector
            if vector == CommunityVector.CENTROID or (vector == CommunityVector.AUTO and llm is None):
                vecs = centroids(below, membership)
            else:
                vecs = normalize_rows(np.asarray(index.embed_model.get_text_embedding_batch(
                    [f"{t}: {s}" for t, s in zip(titles, summaries)]), np.float32))
            summarise_seconds[0] += time.perf_counter() - t0
            return vecs

        state_memberships: list[np.ndarray] = []
        shared: dict[int, Any] = {}  # layer -> the HNSW its KNN step searched, reused by the C-HNSW
        share = len(entity_ids) >= SHARED_HNSW_ENTITIES and config.chnsw_builder == "faiss"
        if share:  # the entities' HNSW first: from then on its stored rows are the attribute vectors (one copy)
            shared[0] = hnsw_layer(unit_rows(attr, in_place=True), config.M, config.ef_construction)
            attr = hnsw_rows(shared[0])

        def layer_search(layer: int, x: np.ndarray):
            trim_heap()  # before the layer's KNN step, the build's peak
            if not share:
                return None
            if layer not in shared:
                shared[layer] = hnsw_layer(unit_rows(x, in_place=True), config.M, config.ef_construction)
            return lambda rows, k, index_=shared[layer]: hnsw_search(index_, rows, k, KNN_EF_SEARCH)

        t0 = time.perf_counter()
        layers = build_hierarchy(attr, src, dst, config.hierarchy_params(), community_vectors, layer_search)
        timings["clustering_and_summaries"] = time.perf_counter() - t0
        timings["summaries_and_embedding"] = summarise_seconds[0]
        t0 = time.perf_counter()
        trim_heap()
        chnsw_layers = [attr] + [layer.vectors for layer in layers]
        del attr  # the C-HNSW scales these rows to unit length in place and keeps them: no second copy
        chnsw = CHNSW.build(chnsw_layers, M=config.M, ef_construction=config.ef_construction, seed=config.seed,
                            builder=config.chnsw_builder, copy=False,
                            prebuilt={l: shared[l] for l in range(len(chnsw_layers)) if l in shared})
        del chnsw_layers, shared
        timings["chnsw"] = time.perf_counter() - t0
        timings["total"] = time.perf_counter() - started
        spent = usage.snapshot()
        cost = {
            "entities": len(entity_ids),
            "communities_per_layer": [int(layer.vectors.shape[0]) for layer in layers],
            "knn_edges_per_layer": [layer.graph.num_knn_edges for layer in layers],
            "knn_threshold_per_layer": [round(layer.graph.threshold, 6) if layer.graph.threshold == layer.graph.threshold else None
                                        for layer in layers],
            "summary_llm_calls": int(spent["calls"]),
            "summary_prompt_tokens": int(spent["prompt_tokens"]),
            "summary_completion_tokens": int(spent["completion_tokens"]),
            "summary_llm_failures": int(spent["failures"]),
            "summary_extractive_fallbacks": int(state["fallbacks"]),
            "seconds": {k: round(v, 3) for k, v in timings.items()},
        }
        # The C-HNSW's own unit rows serve as the layers' vectors, so a built and a loaded hierarchy score alike
        # and a saved one holds each vector once.
        vectors = [chnsw.layer_vectors(layer) for layer in range(chnsw.num_layers)]
        return cls(entity_ids, vectors[0], [layer.membership for layer in layers], vectors[1:],
                   state["titles"], state["summaries"], "llm" if llm is not None else "extractive", chnsw, config, cost)

    # ------------------------------------------------------------------ persistence

    def save(self, folder: str | Path) -> Path:
        """Write atomically into ``folder`` (a versioned folder, see ``index/storage.py``); no pickle."""

        def write(target: Path) -> None:
            write_json(target / "archrag.json", {
                "entity_ids": self.entity_ids, "titles": self.titles, "summaries": self.summaries,
                "summary_kind": self.summary_kind, "config": self.config.model_dump(mode="json"), "cost": self.cost,
                "layers": len(self.memberships),
            })
            for layer, membership in enumerate(self.memberships, start=1):
                np.save(target / f"membership_{layer}.npy", membership)
            self.chnsw.save(target / "chnsw")  # the layers' vectors are the C-HNSW's

        return save_version(folder, write, {"artefact": "archrag-hierarchy"})

    @classmethod
    def load(cls, folder: str | Path, index=None) -> "ArchRAGHierarchy":
        """Read a saved hierarchy; with ``index``, check it was built over the same entities."""
        target, manifest = open_version(folder)
        if manifest.get("artefact") != "archrag-hierarchy":
            raise ValueError(f"{folder} does not hold an ArchRAG hierarchy")
        meta = read_json(target / "archrag.json")
        layers = int(meta["layers"])
        memberships = [np.load(target / f"membership_{l}.npy", allow_pickle=False) for l in range(1, layers + 1)]
        if index is not None and list(index.entities) != meta["entity_ids"]:
            raise ValueError(f"the ArchRAG hierarchy in {folder} was built for a different index (entities differ); rebuild it")
        chnsw = CHNSW.load(target / "chnsw")  # its vectors memory-mapped read-only: file cache, not process memory
        if (target / "entity_vectors.npy").is_file():  # saved before the layers' vectors were the C-HNSW's only
            vectors = [np.load(target / name, mmap_mode="r", allow_pickle=False) for name in
                       ["entity_vectors.npy"] + [f"community_vectors_{l}.npy" for l in range(1, layers + 1)]]
        else:
            vectors = [chnsw.layer_vectors(l) for l in range(chnsw.num_layers)]
        entity_vectors, vectors = vectors[0], vectors[1:]
        sizes = [len(meta["entity_ids"])] + [v.shape[0] for v in vectors]
        if (len(vectors) != layers or any(m.shape[0] != sizes[i] for i, m in enumerate(memberships))
                or entity_vectors.shape[0] != sizes[0]):
            raise ValueError(f"the ArchRAG hierarchy in {folder} is inconsistent (layer sizes do not match)")
        if chnsw.layer_sizes != sizes:
            raise ValueError(f"the C-HNSW in {folder} has layers {chnsw.layer_sizes}, expected {sizes}")
        return cls(meta["entity_ids"], entity_vectors, memberships, vectors, meta["titles"], meta["summaries"],
                   meta["summary_kind"], chnsw, _saved_config(meta["config"]), meta["cost"])


# ---------------------------------------------------------------------------------------- helpers

def _saved_config(saved: dict) -> ArchRAGConfig:
    """The config a hierarchy was saved with. Settings this version no longer has (a retrieval setting renamed or
    removed since) are dropped: they did not shape the hierarchy, whose own fields name its folder."""
    return ArchRAGConfig.model_validate({k: v for k, v in saved.items() if k in ArchRAGConfig.model_fields})


def _entity_chunks(index, entity_ids: list[str]) -> sp.csr_matrix:
    """Entity row -> positions in ``index.chunk_order`` of the chunks that mention it (1.0 each), from the snapshot's
    chunk-entity edges (the same pairs as the entities' chunk sets, which the load checks): a few array passes, not a
    record per entity (at 100,000 passages the records made a serving process's first query take 8 CPU s)."""
    snap = index.snapshot
    n = len(entity_ids)
    # A hierarchy of the snapshot's own entities (they are its first rows, in order): no lookup per id.
    at = np.arange(n) if snap.node_ids[:n] == entity_ids else snap.rows_or_missing(entity_ids)
    row_of = np.full(snap.num_nodes, -1, np.int64)  # snapshot row -> entity row of the hierarchy
    row_of[at[at >= 0]] = np.flatnonzero(at >= 0)
    contains = snap.edge_kind == CONTAINS
    rows = row_of[snap.edge_dst[contains]]  # contains edges are stored (chunk, entity)
    cols = chunk_position_of_row(index)[snap.edge_src[contains]]
    keep = (rows >= 0) & (cols >= 0)
    out = sp.csr_matrix((np.ones(int(keep.sum()), np.float32), (rows[keep], cols[keep].astype(np.int64))),
                        shape=(n, len(index.chunk_order)))
    out.sum_duplicates()
    out.data[:] = 1.0  # a chunk mentions an entity once, however many edges say so
    return out
