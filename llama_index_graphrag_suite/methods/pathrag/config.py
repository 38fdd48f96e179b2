"""PathRAG's settings: one typed config for node retrieval, path retrieval, chunk ranking and the path prompt.

Defaults follow the paper (Chen et al., "PathRAG", Implementation Details: N = 40, K = 15, α = 0.7),
the authors' code where the paper is silent (``../shared/notes/reference-implementations.md`` §2:
the 5,000-token path budget) and our own measurements elsewhere (``benchmarks/tuning.py``); the
DESIGN.md defaults table lists where paper and code disagree (code: α = 0.8, θ = 0.3, ≤ 3 hops).

Variants (``PRESETS``) are the paper's ablations plus one of ours:

* ``random_order`` / ``hop_first`` (Table 2): the paths in the prompt in a random order or more hops
  first, instead of ascending reliability (Eq. 6). Prompt only, retrieval unchanged.
* ``flat`` (Table 3): the kept paths' distinct nodes and edges listed once each, without the path
  structure. Prompt only, retrieval unchanged.
* ``paths_only``: only the chunks behind the paths are returned (``chunk_ranking="paths_only"``; may
  return fewer than ``top_k``). A retrieval ablation.

A setting given as well as a variant is applied after the preset, so it wins.
"""

from __future__ import annotations

from enum import Enum
from typing import Any, ClassVar

from ...graph.snapshot import RELATION, SYNONYM
from ..base import MethodConfig, param

__all__ = ["ChunkRanking", "EdgeKind", "PathOrder", "PathRAGConfig"]


class PathOrder(str, Enum):
    """The order of the paths in the prompt (:func:`~.render.render_paths`)."""

    ASCENDING = "ascending"  # Eq. 6: reliability ascending, so the most reliable path ends the prompt
    RANDOM = "random"  # Table 2 ablation: a shuffle seeded by the question
    HOP_FIRST = "hop_first"  # Table 2 ablation: more hops first, so the shortest paths end the prompt


class ChunkRanking(str, Enum):
    """How the paths rank the chunks returned (see ``retriever.py``, step 3)."""

    COMBINED = "combined"  # dense cosine + path_weight x (best reliability of a path behind it / the best path's)
    PATHS_FIRST = "paths_first"  # chunks behind paths by best reliability, then the densest remaining chunks
    PATHS_ONLY = "paths_only"  # chunks behind paths only (may be fewer than top_k)


class EdgeKind(str, Enum):
    """Snapshot edges the flow may traverse. Passage (``contains``) edges never are: PathRAG's indexing
    graph has entities and relations, texts hang on them."""

    RELATION = "relation"  # facts between entities
    SYNONYM = "synonym"  # "similar name" edges between entities

    @property
    def code(self) -> int:
        """The snapshot's edge-kind code (``graph/snapshot.py``)."""
        return {EdgeKind.RELATION: RELATION, EdgeKind.SYNONYM: SYNONYM}[self]


