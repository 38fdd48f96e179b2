"""The hybrid guard's defaults chosen by leave-one-dataset-out (LODO), and the five-set table.

Four steps, each cached in ``--work`` so a re-run only does what is missing:

1. ``build``: one index per dataset (MiniLM, the default extractor unless ``--entities``), saved under
   ``WORK/<tag>/<dataset>``; the 15 most linked entities and the entity counts go to ``graph.json``.
2. ``rank``: per dataset, per graph method, its own ranking to the guard's depth with the guard off
   (the method alone, ``top_k=DEPTH``), hybrid's ranking, the guard's signals (query link share, per
   hub rule) and the gold passages; saved as ``rankings.json``. The guard's fusion of a method's own ranking
   (the guard off) with hybrid's is then pure arithmetic at any setting. A method's own ranking is its paper
   variant, except A2RAG's, whose paper variant also drops our anchors and is ranked apart (``paper``).
3. ``check``: each method as shipped (defaults, guard on) through ``retrieve``, recall@5 (the "shipped" column);
   with ``--methods``, only those are checked again and the others keep their figures (a new ``build`` clears
   them all).
4. ``tune``: a grid over the guard's settings. For each dataset, the setting that scores best on the other
   four is measured on it (left-out), beside the setting best on all five (in-sample) and the shipped
   defaults. Objective on a set of datasets: the mean over datasets and methods of
   ``recall@5 - hybrid recall@5``, minus 10x every shortfall below ``hybrid - 0.5`` (the issue's floor);
   settings that meet the floor everywhere are preferred to any that do not (a constraint, not a trade). The
   setting picked is the one whose objective, averaged with that of its grid neighbours, is best (a flat optimum,
   :data:`SHIPPED_RULE`).
   Beside each figure: the best any setting of the grid reaches on that set alone (the ceiling of the guard's
   family there), and 90 % paired-bootstrap intervals of in-sample minus left-out and of in-sample minus hybrid
   (questions resampled: how much of a difference one set's questions can tell apart from noise). Beside the
   rule that picks the defaults, ``pick_rules`` reports the left-out gaps under other rules of picking a setting
   (:data:`PICK_RULES`), so that a reader can tell the gaps that come from the rule from those of the method,
   and ``rule_choice`` checks the choice of rule by a nested leave-one-dataset-out.

    python benchmarks/domain_tuning.py --datasets ../shared/datasets --work /tmp/gr25 build rank check tune

``--out`` writes the tables (markdown) that BENCHMARKS.md quotes.
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import sys
import time
from collections import Counter
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import SHARED_SETS, recall_at  # noqa: E402 (the folder on the path first)

os.environ.setdefault("HF_HUB_OFFLINE", "1")

DATASETS = SHARED_SETS
# a2rag ranks to its top_k (5) before the guard: its hybrid anchors already keep hybrid's best chunks there
METHODS = ("hipporag", "agrag", "pathrag", "archrag", "a2rag@5")
DEPTH = 20
K = 5
BOOTSTRAP_DRAWS = 2000  # resamples behind the in-sample minus left-out (and minus hybrid) intervals
FLOOR_PENALTY = 10.0  # a point below hybrid - 0.5 (the floor) costs ten points of gain elsewhere
OWN_SETTINGS = ("a2rag@5",)  # the recommended method gets guard settings of its own (A2RAGConfig's defaults)


def retriever_class(method: str):
    if method == "hipporag":
        from llama_index_graphrag_suite.methods.baselines import HippoRAGRetriever
        return HippoRAGRetriever
    if method == "agrag":
        from llama_index_graphrag_suite.methods.agrag import AGRAGRetriever
        return AGRAGRetriever
    if method == "pathrag":
        from llama_index_graphrag_suite.methods.pathrag import PathRAGRetriever
        return PathRAGRetriever
    if method == "archrag":
        from llama_index_graphrag_suite.methods.archrag import ArchRAGRetriever
        return ArchRAGRetriever
    if method == "a2rag":
        from llama_index_graphrag_suite.methods.a2rag import A2RAGRetriever
        return A2RAGRetriever
    raise ValueError(method)


def index_config(settings: str):
    from llama_index_graphrag_suite.config import IndexConfig
    return IndexConfig(**json.loads(settings or "{}"))


def build(args, ds: str) -> Path:
    from llama_index_graphrag_suite.embeddings import resolve_embed_model
    from llama_index_graphrag_suite.eval.datasets import load_dataset
    from llama_index_graphrag_suite.index import GraphRAGIndex

    folder = Path(args.work) / args.tag / ds
    if (folder / "graph.json").exists():
        return folder
    dataset = load_dataset(Path(args.datasets) / ds)
    import resource

    def cpu_now() -> float:  # this process and its finished children (spaCy's worker processes)
        own, kids = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
        return own.ru_utime + own.ru_stime + kids.ru_utime + kids.ru_stime

    start, cpu = time.perf_counter(), cpu_now()
    index = GraphRAGIndex.from_documents(dataset.documents, embed_model=resolve_embed_model("all-MiniLM-L6-v2"),
                                         config=index_config(args.index_config), show_progress=False)
    seconds, cpu_s = time.perf_counter() - start, cpu_now() - cpu
    index.persist(folder / "index")
    for stale in ("rankings.json", "checked.json"):  # of an earlier index in this folder: the steps after redo them
        (folder / stale).unlink(missing_ok=True)
    linked = Counter({key: len(rec.chunks) for key, rec in index.entities.items()})
    types = Counter(rec.type for rec in index.entities.values())
    info = {"dataset": ds, "seconds": round(seconds, 1), "cpu_seconds": round(cpu_s, 1),
            "stage_seconds": index.build_info.get("stage_seconds", {}), "chunks": len(index.chunks),
            "entities": len(index.entities), "facts": len(index.facts), "types": dict(types.most_common()),
            "build_info": {k: v for k, v in index.build_info.items() if isinstance(v, (str, int, float, dict, list))},
            "top_linked": [[k, n, index.entities[k].type] for k, n in linked.most_common(15)]}
    (folder / "graph.json").write_text(json.dumps(info, indent=1))
    print(f"[build] {ds}: {seconds:.0f} s, {info['entities']} entities, {info['chunks']} chunks", flush=True)
    return folder


def rank(args, ds: str) -> None:
    from llama_index_graphrag_suite.embeddings import resolve_embed_model
    from llama_index_graphrag_suite.eval.datasets import load_dataset
    from llama_index_graphrag_suite.index import GraphRAGIndex
    from llama_index_graphrag_suite.methods.guard import fusion, signals
    from llama_index_graphrag_suite.methods.scoring import top_k

    folder = Path(args.work) / args.tag / ds
    out = folder / "rankings.json"
    have = json.loads(out.read_text()) if out.exists() else {}
    todo = [m for m in args.methods if m not in have.get("methods", {})]
    if not todo and have and all(k in have for k in ("dense", "link_names", "name_density", "paper", "link_keys",
                                                     "chunk_entities")) and \
            isinstance(have.get("cover"), list):
        return
    dataset = load_dataset(Path(args.datasets) / ds)
    index = GraphRAGIndex.load(folder / "index", embed_model=resolve_embed_model("all-MiniLM-L6-v2"),
                               show_progress=False)
    questions = [q for q in dataset.questions if q.supporting_ids]
    if args.limit:
        questions = questions[: args.limit]
    doc_of = [index.chunks[c].doc_id for c in index.chunk_order]
    position = index.chunk_position
    if not have:
        n = len(index.chunk_order)
        hubs = {str(share): signals.hub_chunks(n, share, 20) for share in (0.01, 0.02, 0.05, 0.1, 1.0)}
        have = {"dataset": ds, "doc_of": doc_of, "gold": [list(q.supporting_ids) for q in questions],
                "hybrid": [], "link": {h: [] for h in hubs}, "methods": {}}
        for q in questions:
            have["hybrid"].append(fusion.hybrid_ranking(index, q.question, DEPTH).tolist())
            for h, cap in hubs.items():
                have["link"][h].append(round(signals.query_link(index, q.question, cap)[0], 4))
    if "link_names" not in have:  # the guard's link share counting named entities only (no TERM)
        hubs = {h: signals.hub_chunks(len(index.chunk_order), float(h), 20) for h in have["link"]}
        have["link_names"] = {h: [round(signals.query_link(index, q.question, cap, names_only=True)[0], 4)
                                  for q in questions] for h, cap in hubs.items()}
        out.write_text(json.dumps(have))
    if "name_density" not in have:  # the corpus's capitalised words per 100, as the guard reads it
        have["name_density"] = signals.corpus_name_density(index)
        out.write_text(json.dumps(have))
    if not isinstance(have.get("cover"), list):  # per hybrid chunk, the share of the question's entities it holds
        every = len(index.chunk_order)  # every entity counts, as in the guard
        have["cover"] = [signals.entity_coverage(index, signals.query_link(index, q.question, every)[1],
                                               np.asarray(hyb)).tolist() for q, hyb in zip(questions, have["hybrid"])]
        out.write_text(json.dumps(have))
    if "dense" not in have:  # the two single-signal baselines, for the table
        have["dense"], have["bm25"] = [], []
        for q in questions:
            have["dense"].append(top_k(index.chunk_dense_scores(index.embed_query(q.question)), DEPTH).tolist())
            have["bm25"].append(top_k(index.bm25.scores(q.question), DEPTH).tolist())
        out.write_text(json.dumps(have))
    for m in todo:
        start = time.perf_counter()
        name, _, depth = m.partition("@")  # "a2rag@5": ranked to 5 (the method's top_k), not to DEPTH
        retriever = retriever_class(name)(index, top_k=int(depth or DEPTH))  # the class is the method alone
        ranks = []
        for q in questions:
            chunks, _ = retriever.retrieve_with_evidence(q.question)
            ranks.append([position[n.node.node_id] for n in chunks])
        have["methods"][m] = ranks
        print(f"[rank] {ds} {m}: {len(questions)} questions, {time.perf_counter() - start:.0f} s", flush=True)
        out.write_text(json.dumps(have))
    if "link_keys" not in have:  # the question's specific entities, per hub share, all and named only
        hubs = {h: signals.hub_chunks(len(index.chunk_order), float(h), 20) for h in have["link"]}
        have["link_keys"] = {kind: {h: [sorted(set(signals.query_link(index, q.question, cap, kind == "names")[1]))
                                        for q in questions] for h, cap in hubs.items()} for kind in ("all", "names")}
    ranked = {c for r in have["hybrid"] for c in r} | {c for m in have["methods"].values() for r in m for c in r}
    entities = have.setdefault("chunk_entities", {})  # what the walk's switch reads of a chunk: its entities
    for c in ranked - {int(c) for c in entities}:
        entities[str(c)] = sorted(index.chunks[index.chunk_order[c]].entities)
    # A method whose paper variant is more than its own ranking with the guard off (A2RAG's drops our anchors
    # too) is ranked once more as that variant, for the table's "paper" column.
    papers = have.setdefault("paper", {})
    for m in args.methods:
        name, _, depth = m.partition("@")
        cls = retriever_class(name)
        if m in papers or not cls.config_class.PRESETS.get("paper"):
            continue
        retriever = cls(index, top_k=int(depth or DEPTH), variant="paper")
        papers[m] = [[position[n.node.node_id] for n in retriever.retrieve_with_evidence(q.question)[0]]
                     for q in questions]
        print(f"[rank] {ds} {m}:paper: {len(questions)} questions", flush=True)
    out.write_text(json.dumps(have))


def check(args, ds: str) -> None:
    """recall@5 of each method as shipped (its defaults, the guard on, top_k=5) through ``retrieve``: the
    simulation in ``tune`` must agree with the real retrievers."""
    from llama_index_graphrag_suite.embeddings import resolve_embed_model
    from llama_index_graphrag_suite.eval.datasets import load_dataset
    from llama_index_graphrag_suite.eval.metrics import recall_at
    from llama_index_graphrag_suite.index import GraphRAGIndex
    from llama_index_graphrag_suite.registry import get_retriever

    folder = Path(args.work) / args.tag / ds
    dataset = load_dataset(Path(args.datasets) / ds)
    index = GraphRAGIndex.load(folder / "index", embed_model=resolve_embed_model("all-MiniLM-L6-v2"),
                               show_progress=False)
    questions = [q for q in dataset.questions if q.supporting_ids]
    # the methods not asked for keep their figures (``check --methods pathrag`` after a change to PathRAG alone)
    saved = folder / "checked.json"
    out = {m: v for m, v in json.loads(saved.read_text()).items() if m not in args.methods} if saved.exists() else {}
    for m in args.methods:
        retriever = get_retriever(index, m.partition("@")[0], top_k=K)  # as shipped: inside the guard
        total = sum(recall_at([n.node.metadata["doc_id"] for n in retriever.retrieve(q.question)], q.supporting_ids, K)
                    for q in questions)
        out[m] = round(100.0 * total / len(questions), 1)
    saved.write_text(json.dumps(out))
    print(f"[check] {ds}: {out}", flush=True)


# ------------------------------------------------------------------------------------------- tuning

def recall5(ranked_chunks, doc_of, gold) -> float:
    return recall_at(ranked_chunks, doc_of, gold, K)


# the shipped guard_walk_keeps_first, which no grid varies: simulated so that the tuning's figures are the retriever's
WALK_KEEPS_FIRST = True
NAME_RICH = 12.0  # extractors.terms.NAME_RICH: a corpus written in names (checked in tests/test_benchmark_scripts.py)
HUB_SHARE = 0.05  # methods.guard.signals.HUB_SHARE: the hub cut-off (checked in tests/test_benchmark_scripts.py)
W_STEPS = np.linspace(0.0, 1.0, 21)  # the graph weight's grid: guard.fusion.WEIGHT_STEP, so the simulation is exact


def curve_key(s: dict) -> tuple:
    """The settings a recall curve depends on (the rest only pick the weight step)."""
    return s["rrf_k"], s["cover_gain"]


def key_variants(data) -> list[tuple[str, bool]]:
    """The (hub share, names only) readings of the question's entities the grid asks for (``link_keys``); none in a
    corpus written in common nouns, where the walk's switch never fires."""
    if data["name_density"] < NAME_RICH:
        return []
    return [(str(h), only) for only in GRID["names_only"] for h in GRID["hub"]]


