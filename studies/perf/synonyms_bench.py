"""Synonym search (AGRAG Eq. 5) exact vs approximate: time and recall of the exact pairs on entity-name vectors.

    python benchmarks/synonyms_bench.py --sizes 20000,50000 --embed minilm,hash
    python benchmarks/synonyms_bench.py --sizes 100000 --embed minilm     # sizes accumulate in synonyms.json
    python benchmarks/synonyms_bench.py --sweep 100000 --embed minilm,hash # nprobe against recall

The names are real index entities: the statistical extractor's entities of a synthetic encyclopedia of
``--passages`` passages (benchmarks/synth.py, seed 0; 125,000 passages give 204,008 entities), taken from a
GraphRAGIndex built LLM-free with the hash embedder and its synonym search switched off. Their vectors are
the bundled all-MiniLM-L6-v2 (``minilm``) and the package's ``hash`` embedding of the entity names, what
the index embeds. Names, vectors and exact answers are cached in ``--cache`` (the build takes ~4 min and the
MiniLM embedding ~6 min on 2 cores; the exact search at 200,000 rows ~10 min). A size below the entity count
is a seeded random sample of the entities.

Per size: ``synonym_pairs`` forced exact (IndexFlatIP) and forced approximate (IVF, graph/synonyms.py), wall
and CPU seconds, the pairs each finds, recall = share of the exact pairs the approximate search finds, and
subset = share of the approximate pairs that are exact pairs. The IVF build (k-means + add) is timed on its
own as well. Also: the same approximate search twice gives the same pairs (determinism), and an insert's
search (1 % new rows against all; below the threshold, so exact) at the largest size. Rows accumulate in
``benchmarks/results/synonyms.json``; ``synonyms.md`` is rendered from it.
"""

from __future__ import annotations

import argparse
import json
import math
import shlex
import sys
import time
from datetime import datetime, timezone
from pathlib import Path

import faiss
import numpy as np

HERE = Path(__file__).resolve().parent
RESULTS = HERE / "results"
THRESHOLD, MAX_PER_NODE, MIN_CHARS = 0.8, 100, 3  # IndexConfig's defaults


# -- the names and their vectors ---------------------------------------------------------------------------
def entity_names(cache: Path, passages: int) -> dict:
    """``{"ids", "surfaces"}`` of the entities of the synthetic corpus; hash vectors saved beside them."""
    names = cache / f"names-{passages}.json"
    if names.is_file():
        return json.loads(names.read_text())
    sys.path.insert(0, str(HERE))
    import synth
    from llama_index_graphrag_suite.config import IndexConfig
    from llama_index_graphrag_suite.eval.datasets import load_dataset
    from llama_index_graphrag_suite.index import rows
    from llama_index_graphrag_suite.index.graph_index import GraphRAGIndex

    corpus = cache / f"synth-{passages}"
    if not (corpus / "corpus.jsonl").is_file():
        synth.write(corpus, passages)
    empty = (np.empty(0, np.int64), np.empty(0, np.int64), np.empty(0, np.float32))
    real = rows.synonym_pairs
    rows.synonym_pairs = lambda *a, **k: empty  # only the entities are wanted here
    try:
        start = time.perf_counter()
        index = GraphRAGIndex.from_documents(load_dataset(corpus).documents, embed_model="hash",
                                             config=IndexConfig(entities="statistical"))
        print(f"built the entity table in {time.perf_counter() - start:.0f} s", flush=True)
    finally:
        rows.synonym_pairs = real
    ids = list(index.entity_vectors.ids)
    np.save(cache / f"hash-{passages}.npy", index.entity_vectors.vectors().astype(np.float32))
    data = {"ids": ids, "surfaces": [index.entities[k].surface for k in ids]}
    names.write_text(json.dumps(data))
    return data