class PathRAGConfig(MethodConfig):
    """Every knob of PathRAG retrieval (see ``retriever.py`` for the steps they act on)."""

    # -- step 1: keywords and nodes
    num_nodes: int = param(40, "N: entity nodes retrieved from the keywords (each keyword's next best in turn)",
                           paper="PathRAG Implementation Details: N = 40 (authors' code: top_k = 40)", ge=1)
    max_keywords: int = param(8, "most keywords (LLM or LLM-free), the whole query added after them",
                              paper="ours", ge=1)
    keyword_max_df: float = param(
        0.005, "LLM-free keywords: skip phrases in more than this share of the chunks (and more than 5); generic "
        "words such as 'film' or 'born' pull in generic nodes", paper="ours", gt=0.0, le=1.0)
    # -- step 2: flow-based pruning (Eq. 2-4, graph/flow_paths.py)
    alpha: float = param(0.7, "α: decay of the resource at each hop (Eq. 2)",
                         paper="PathRAG Eq. 2, Implementation Details: α = 0.7 (authors' code: 0.8)", gt=0.0, le=1.0)
    theta: float = param(
        0.01, "θ: early stop, a node propagates only while S(v) / |N(v)| >= θ (Eq. 3)",
        paper="ours: the paper gives no value; at 0.01 a node with S = 0.14 (a neighbour of a start with 5 "
              "neighbours) propagates while it has at most 14 neighbours (authors' code: 0.3 on its edge flow)", ge=0.0)
    num_paths: int = param(15, "K: paths kept, the most reliable over every pair of retrieved nodes (Eq. 4)",
                           paper="PathRAG Implementation Details: K = 15 (authors' code: at most 15)", ge=1)
    paths_per_pair: int = param(1, "most paths kept per pair of retrieved nodes, before the global top K",
                                paper="ours (the paper ranks all candidates together)", ge=1)
    max_hops: int | None = param(None, "longest path in hops; None = no cap (the decay α gives distance awareness)",
                                 paper="PathRAG §Path Retrieval: no hop cap (authors' code: at most 3 hops)")
    edge_kinds: tuple[EdgeKind, ...] = param(
        (EdgeKind.RELATION,), "edges the flow traverses: 'relation' and/or 'synonym'. Synonym edges between nodes "
        "retrieved for the same keyword make one-hop 'similar name' paths that outrank every real relation",
        paper="PathRAG §Path Retrieval: relations of the indexing graph", min_length=1)
    # -- step 3: chunks
    chunk_ranking: ChunkRanking = param(
        ChunkRanking.COMBINED, "how paths rank chunks: 'combined', 'paths_first' (the literal reading) or "
        "'paths_only' (only chunks behind paths)",
        paper="ours: benchmarks/tuning.py (paths_only recall@5 26 / 17 on the 2wiki / musique dev indexes, "
              "dense 63 / 62)")
    sparse_weight: float = param(
        0.25, "the chunk score path support is added to: (1 - w) x min-max dense + w x min-max BM25 (0 ranks as "
        "dense, 0.5 is AGRAG's hybrid)", paper="ours: benchmarks/tuning.py on the NER graph (see path_weight)",
        ge=0.0, le=1.0)
    path_weight: float = param(
        0.2, "combined: weight of (best reliability of a path behind the chunk / the best path's) added to "
        "the chunk's base score (in [0, 1])",
        paper="ours: benchmarks/tuning.py on the NER graph, guard on; of w in {0, 0.25, 0.5} x weight in {0.05, 0.1, "
              "0.2}, (0.25, 0.2) is the maximin pick (the best gain over hybrid on the worst of the five shared sets, "
              "mean gain breaking ties): recall@5 66.8 / 82.0 / 60.0 / 65.9 / 78.8 on 2wiki / HotpotQA / MuSiQue / "
              "clinical / COVID, hybrid 65.6 / 80.0 / 57.6 / 65.8 / 77.9 (the older default (0.5, 0.2): 66.3 / 81.5 / "
              "57.7 / 66.0 / 78.6). Maximin is the one rule of benchmarks/sweep_lodo.py whose picks with a set left "
              "out stay at or above hybrid - 0.5 on every set (the others fall to 79.0 on HotpotQA left out); left "
              "out, MuSiQue gets 57.7 (its fold picks (0.5, 0.2)) and HotpotQA 80.5. ArchRAG's item_weight is "
              "picked by the same rule", ge=0.0)
    # -- step 4: the path prompt (Eq. 5-6)
    order: PathOrder = param(PathOrder.ASCENDING, "order of the paths in the prompt: 'ascending' (reliability), "
                             "'random' or 'hop_first'", paper="PathRAG Eq. 6; Table 2 ablations")
    flat: bool = param(False, "list the paths' distinct nodes and edges instead of the paths",
                       paper="PathRAG Table 3 ablation (flat prompt)")
    max_path_tokens: int | None = param(5000, "token budget of the path text; the least reliable paths are dropped "
                                        "first; None = no budget",
                                        paper="authors' code: max_token_for_local_context = 5000")
    max_edge_texts: int = param(2, "most distinct fact texts shown per edge in a path's text", paper="ours", ge=1)

    PRESETS: ClassVar[dict[str, dict[str, Any]]] = {
        "paper": {},  # the method as the paper ranks (the registry's plain name wraps it in the hybrid guard)
        "random_order": {"order": PathOrder.RANDOM},
        "hop_first": {"order": PathOrder.HOP_FIRST},
        "flat": {"flat": True},
        "paths_only": {"chunk_ranking": ChunkRanking.PATHS_ONLY},
    }