def names_held(data, keys: list[str], linked: set[str]) -> int:
    """As ``guard.signals.names_held``: how many of ``keys`` the entities ``linked`` to a top 5 hold."""
    return sum(1 for key in keys if key in linked)


def linked_to(data, positions) -> set[str]:
    """The entities of the ranked chunks at ``positions`` (stored by ``rank``)."""
    return set().union(*(data["chunk_entities"][str(c)] for c in positions)) if len(positions) else set()


def recall_curves(data, method: str, keys) -> dict:
    """recall@5 of each question at every weight step, per :func:`curve_key`: ``{key: array (questions, steps)}``,
    the per-question top-5 agreement of the method with plain hybrid, and what the walk's switch reads: whether the
    method's top 5 holds hybrid's first chunk, and how many of the question's entities (per :func:`key_variants`)
    its top 5 and the fused top 5 at each step are linked to."""
    from llama_index_graphrag_suite.methods.guard.fusion import fuse_rankings, linked_hybrid

    doc_of, n, variants = data["doc_of"], len(data["gold"]), key_variants(data)
    curves = {key: np.zeros((n, len(W_STEPS))) for key in keys}
    held = {key: np.zeros((n, len(W_STEPS), len(variants)), np.int64) for key in keys}
    own_held = np.zeros((n, len(variants)), np.int64)
    agree = np.zeros(n)
    keeps_first = np.zeros(n, bool)  # the method's top 5 holds hybrid's first chunk
    for i, gold in enumerate(data["gold"]):
        g, h = np.asarray(data["methods"][method][i], np.int64), np.asarray(data["hybrid"][i], np.int64)
        agree[i] = len(set(g[:K].tolist()) & set(h[:K].tolist())) / K
        keeps_first[i] = bool(h.size) and int(h[0]) in set(g[:K].tolist())
        names = [data["link_keys"]["names" if only else "all"][hub][i] for hub, only in variants]
        own = linked_to(data, g[:K].tolist()) if variants else set()
        own_held[i] = [names_held(data, v, own) for v in names]
        for key in keys:
            k0, gain = key
            hk = linked_hybrid(h, np.asarray(data["cover"][i]), gain)
            for j, w in enumerate(W_STEPS):
                fused = fuse_rankings(g, hk, float(w), k0, K)[0].tolist()
                curves[key][i, j] = recall5(fused, doc_of, gold)
                if variants:
                    linked = linked_to(data, fused[:K])
                    held[key][i, j] = [names_held(data, v, linked) for v in names]
    return {"curves": curves, "agree": agree, "keeps_first": keeps_first, "held": held, "own_held": own_held,
            "variants": variants}


