"""ArchRAG's settings: one typed config for the hierarchy (index time) and the search (query time).

Defaults follow the paper and the authors' run scripts (``../shared/notes/reference-implementations.md``
§3.5: ``index.sh`` and the query parser). The **hierarchy fields** (:data:`HIERARCHY_FIELDS`: KNN
augmentation, Leiden, layers, summaries, C-HNSW) change how the hierarchy is built; the others change
only how it is searched. The hierarchy artefact is named after the hierarchy fields alone
(:meth:`ArchRAGConfig.hierarchy_digest`), so one saved hierarchy serves every search setting.

Variants (``PRESETS``): ``no_knn`` (hierarchy clustered without KNN augmentation, the paper's ablation),
``entities_only`` (bottom layer only: entities and their relations; the paper's "Entity-Only"),
``two_layers`` (layers 0 and 1, what the authors' code searches by default), ``dense_boost``
(``chunk_ranking="dense_boost"``, the default), ``best_item`` (chunks by their best item alone), ``ppr_refine`` (``chunk_ranking="ppr_refine"`` with 3 chunk items;
a ``chunk_top_k`` given as well is applied after the preset, so it wins).
"""

from __future__ import annotations

import hashlib
from enum import Enum
from typing import Any, ClassVar, Literal

from pydantic import model_validator

from ...graph.communities import HierarchyParams
from ..base import MethodConfig, param

__all__ = ["ArchRAGConfig", "ChunkRanking", "CommunityVector", "HIERARCHY_FIELDS", "LeidenObjective", "RelationScope"]


class LeidenObjective(str, Enum):
    """What weighted Leiden optimises (``graph/communities.py``)."""

    MODULARITY = "modularity"  # RBConfiguration with a resolution, as graspologic in the authors' code
    CPM = "cpm"  # Constant Potts Model: its resolution is a density threshold, to tune per graph


class CommunityVector(str, Enum):
    """How a community gets its C-HNSW vector."""

    AUTO = "auto"  # "summary" with an LLM, "centroid" without
    SUMMARY = "summary"  # embed "title: summary" (the authors embed title + summary)
    CENTROID = "centroid"  # normalised mean of the members' vectors (no embedding)


class RelationScope(str, Enum):
    """Which KG relations of the retrieved entities become items."""

    BETWEEN = "between"  # both ends retrieved (the paper: relations between retrieved entities)
    INCIDENT = "incident"  # at least one end retrieved (the authors' code: source entity retrieved)


class ChunkRanking(str, Enum):
    """How the retrieved items rank chunks (see ``retriever.py``)."""

    BEST_ITEM = "best_item"  # a chunk scores its best item's score
    DENSE_BOOST = "dense_boost"  # chunk cosine + item_weight x best item score
    PPR_REFINE = "ppr_refine"  # personalised PageRank from the items (the authors' ppr_refine option)


# The fields that change how the hierarchy is built (the artefact's name depends on these only).
HIERARCHY_FIELDS = (
    "knn_k", "knn_threshold", "knn_percentile", "augment", "resolution", "objective", "max_cluster_size",
    "max_layers", "min_nodes", "max_keep_ratio", "seed", "summary_members", "summary_chars", "llm_members",
    "llm_relations", "community_vector", "M", "ef_construction", "chnsw_builder",
)
# The search defaults a hierarchy records with its build settings (the old ArchRAGConfig dataclass held
# them), so a retriever given only ``hierarchy=`` searches as its builder meant.
HIERARCHY_SEARCH_DEFAULTS = ("k_per_layer", "ef")
# Hierarchy digests before the config merge hashed these two search fields as well. Hashing their old
# defaults keeps every saved hierarchy's name (the default config with ``chnsw_builder="insertion"``, the only
# builder then: ``archrag-extractive-8250adb964c0``)
# while no longer depending on the search settings.
_DIGEST_LEGACY_VALUES = {"k_per_layer": 5, "ef": 64}