def entity_vectors(cache: Path, passages: int, embed: str, names: dict) -> np.ndarray:
    path = cache / f"{embed}-{passages}.npy"
    if not path.is_file():
        if embed != "minilm":
            raise SystemExit(f"{path} missing (written with the names)")
        from llama_index_graphrag_suite.embeddings import resolve_embed_model

        model, surfaces = resolve_embed_model(None), names["surfaces"]
        order = sorted(range(len(surfaces)), key=lambda i: len(surfaces[i]))  # as the index batches them
        out = np.empty((len(surfaces), 384), np.float32)
        start = time.perf_counter()
        for b in range(0, len(order), 8192):
            part = order[b:b + 8192]
            out[part] = np.asarray(model.get_text_embedding_batch([surfaces[i] for i in part]), np.float32)
        print(f"embedded {len(surfaces)} names in {time.perf_counter() - start:.0f} s", flush=True)
        np.save(path, out)
    return np.load(path)


def sample(total: int, size: int) -> np.ndarray:
    return np.arange(total) if size >= total else np.sort(np.random.default_rng(0).choice(total, size, replace=False))


# -- measuring ---------------------------------------------------------------------------------------------
def timed(fn, *args, **kwargs):
    wall, cpu = time.perf_counter(), time.process_time()
    out = fn(*args, **kwargs)
    return out, round(time.perf_counter() - wall, 2), round(time.process_time() - cpu, 2)


def pair_ids(pairs, n: int) -> np.ndarray:
    return np.unique(pairs[0].astype(np.int64) * n + pairs[1])


def exact_pairs(cache: Path, key: str, vectors, eligible) -> tuple[np.ndarray, float, float]:
    """The exact pair ids (cached, with the time they took)."""
    from llama_index_graphrag_suite.graph.synonyms import synonym_pairs

    path = cache / f"exact-{key}.npz"
    if path.is_file():
        saved = np.load(path)
        return saved["ids"], float(saved["wall"]), float(saved["cpu"])
    pairs, wall, cpu = timed(synonym_pairs, vectors, THRESHOLD, MAX_PER_NODE, eligible=eligible, approx_rows=0)
    ids = pair_ids(pairs, len(vectors))
    np.savez(path, ids=ids, wall=wall, cpu=cpu)
    return ids, wall, cpu