def question_recalls(data, cache, s: dict) -> np.ndarray:
    """recall@5 of each question with the guard at settings ``s``."""
    from llama_index_graphrag_suite.methods.guard.fusion import protective_weight
    from llama_index_graphrag_suite.methods.guard.signals import name_trust

    links = np.asarray(data["link_names" if s["names_only"] else "link"][str(s["hub"])])
    raw = s["link_gain"] * links + s["agree_gain"] * cache["agree"]
    trust = name_trust(data["name_density"], s["name_density"])
    cap = protective_weight(s["rrf_k"], K)  # the shipped cap (guard_max_weight unset)
    w = np.where(links > 0, cap * np.clip(raw, 0.0, 1.0) * trust, 0.0)  # as guard.fusion.guard_weight
    steps = len(W_STEPS) - 1
    step = np.minimum(np.rint(w * steps), np.floor(cap * steps + 1e-9)).astype(int)  # as weight_on_grid
    rows = np.arange(len(step))
    if s.get("walk_keeps_first", WALK_KEEPS_FIRST) and data["name_density"] >= NAME_RICH:
        v = cache["variants"].index((str(s["hub"]), bool(s["names_only"])))
        kept = cache["own_held"][:, v] >= cache["held"][curve_key(s)][rows, step, v]  # the walk dropped no name
        step = np.where(cache["keeps_first"] & kept, steps, step)  # the method's own top 5 stands (weight 1)
    return cache["curves"][curve_key(s)][rows, step]