class ArchRAGConfig(MethodConfig):
    """Every knob of ArchRAG: the hierarchy (index time) and the hierarchical search (query time)."""

    # -- KNN augmentation (Algorithm 1, lines 3-5)
    knn_k: int | None = param(None, "most KNN edges added per node; None = the mean degree",
                              paper="authors' code: m_du = mean degree x m_du_scale (1)")
    knn_threshold: float | None = param(None, "cosine a KNN edge must exceed; None = knn_percentile of the existing "
                                        "edges' cosines", paper="authors' code: percentile threshold wx")
    knn_percentile: float = param(80.0, "percentile of the existing edges' cosines used as the KNN threshold",
                                  paper="authors' index.sh: wx_weight = 0.8")
    augment: bool = param(True, "add KNN edges before clustering (False: the no-augmentation ablation)",
                          paper="ArchRAG Algorithm 1; §4.3 ablation 'No Aug'")
    # -- weighted Leiden
    resolution: float = param(1.0, "Leiden resolution", paper="graspologic default (authors' code)")
    objective: LeidenObjective = param(LeidenObjective.MODULARITY, "Leiden objective: 'modularity' or 'cpm'",
                                       paper="graspologic hierarchical_leiden (modularity)")
    max_cluster_size: int = param(15, "largest community; bigger ones are re-clustered",
                                  paper="authors' code: max_cluster_size = 15")
    seed: int = param(0, "seed of Leiden and of the C-HNSW build (results repeat)",
                      paper="ours: any fixed seed (authors: 0xDEADBEEF)")
    # -- layers: stop before a layer with fewer than min_nodes nodes, a stalled layer, or max_layers
    max_layers: int = param(5, "most community layers above the entities", paper="authors' code: max_level 4-6")
    min_nodes: int = param(10, "a layer's graph needs at least this many nodes to be clustered",
                           paper="authors' index.sh: min_clusters = 10")
    max_keep_ratio: float = param(0.9, "stop when clustering keeps more than this share of a layer's nodes as "
                                  "communities (stalled)", paper="ours: 2wiki top layers went 123 -> 100 -> 99")
    # -- summaries (Algorithm 1 line 7)
    summary_members: int = param(5, "central members in an extractive summary", ge=1,
                                 paper="ours: LLM-free stand-in for the authors' LLM community reports")
    summary_chars: int = param(600, "length cap of an extractive summary",
                               paper="ours: LLM-free stand-in for the authors' LLM community reports")
    llm_members: int = param(15, "members listed in an LLM summary prompt", paper="ours (authors: 4000-token context)")
    llm_relations: int = param(20, "relations listed in an LLM summary prompt", paper="ours (authors: 4000-token context)")
    summary_workers: int = param(4, "LLM community summaries of one layer requested at once (a bounded thread "
                                 "pool); changes the build time only, not the summaries, so it is no hierarchy field",
                                 paper="ours: a self-hosted server batches concurrent requests", ge=1)
    community_vector: CommunityVector = param(
        CommunityVector.AUTO, "community vector: 'summary' (embed title: summary), 'centroid' (mean of members) or "
        "'auto' (summary with an LLM, centroid without)",
        paper="authors embed title + summary; ours: centroid LLM-free (embedding ~2,800 extractive summaries took "
              "655 s of the 790 s 2wiki build)")
    # -- C-HNSW (Algorithm 3)
    M: int = param(16, "links a new C-HNSW node makes (a node holds at most 2M)", paper="HNSW's usual value "
                   "(authors: M = 32)", ge=1, le=1024)
    ef_construction: int = param(64, "C-HNSW candidate list while inserting", paper="ours: recall >= 0.95 per layer "
                                 "in tests/test_chnsw.py (authors: 16)", ge=1)
    chnsw_builder: Literal["faiss", "insertion"] = param(
        "faiss", "C-HNSW builder: 'faiss' (one faiss HNSW per layer, nearest node one layer down as the inter-layer "
        "link) or 'insertion' (Algorithm 3 in numpy)",
        paper="authors: IndexHCHNSW, their C++ insertion in a faiss fork; ours: faiss, 6x faster than the insertion "
              "with the same search quality per layer (studies/perf/chnsw_builders.md)")

    # -- hierarchical search (Section 3.2.1, Algorithm 2)
    k_per_layer: int = param(5, "items retrieved on every layer searched", paper="ArchRAG §4.1: k = 5 per layer", ge=1)
    ef: int = param(64, "C-HNSW search list size", paper="ours (authors: efSearch = 40)", ge=1)
    search_layers: int | None = param(None, "layers searched from the bottom (1 = entities only, 2 = the authors' "
                                      "default); None = every layer", paper="ArchRAG §3.2.1 searches all layers", ge=1)
    max_relations: int = param(10, "most relations among the retrieved entities", paper="authors' code: topk_e = 10",
                               ge=0)
    relation_scope: RelationScope = param(RelationScope.BETWEEN, "relations 'between' two retrieved entities or "
                                          "'incident' to one", paper="ArchRAG §3.2.1 (between); authors' code (incident)")
    # -- chunks for recall
    chunk_top_k: int = param(0, "chunks of a vanilla chunk index added as items", paper="authors' code: topk_chunk = 0",
                             ge=0)
    chunk_ranking: ChunkRanking = param(
        ChunkRanking.DENSE_BOOST, "chunk ranking: 'dense_boost', 'best_item' or 'ppr_refine'",
        paper="ours: benchmarks/tuning.py on the NER graph (best_item recall@5 59.2 / 72.0 / 52.2 on 2wiki / "
              "HotpotQA / MuSiQue, below dense 62.9 / 78.5 / 62.2); authors' code: ppr_refine option")
    sparse_weight: float = param(
        0.25, "dense_boost: the chunk score the best item score is added to: (1 - w) x min-max dense + w x "
        "min-max BM25 (0 ranks as dense, 0.5 is AGRAG's hybrid)",
        paper="ours: benchmarks/tuning.py on the NER graph (see item_weight)", ge=0.0, le=1.0)
    item_weight: float = param(
        0.2, "dense_boost: weight of the best item score added to a chunk's base score (in [0, 1])",
        paper="ours: benchmarks/tuning.py on the NER graph, guard on; of w in {0, 0.25, 0.5} x weight in {0.05, "
              "0.1, 0.2}, (0.25, 0.2) is the maximin pick (as PathRAG's path_weight) and the mean-gain pick, and "
              "both rules pick it again with any one set left out (benchmarks/sweep_lodo.py: no left-out gap): "
              "recall@5 68.1 / 81.5 / 62.1 / 65.9 / 79.4 on 2wiki / HotpotQA / MuSiQue / clinical / COVID, hybrid "
              "65.6 / 80.0 / 57.6 / 65.8 / 77.9, at or above the older default (0.25, 0.05) on every set (67.3 / "
              "81.5 / 62.1 / 65.8 / 79.0). The flat-optimum rule picks (0, 0.2), and with MuSiQue left out (0.5, "
              "0.2), 3.1 below its in-sample figure", ge=0.0)
    chunk_share: float = param(0.5, "ppr_refine: share of the restart mass on the chunk items", ge=0.0, le=1.0,
                               paper="ours: items and chunks weigh alike (benchmarks/archrag_signal.py compares "
                                     "0.5, 0.9 and 1.0)")
    ppr_damping: float = param(0.85, "ppr_refine: PageRank damping", paper="networkx default (authors' nx.pagerank)",
                               ge=0.0, lt=1.0)

    PRESETS: ClassVar[dict[str, dict[str, Any]]] = {
        "paper": {},  # the method as the paper ranks (the registry's plain name wraps it in the hybrid guard)
        "no_knn": {"augment": False},
        "entities_only": {"search_layers": 1},
        "two_layers": {"search_layers": 2},
        "dense_boost": {"chunk_ranking": ChunkRanking.DENSE_BOOST},
        "best_item": {"chunk_ranking": ChunkRanking.BEST_ITEM},
        "ppr_refine": {"chunk_ranking": ChunkRanking.PPR_REFINE, "chunk_top_k": 3},
    }

    @model_validator(mode="after")
    def _check_clustering(self) -> "ArchRAGConfig":
        self.hierarchy_params()  # the clustering knobs are checked where they are used (graph/communities.py)
        return self

    def hierarchy_params(self) -> HierarchyParams:
        """The clustering knobs for :func:`graph.communities.build_hierarchy` (a fresh, mutable object)."""
        return HierarchyParams(
            knn_k=self.knn_k, knn_threshold=self.knn_threshold, knn_percentile=self.knn_percentile, augment=self.augment,
            resolution=self.resolution, objective=self.objective.value, max_cluster_size=self.max_cluster_size,
            max_layers=self.max_layers, min_nodes=self.min_nodes, max_keep_ratio=self.max_keep_ratio, seed=self.seed)

    def hierarchy_settings(self) -> dict[str, Any]:
        """The values of :data:`HIERARCHY_FIELDS` (enums as their strings)."""
        return {name: _plain(getattr(self, name)) for name in HIERARCHY_FIELDS}

    def hierarchy_config(self) -> "ArchRAGConfig":
        """What a hierarchy records: the hierarchy fields and ``k_per_layer`` / ``ef``; the rest at defaults."""
        keep = {name: getattr(self, name) for name in HIERARCHY_FIELDS + HIERARCHY_SEARCH_DEFAULTS}
        return type(self)(**keep)

    def hierarchy_digest(self) -> str:
        """Short hash of the hierarchy fields: names the saved hierarchy (identical to the digest of the
        old dataclass when ``k_per_layer`` and ``ef`` were at their defaults)."""
        values = {**self.hierarchy_settings(), **_DIGEST_LEGACY_VALUES}
        if values["chnsw_builder"] == "insertion":  # the only builder before there were two: its names stay
            del values["chnsw_builder"]
        return hashlib.sha1(repr(sorted(values.items())).encode()).hexdigest()[:12]


def _plain(value: Any) -> Any:
    return value.value if isinstance(value, Enum) else value