def measure(cache: Path, passages: int, embed: str, size: int, names: dict) -> dict:
    from llama_index_graphrag_suite.graph import synonyms

    full = entity_vectors(cache, passages, embed, names)
    rows = sample(len(full), size)
    vectors = np.ascontiguousarray(full[rows])
    n = len(vectors)
    eligible = np.array([sum(ch.isalnum() for ch in names["ids"][r]) >= MIN_CHARS for r in rows])
    exact, exact_wall, exact_cpu = exact_pairs(cache, f"{embed}-{passages}-{n}", vectors, eligible)
    print(f"{embed} {n}: exact {exact_wall} s, {exact.size} pairs", flush=True)
    _, build_wall, build_cpu = timed(synonyms.ivf_index, vectors)
    approx, wall, cpu = timed(synonyms.synonym_pairs, vectors, THRESHOLD, MAX_PER_NODE, eligible=eligible, approx_rows=1)
    found = pair_ids(approx, n)
    both = np.intersect1d(exact, found, assume_unique=True).size
    extra = np.setdiff1d(found, exact, assume_unique=True)  # approximate pairs that are not exact pairs: why?
    lo, hi = extra // n, extra % n
    ends = np.unique(np.concatenate([lo, hi]))
    flat = faiss.IndexFlatIP(vectors.shape[1])
    flat.add(vectors)
    full_rows = dict(zip(ends.tolist(), (flat.search(vectors[ends], MAX_PER_NODE + 2)[0] > THRESHOLD).sum(1) > MAX_PER_NODE))
    saturated = sum(full_rows[a] or full_rows[b] for a, b in zip(lo.tolist(), hi.tolist()))
    at_threshold = int((np.einsum("ij,ij->i", vectors[lo], vectors[hi]) <= THRESHOLD + 1e-6).sum())
    again = synonyms.synonym_pairs(vectors, THRESHOLD, MAX_PER_NODE, eligible=eligible, approx_rows=1)
    same = all(np.array_equal(a, b) for a, b in zip(approx, again))
    new = np.sort(np.random.default_rng(1).choice(n, max(1, n // 100), replace=False))  # an insert's 1 %
    (_, ins_wall, ins_cpu) = timed(synonyms.synonym_pairs, vectors, THRESHOLD, MAX_PER_NODE, new, eligible)
    row = {"embed": embed, "n": n, "dim": int(vectors.shape[1]), "exact_pairs": int(exact.size),
           "exact_wall": exact_wall, "exact_cpu": exact_cpu, "nlist": int(round(4 * math.sqrt(n))),
           "nprobe": synonyms.IVF_NPROBE, "build_wall": build_wall, "build_cpu": build_cpu,
           "approx_wall": wall, "approx_cpu": cpu, "approx_pairs": int(found.size),
           "recall": round(both / max(exact.size, 1), 5), "subset": round(both / max(found.size, 1), 5),
           "extra": int(extra.size), "extra_saturated": int(saturated), "extra_at_threshold": at_threshold,
           "deterministic": bool(same), "insert_rows": int(new.size), "insert_wall": ins_wall, "insert_cpu": ins_cpu,
           "date": datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC")}
    print(json.dumps(row), flush=True)
    return row


def sweep(cache: Path, passages: int, embed: str, size: int, names: dict, probes: list[int]) -> list[dict]:
    """One IVF index, searched with each nprobe: time of the search and recall of the exact pairs."""
    from llama_index_graphrag_suite.graph import synonyms

    full = entity_vectors(cache, passages, embed, names)
    rows = sample(len(full), size)
    vectors = np.ascontiguousarray(full[rows])
    n = len(vectors)
    eligible = np.array([sum(ch.isalnum() for ch in names["ids"][r]) >= MIN_CHARS for r in rows])
    exact, _, _ = exact_pairs(cache, f"{embed}-{passages}-{n}", vectors, eligible)
    index = synonyms.ivf_index(vectors)
    out = []
    for nprobe in probes:
        index.nprobe = nprobe
        found, wall, cpu = timed(synonyms.search_neighbours, index, vectors, np.flatnonzero(eligible),
                                 min(n, MAX_PER_NODE + 1), THRESHOLD, eligible)
        ids = pair_ids((np.minimum(found[0], found[1]), np.maximum(found[0], found[1])), n)
        both = np.intersect1d(exact, ids, assume_unique=True).size
        out.append({"embed": embed, "n": n, "nprobe": nprobe, "search_wall": wall, "search_cpu": cpu,
                    "recall": round(both / max(exact.size, 1), 5), "subset": round(both / max(ids.size, 1), 5)})
        print(json.dumps(out[-1]), flush=True)
    return out


# -- the report --------------------------------------------------------------------------------------------
def slope(points: list[tuple[float, float]]) -> float | None:
    points = [(math.log(x), math.log(y)) for x, y in points if x > 0 and y > 0]
    if len({x for x, _ in points}) < 2:
        return None
    mx, my = sum(x for x, _ in points) / len(points), sum(y for _, y in points) / len(points)
    return sum((x - mx) * (y - my) for x, y in points) / sum((x - mx) ** 2 for x, _ in points)


def render(data: dict) -> str:
    from llama_index_graphrag_suite.graph import synonyms

    lines = ["# Synonym search: exact against approximate", "",
             "Generated by `benchmarks/synonyms_bench.py` (commands below). `synonym_pairs` (graph/synonyms.py) on "
             "entity-name vectors: the 204,008 statistical-extractor entities of the 125,000-passage synthetic "
             "encyclopedia (benchmarks/synth.py, seed 0), or a seeded random sample of them; vectors of the bundled "
             "all-MiniLM-L6-v2 (384-d) and of the package's hash embedding (256-d). φ = 0.8, at most 100 neighbours "
             "per entity, names of fewer than 3 letters/digits excluded, as the index does. Exact = `IndexFlatIP` "
             f"kNN of every row; approximate = `IndexIVFFlat`, nlist = 4·√n, nprobe = {synonyms.IVF_NPROBE}, spherical "
             f"k-means ({synonyms.IVF_NITER} iterations, seed {synonyms.IVF_SEED}) on {synonyms.IVF_TRAIN_PER_LIST} "
             "sampled rows per list. Recall = share of the exact pairs the approximate search finds; subset = share "
             "of its pairs that are exact pairs. CPU ratio = exact CPU s / approximate CPU s. Build = k-means + adding the "
             "rows (part of the approximate time). "
             "Insert = an insert's search, 1 % of the rows as new entities against all (fewer query rows than "
             f"the threshold of {synonyms.APPROX_MIN_ROWS:,}, so exact). An exact answer and its time are measured once "
             "per embedding and row count and cached (`--cache`), so a later command reuses them.", "",
             f"Machine: {data.get('machine', '?')}. {data.get('note', '')}", "", "Commands:", ""]
    lines += [f"    {c}" for c in data.get("commands", [])]
    lines += ["", "| embed | rows | exact pairs | exact s (CPU s) | approx s (CPU s) | of which build s | approx pairs "
              "| recall % | subset % | CPU ratio | same twice | insert: rows, s |",
              "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|---|"]
    rows = sorted(data.get("rows", {}).values(), key=lambda r: (r["embed"] != "minilm", r["n"]))
    for r in rows:
        lines.append(f"| {r['embed']} | {r['n']:,} | {r['exact_pairs']:,} | {r['exact_wall']} ({r['exact_cpu']}) | "
                     f"{r['approx_wall']} ({r['approx_cpu']}) | {r['build_wall']} | {r['approx_pairs']:,} | "
                     f"{100 * r['recall']:.2f} | {100 * r['subset']:.3f} | {r['exact_cpu'] / max(r['approx_cpu'], 1e-3):.1f}x | "
                     f"{'yes' if r['deterministic'] else 'NO'} | {r['insert_rows']:,}, {r['insert_wall']} |")
    lines += ["", "Growth exponent (least-squares log-log slope of CPU seconds over the rows above; 2 = quadratic):", ""]
    for embed in sorted({r["embed"] for r in rows}):
        mine = [r for r in rows if r["embed"] == embed]
        e, a = slope([(r["n"], r["exact_cpu"]) for r in mine]), slope([(r["n"], r["approx_cpu"]) for r in mine])
        fmt = lambda s: "n/a" if s is None else f"{s:.2f}"  # noqa: E731
        sizes = ", ".join(f"{r['n']:,}" for r in mine)
        lines.append(f"- {embed}: exact {fmt(e)}, approximate {fmt(a)} (rows {sizes})")
    if data.get("sweep"):
        lines += ["", "nprobe against recall (one IVF index per row count, the search alone timed):", "",
                  "| embed | rows | nprobe | search s (CPU s) | recall % | subset % |", "|---|---:|---:|---:|---:|---:|"]
        for s in sorted(data["sweep"].values(), key=lambda s: (s["embed"] != "minilm", s["n"], s["nprobe"])):
            lines.append(f"| {s['embed']} | {s['n']:,} | {s['nprobe']} | {s['search_wall']} ({s['search_cpu']}) | "
                         f"{100 * s['recall']:.2f} | {100 * s['subset']:.3f} |")
    lines += ["", "## Reading the numbers", ""] + reading(data, rows)
    return "\n".join(lines) + "\n"


def reading(data: dict, rows: list[dict]) -> list[str]:
    """What the table says, from its own numbers."""
    from llama_index_graphrag_suite.graph import synonyms

    out = []
    for embed in sorted({r["embed"] for r in rows}):
        mine = [r for r in rows if r["embed"] == embed]
        top = max(mine, key=lambda r: r["n"])
        low = min(mine, key=lambda r: r["recall"])
        sub = min(mine, key=lambda r: r["subset"])
        out.append(f"- {embed}: at {top['n']:,} rows the approximate search takes {top['approx_cpu']} CPU s against "
                   f"{top['exact_cpu']} exact ({top['exact_cpu'] / max(top['approx_cpu'], 1e-3):.1f}x less CPU); its "
                   f"recall is at least {100 * low['recall']:.2f} % (at {low['n']:,} rows) and at least "
                   f"{100 * sub['subset']:.3f} % of its pairs are exact pairs.")
    out += ["", f"Exact below {synonyms.APPROX_MIN_ROWS:,} query rows (`APPROX_MIN_ROWS`, or the environment variable "
            f"`{synonyms.APPROX_ENV}`): there the exact search costs a few CPU seconds at most, so the saving is not "
            "worth inexact pairs."]
    extra = sum(r.get("extra", 0) for r in rows)
    if extra:
        saturated = sum(r.get("extra_saturated", 0) for r in rows)
        edge = sum(r.get("extra_at_threshold", 0) for r in rows)
        out += ["", f"Of the {extra:,} approximate pairs (all rows of the table) that are not exact pairs, {saturated:,} "
                "have an end with more than 100 neighbours above φ: the approximate search missed one of its nearer "
                f"neighbours, so a farther one got into its 100; {edge:,} lie within 1e-6 of φ, where the two "
                "searches round the cosine differently (a pair can be both)."]
    hashed = [r for r in rows if r["embed"] == "hash"]
    if data.get("hash_distinct") and hashed:
        top = max(hashed, key=lambda r: r["n"])
        out += ["", f"The hash vectors of the {data['hash_distinct'][1]:,} entities hold only "
                f"{data['hash_distinct'][0]:,} distinct vectors: a one-word name is a one-hot hash vector, so "
                "unrelated one-word names share a vector (cosine 1.0). Hence the hash embedding's many more synonym "
                f"pairs: at {top['n']:,} rows an entity has {2 * top['exact_pairs'] / top['n']:.0f} synonym edges on "
                "average, and the pair count grows about with n² until rows reach the cap of 100, whichever search "
                "finds them."]
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sizes", default="", help="entity rows, comma-separated (e.g. 20000,50000,100000,200000)")
    ap.add_argument("--embed", default="minilm,hash", help="minilm and/or hash")
    ap.add_argument("--sweep", type=int, default=0, help="rows for an nprobe sweep (0: none)")
    ap.add_argument("--probes", default="4,8,16,32")
    ap.add_argument("--passages", type=int, default=125_000, help="synthetic passages the entities come from")
    ap.add_argument("--cache", default="/tmp/syn")
    ap.add_argument("--note", default="The machine (2 cores) was shared with other jobs during the run, so wall "
                    "times are noisy; CPU times less so.")
    ap.add_argument("--render-only", action="store_true")
    args = ap.parse_args()
    from llama_index_graphrag_suite.eval.bench import machine_description

    cache = Path(args.cache)
    cache.mkdir(parents=True, exist_ok=True)
    store = RESULTS / "synonyms.json"
    data = json.loads(store.read_text()) if store.is_file() else {}
    if not args.render_only:
        names = entity_names(cache, args.passages)
        hashed = np.load(cache / f"hash-{args.passages}.npy")
        data["hash_distinct"] = [int(np.unique(hashed, axis=0).shape[0]), int(hashed.shape[0])]
        command = "python benchmarks/synonyms_bench.py " + shlex.join(a for a in sys.argv[1:] if a != "--render-only")
        data.setdefault("commands", [])
        if command not in data["commands"]:
            data["commands"].append(command)
        data["machine"], data["note"] = machine_description(), args.note
        for embed in [e for e in args.embed.split(",") if e]:
            for size in [int(s) for s in args.sizes.split(",") if s]:
                row = measure(cache, args.passages, embed, size, names)
                data.setdefault("rows", {})[f"{embed}/{row['n']}"] = row
                store.write_text(json.dumps(data, indent=1) + "\n")
            if args.sweep:
                for s in sweep(cache, args.passages, embed, args.sweep, names, [int(p) for p in args.probes.split(",")]):
                    data.setdefault("sweep", {})[f"{embed}/{s['n']}/{s['nprobe']}"] = s
                store.write_text(json.dumps(data, indent=1) + "\n")
    (RESULTS / "synonyms.md").write_text(render(data))
    print(render(data))


if __name__ == "__main__":
    main()