def fused_recall(data, cache, s: dict) -> float:
    return 100.0 * float(question_recalls(data, cache, s).mean())


def paired_interval(a: np.ndarray, b: np.ndarray, draws: int = BOOTSTRAP_DRAWS, seed: int = 0) -> list[float]:
    """90 % bootstrap interval of ``mean(a) - mean(b)`` in points, questions resampled in pairs: how far a
    difference between two settings on one set is from what resampling its questions alone would give."""
    diff = np.asarray(a, np.float64) - np.asarray(b, np.float64)
    rng = np.random.default_rng(seed)
    means = diff[rng.integers(0, diff.size, size=(draws, diff.size))].mean(axis=1)
    return [round(100.0 * float(np.quantile(means, q)), 1) for q in (0.05, 0.95)]


def hybrid_recalls(data) -> np.ndarray:
    return np.asarray([recall5(h, data["doc_of"], g) for h, g in zip(data["hybrid"], data["gold"])])


def hybrid_recall(data) -> float:
    return 100.0 * float(hybrid_recalls(data).mean())


def mean_recall(data, ranks) -> float:
    return 100.0 * float(np.mean([recall5(r, data["doc_of"], g) for r, g in zip(ranks, data["gold"])]))


def own_recall(data, method) -> float:
    return mean_recall(data, data[method] if method in ("dense", "bm25") else data["methods"][method])


def paper_recall(data, method) -> float:
    """recall@5 of the method's paper variant: its own ranking with the guard off, unless ranked apart."""
    ranks = data.get("paper", {}).get(method)
    return own_recall(data, method) if ranks is None else mean_recall(data, ranks)


# The maximum weight is not tuned: it is guard.fusion.protective_weight of rrf_k and K (0.7 at k0 2), the weight at
# which hybrid's first chunk ties the graph's fifth. Until stop 41 it was (0.7, 0.85, 1.0) here: the four sets
# other than 2wiki_retrieval101 picked 1.0, which cost HippoRAG 4.5 points there (76.5 in-sample, 72.0 left out).
# The bias (a constant term of the weight) and the hub cut-off left the grid and the guard's settings with h65B:
# each came out the same in every leave-one-set-out fold (bias 0, hub 0.05), and other values move recall@5 of any
# guarded method by at most one question on the five sets (studies/results/guard_margin.md). "hub" keeps one value,
# the guard's constant, as the key of the link shares rankings.json holds.
GRID = {"link_gain": (1.0, 2.0, 3.0, 4.0), "agree_gain": (0.0, 0.5, 1.0),
        "rrf_k": (2, 5, 10), "hub": (HUB_SHARE,), "names_only": (False, True),
        "cover_gain": (0.0, 0.1, 0.2, 0.35, 0.5), "name_density": (0.0, 12.0, 24.0)}


def signal_examples(args, ds: str, data: dict, s: dict, method: str = "a2rag@5", n: int = 3) -> dict:
    """Questions where the guard (at settings ``s``) beats ``method``'s own ranking and hybrid's, and where it
    loses to either: the question, its signals and weight, and recall@5 of own / hybrid / guarded."""
    from llama_index_graphrag_suite.eval.datasets import load_dataset
    from llama_index_graphrag_suite.methods.guard import GuardConfig, fuse_rankings, guard_weight, linked_hybrid
    from llama_index_graphrag_suite.methods.guard.signals import name_trust

    if method not in data["methods"]:
        return {}
    cfg = GuardConfig(guard_link_gain=s["link_gain"], guard_agree_gain=s["agree_gain"], guard_rrf_k=s["rrf_k"])
    trust = name_trust(data["name_density"], s["name_density"])
    questions = [q.question for q in load_dataset(Path(args.datasets) / ds).questions if q.supporting_ids]
    links = data["link_names" if s["names_only"] else "link"][str(s["hub"])]
    rows = []
    for i, gold in enumerate(data["gold"]):
        g, h = np.asarray(data["methods"][method][i], np.int64), np.asarray(data["hybrid"][i], np.int64)
        agree = len(set(g[:K].tolist()) & set(h[:K].tolist())) / K
        w = guard_weight(links[i], agree, cfg, trust, K)  # the retriever's own arithmetic
        hk = linked_hybrid(h, np.asarray(data["cover"][i]), s["cover_gain"])
        fused = fuse_rankings(g, hk, w, s["rrf_k"], K)[0].tolist()
        own, hyb, guarded = (recall5(r, data["doc_of"], gold) for r in (g.tolist(), h.tolist(), fused))
        rows.append({"question": questions[i] if i < len(questions) else "?", "link": links[i], "agree": agree,
                     "weight": round(w, 3), "own": own, "hybrid": hyb, "guarded": guarded})
    helps = [r for r in rows if r["guarded"] > max(r["own"], r["hybrid"]) or r["guarded"] > r["own"]]
    hurts = [r for r in rows if r["guarded"] < max(r["own"], r["hybrid"])]
    helps.sort(key=lambda r: r["own"] - r["guarded"])
    hurts.sort(key=lambda r: r["guarded"] - max(r["own"], r["hybrid"]))
    return {"method": method, "helps_count": len(helps), "hurts_count": len(hurts), "helps": helps[:n],
            "hurts": hurts[:n]}


# How a setting is picked from the grid. SHIPPED_RULE picks the shipped defaults; the others are reported beside it
# (pick_rules), and rule_choice checks the choice of rule itself by a nested leave-one-dataset-out.
PICK_RULES = {
    "mean": "best mean gain over hybrid",
    "smooth": "best mean of that gain over the setting and its grid neighbours (one step in one parameter)",
    "smooth_min": "best worst gain over the setting and its grid neighbours (a flat optimum)",
    "maximin": "best gain on the worst set (mean gain breaks ties)",
}
# A flat optimum: the objective over five sets of 100 to 1,325 questions is noisy (one question moves a set's
# recall by 0.4 to 1 point), and a setting whose neighbours score as well is less likely to be best by chance. Up
# to stop 36 the defaults were picked by "mean"; "smooth" gave the better left-out figures for every method at
# 0b7ddbb (and fewer gaps at dc6d364). rule_choice re-checks the choice without the set it is measured on: at
# 10fb729 it picks "smooth" in two folds of five (clinical, COVID), "mean" in two (HotpotQA, MuSiQue) and
# "smooth_min" in one (2wiki); at 080ee80 "smooth" in four and "smooth_min" in one; at 1392b7e "smooth" in two
# (clinical, COVID), "mean" in two (2wiki, HotpotQA) and "smooth_min" in one (MuSiQue). No rule wins clearly, and
# "smooth" keeps the best inner left-out gain on the two domain sets, where the guard matters most.
SHIPPED_RULE = "smooth"
GAP_LIMIT = 1.5  # the target: left-out within 1.5 points of in-sample


def grid_neighbours(shape: list[int] | None = None) -> list[np.ndarray]:
    """For each setting of a grid product (in ``itertools.product`` order; ``shape``: the number of values of each
    parameter, the GRID's by default): itself and the settings one step away in one parameter."""
    shape = shape or [len(v) for v in GRID.values()]
    coords = np.array(np.unravel_index(np.arange(int(np.prod(shape))), shape)).T
    out = []
    for c in coords:
        near = [c]
        for d in range(len(shape)):
            for step in (-1, 1):
                if 0 <= c[d] + step < shape[d]:
                    n = c.copy()
                    n[d] += step
                    near.append(n)
        out.append(np.ravel_multi_index(np.array(near).T, shape))
    return out


def rule_scores(gains: dict, sets, methods, rule: str, neighbours) -> np.ndarray:
    """The score of every setting under ``rule``; ``gains[ds, m]``: recall@5 minus hybrid's, per setting. The
    objective is the mean over datasets and methods of the gain, minus FLOOR_PENALTY times every shortfall below
    ``hybrid - 0.5``."""
    per_pair = np.stack([gains[ds, m] for ds in sets for m in methods])
    penalised = (per_pair - FLOOR_PENALTY * np.maximum(0.0, -0.5 - per_pair)).mean(axis=0)
    if rule == "mean":
        return penalised
    if rule == "smooth":
        return np.array([penalised[n].mean() for n in neighbours])
    if rule == "smooth_min":
        return np.array([penalised[n].min() for n in neighbours])
    if rule == "maximin":
        per_set = np.stack([np.mean([gains[ds, m] for m in methods], axis=0) for ds in sets])
        return per_set.min(axis=0) + 1e-3 * penalised
    raise ValueError(rule)


def pick_setting(rule: str, gains: dict, on, group, neighbours) -> int:
    """The index of the setting ``rule`` picks for the methods of ``group`` on the datasets ``on``, among those that
    keep every method at or above ``hybrid - 0.5`` on every set (the issue's floor as a constraint); if none does,
    among all (where the floor is a penalty)."""
    ok = np.all([gains[ds, m] >= -0.5 for ds in on for m in group], axis=0)
    score = rule_scores(gains, on, group, rule, neighbours)
    candidates = np.flatnonzero(ok) if ok.any() else np.arange(len(score))
    return int(candidates[np.argmax(score[candidates])])


def pick_rule_report(recall, gains, keys, sets, groups, hybrid, neighbours) -> dict:
    """For each rule of PICK_RULES: its in-sample and left-out recall@5 per set and method, the pairs whose gap
    exceeds GAP_LIMIT, and the left-out figures below the floor (hybrid - 0.5). The floor stays a constraint."""
    out = {}
    for rule, description in PICK_RULES.items():
        chosen = {tuple(g): pick_setting(rule, gains, sets, g, neighbours) for g in groups}
        rows, gaps, below = {}, [], []
        for ds in sets:
            rest = [d for d in sets if d != ds]
            for g in groups:
                left = pick_setting(rule, gains, rest, g, neighbours)
                for m in g:
                    # as the table shows them (one decimal), so a gap here is the difference of two table cells
                    a, b, h = (round(float(x), 1) for x in (recall[ds, m][chosen[tuple(g)]], recall[ds, m][left],
                                                             hybrid[ds]))
                    rows.setdefault(ds, {})[m] = [a, b]
                    if a - b > GAP_LIMIT:
                        gaps.append([ds, m, round(a - b, 1)])
                    if b < h - 0.5:
                        below.append([ds, m, round(b - h, 1)])
        out[rule] = {"description": description + (" (the rule that picks the shipped defaults)"
                                                   if rule == SHIPPED_RULE else ""),
                     "in_out": rows, "gaps": gaps, "left_out_below_floor": below,
                     "settings": {", ".join(g): json.loads(keys[i]) for g, i in chosen.items()}}
    return out


def rule_choice_report(recall, gains, sets, groups, neighbours) -> dict:
    """The choice of pick rule, checked without the set it is measured on (a nested leave-one-dataset-out). For
    each set: every rule's mean left-out gain over hybrid on the other four (each of them left out in turn, the
    setting picked on the remaining three), the rule that scores best there, and the set's recall@5 at the
    setting that rule picks on the other four. If that rule is SHIPPED_RULE in every fold, the shipped rule was not
    chosen for the set it is measured on."""
    out = {}
    for ds in sets:
        rest = [d for d in sets if d != ds]
        inner = {}
        for rule in PICK_RULES:
            gained = [gains[d, m][pick_setting(rule, gains, [x for x in rest if x != d], g, neighbours)]
                      for d in rest for g in groups for m in g]
            inner[rule] = round(float(np.mean(gained)), 2)
        best = max(inner, key=inner.get)
        left_out = {m: round(float(recall[ds, m][pick_setting(best, gains, rest, g, neighbours)]), 1)
                    for g in groups for m in g}
        out[ds] = {"inner_left_out_gain": inner, "rule": best, "left_out": left_out}
    return out


def tune(args) -> None:
    data = {ds: json.loads((Path(args.work) / args.tag / ds / "rankings.json").read_text()) for ds in args.sets}
    settings = [dict(zip(GRID, v)) for v in itertools.product(*GRID.values())]
    keys = [json.dumps(s, sort_keys=True) for s in settings]
    table: dict = {}
    start = time.perf_counter()
    caches: dict = {}
    for ds in args.sets:
        table[ds] = {"hybrid": hybrid_recall(data[ds])}
        for m in args.methods:
            cache = caches[ds, m] = recall_curves(data[ds], m, sorted({curve_key(s) for s in settings}, key=str))
            table[ds][m] = {"own": own_recall(data[ds], m), "paper": paper_recall(data[ds], m)}
            for s, key in zip(settings, keys):
                table[ds][m][key] = fused_recall(data[ds], cache, s)
    print(f"[tune] {len(settings)} settings in {time.perf_counter() - start:.0f} s", flush=True)
    neighbours = grid_neighbours()
    hybrid = {ds: table[ds]["hybrid"] for ds in args.sets}
    recall = {(ds, m): np.array([table[ds][m][k] for k in keys]) for ds in args.sets for m in args.methods}
    gains = {(ds, m): recall[ds, m] - hybrid[ds] for ds in args.sets for m in args.methods}

    def pick(sets, ms) -> str:
        return keys[pick_setting(SHIPPED_RULE, gains, sets, ms, neighbours)]

    # the methods in OWN_SETTINGS get guard settings chosen on them alone; the others share one choice
    groups = [[m] for m in args.methods if m in OWN_SETTINGS] + [[m for m in args.methods if m not in OWN_SETTINGS]]
    groups = [g for g in groups if g]
    import subprocess

    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True).stdout.strip()
    chosen_all = {tuple(g): pick(args.sets, g) for g in groups}
    report = {"commit": commit, "grid": GRID, "pick_rule": SHIPPED_RULE,
              "in_sample": {", ".join(g): json.loads(k) for g, k in chosen_all.items()}, "left_out": {}, "table": {}}
    setting_of = {m: chosen_all[tuple(g)] for g in groups for m in g}
    shipped_recalls = {(ds, m): question_recalls(data[ds], caches[ds, m], json.loads(setting_of[m]))
                       for ds in args.sets for m in args.methods}
    for ds in args.sets:
        rest = [d for d in args.sets if d != ds]
        chosen = {tuple(g): pick(rest, g) for g in groups}
        report["left_out"][ds] = {", ".join(g): json.loads(k) for g, k in chosen.items()}
        left_out_of = {m: chosen[tuple(g)] for g in groups for m in g}
        checked = Path(args.work) / args.tag / ds / "checked.json"
        shipped = json.loads(checked.read_text()) if checked.exists() else {}
        report["table"][ds] = {"hybrid": round(table[ds]["hybrid"], 1), "questions": len(data[ds]["gold"]),
                               "shipped": shipped,
                               **{b: round(own_recall(data[ds], b), 1) for b in ("dense", "bm25") if b in data[ds]}, **{
            m: {"paper": round(table[ds][m]["paper"], 1), "own": round(table[ds][m]["own"], 1),
                "in_sample": round(table[ds][m][setting_of[m]], 1),
                "left_out": round(table[ds][m][left_out_of[m]], 1),
                # the best any setting of the grid reaches on this set alone: the ceiling of the guard's family
                "best_any": round(max(table[ds][m][k] for k in keys), 1),
                "in_minus_out_90": paired_interval(
                    shipped_recalls[ds, m], question_recalls(data[ds], caches[ds, m], json.loads(left_out_of[m]))),
                "in_minus_hybrid_90": paired_interval(shipped_recalls[ds, m], hybrid_recalls(data[ds]))}
            for m in args.methods}}
    report["pick_rules"] = pick_rule_report(recall, gains, keys, args.sets, groups, hybrid, neighbours)
    report["rule_choice"] = rule_choice_report(recall, gains, args.sets, groups, neighbours)
    example_method = "a2rag@5" if "a2rag@5" in setting_of else args.methods[0]
    report["examples"] = {ds: signal_examples(args, ds, data[ds], json.loads(setting_of[example_method]),
                                              method=example_method) for ds in args.sets}
    report["graphs"] = {}
    for ds in args.sets:
        graph = Path(args.work) / args.tag / ds / "graph.json"
        if graph.exists():
            report["graphs"][ds] = json.loads(graph.read_text())
    print(json.dumps({k: v for k, v in report.items() if k not in ("graphs", "examples", "pick_rules")}, indent=1))
    if args.out:
        Path(args.out).write_text(json.dumps(report, indent=1))


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("steps", nargs="+", choices=("build", "rank", "check", "tune"))
    ap.add_argument("--datasets", default="../shared/datasets")
    ap.add_argument("--work", default="/tmp/gr25")
    ap.add_argument("--tag", default="default", help="names the index variant (extractor settings)")
    ap.add_argument("--index-config", default="{}", help="IndexConfig fields as JSON (default: the defaults)")
    ap.add_argument("--sets", default=",".join(DATASETS))
    ap.add_argument("--methods", default=",".join(METHODS))
    ap.add_argument("--limit", type=int, default=0, help="questions per dataset (0: all with gold)")
    ap.add_argument("--out", default="")
    args = ap.parse_args(argv)
    args.sets = args.sets.split(",")
    args.methods = args.methods.split(",")
    for ds in args.sets:
        if "build" in args.steps:
            build(args, ds)
        if "rank" in args.steps:
            rank(args, ds)
        if "check" in args.steps:
            check(args, ds)
    if "tune" in args.steps:
        tune(args)


if __name__ == "__main__":
    sys.exit(main())
