"""The benchmark scripts that `make bench` runs against the library's evaluation API run end to end on a toy index
(they once fell behind a change of ``eval.bench.run_method`` unnoticed: CI runs the tests, not the benchmarks)."""

from __future__ import annotations

import json
import runpy
import sys
from pathlib import Path

import pytest

from llama_index_graphrag_suite import GraphRAGIndex, IndexConfig
from llama_index_graphrag_suite.documents import make_document
from llama_index_graphrag_suite.embeddings import HashEmbedding

from conftest import CORPUS

BENCHMARKS = Path(__file__).resolve().parents[1] / "benchmarks"


@pytest.fixture(scope="module")
def toy(tmp_path_factory):
    """A saved toy index and its dataset folder (corpus.jsonl, questions.jsonl with gold passages)."""
    root = tmp_path_factory.mktemp("bench")
    docs = [make_document(i, text, title) for i, title, text in CORPUS]
    index = GraphRAGIndex.from_documents(docs, embed_model=HashEmbedding(dim=64),
                                         config=IndexConfig(entities="statistical", entity_threshold=0.1))
    index.persist(root / "index")
    data = root / "toy"
    data.mkdir()
    (data / "corpus.jsonl").write_text("".join(json.dumps({"id": i, "title": t, "text": x}) + "\n"
                                               for i, t, x in CORPUS))
    questions = [("Where was Ada Lorne born?", ["p-ada"]), ("Did Piers Vant hold works by Tomas Brey?", ["p-vant"]),
                 ("Which school did Tomas Brey teach at?", ["p-brey", "p-kell"])]
    (data / "questions.jsonl").write_text("".join(json.dumps({"id": f"q{n}", "question": q, "supporting_ids": g})
                                                  + "\n" for n, (q, g) in enumerate(questions)))
    return root / "index", data


@pytest.mark.parametrize("script", ["tuning.py", "archrag_signal.py"])
def test_a_recall_sweep_runs_and_prints_one_row_per_setting(script, toy, tmp_path, monkeypatch):
    index_dir, data = toy
    out = tmp_path / "out.md"
    monkeypatch.setattr(sys, "argv", [script, "--index-dir", str(index_dir), "--dataset", str(data), "--out", str(out)])
    monkeypatch.syspath_prepend(str(BENCHMARKS))
    module = runpy.run_path(str(BENCHMARKS / script), run_name="__main__")
    expected = len(module["SWEEPS"]) if script == "tuning.py" else len(module["RANKINGS"]) + 2  # + dense, hybrid

    def recall_cells(line: str) -> list[float] | None:  # "| ... | recall@2 | recall@5 | all-gold@5 |"
        cells = [c.strip() for c in line.strip().strip("|").split("|")][-3:]
        try:
            return [float(c) for c in cells]
        except ValueError:
            return None

    recalls = [r for r in map(recall_cells, out.read_text().splitlines()) if r is not None]
    assert len(recalls) >= expected and all(0 <= v <= 100 for r in recalls for v in r)
    assert any(r[1] > 0 for r in recalls)  # the questions name the toy corpus: something is found


def test_the_tuning_simulates_the_guard_as_the_retriever_computes_it():
    """benchmarks/domain_tuning.py picks the guard's defaults from a vectorised simulation of the guard over stored
    rankings; each question's recall there must be what the retriever's own arithmetic (guard_weight, linked_hybrid,
    fuse_rankings) gives, at every setting of the grid's corners (the cap, the weight's rounding and the fusion's
    ties included), in a corpus written in common nouns and in one written in names (where the walk that keeps
    hybrid's first chunk stands)."""
    sys.path.insert(0, str(BENCHMARKS))
    try:
        import domain_tuning as dt
    finally:
        sys.path.remove(str(BENCHMARKS))
    from llama_index_graphrag_suite.extractors.terms import NAME_RICH
    from llama_index_graphrag_suite.methods.guard import GuardConfig
    from llama_index_graphrag_suite.methods.guard.signals import HUB_SHARE

    assert dt.NAME_RICH == NAME_RICH and dt.WALK_KEEPS_FIRST == GuardConfig().guard_walk_keeps_first
    assert dt.GRID["hub"] == (HUB_SHARE,)
    for density in (9.0, 30.0):  # a corpus written in common nouns, and one written in names (the walk's switch)
        _check_simulation(dt, density)


def _check_simulation(dt, density: float) -> None:
    import itertools

    import numpy as np

    from llama_index_graphrag_suite.extractors.terms import NAME_RICH
    from llama_index_graphrag_suite.methods.guard import GuardConfig, fuse_rankings, guard_weight, linked_hybrid
    from llama_index_graphrag_suite.methods.guard.signals import name_trust

    rng = np.random.default_rng(7)
    n, chunks = 40, 80
    data = {"doc_of": [f"d{c // 2}" for c in range(chunks)], "name_density": density,
            "gold": [[f"d{d}" for d in rng.choice(chunks // 2, size=2, replace=False)] for _ in range(n)],
            "hybrid": [rng.permutation(chunks)[:dt.DEPTH].tolist() for _ in range(n)],
            "methods": {"m": []},
            "cover": [np.round(rng.random(dt.DEPTH) * (rng.random(dt.DEPTH) < 0.3), 3).tolist() for _ in range(n)]}
    for h in data["hybrid"]:  # half the walks keep hybrid's first chunk in their top 5 (the switch's question)
        walk = [c for c in rng.permutation(chunks).tolist() if c != h[0]]
        if rng.random() < 0.5:
            walk.insert(int(rng.integers(0, dt.K)), h[0])
        data["methods"]["m"].append(walk[:dt.DEPTH])
    for name in ("link", "link_names"):
        data[name] = {str(h): np.round(rng.random(n) * (rng.random(n) < 0.8), 4).tolist() for h in dt.GRID["hub"]}
    # the entities of each chunk and, per reading of the question, the entities it names (a few of thirty)
    vocabulary = [f"e{v}" for v in range(30)]
    data["chunk_entities"] = {str(c): sorted(rng.choice(vocabulary, size=rng.integers(0, 4), replace=False).tolist())
                              for c in range(chunks)}
    data["link_keys"] = {kind: {str(h): [sorted(rng.choice(vocabulary, size=rng.integers(0, 4), replace=False).tolist())
                                         for _ in range(n)] for h in dt.GRID["hub"]} for kind in ("all", "names")}
    corners = {k: (v[0], v[-1]) for k, v in dt.GRID.items()}
    settings = [dict(zip(corners, v)) for v in itertools.product(*corners.values())][::7]
    cache = dt.recall_curves(data, "m", sorted({dt.curve_key(s) for s in settings}, key=str))
    switched = 0
    for s in settings:
        simulated = dt.question_recalls(data, cache, s)
        cfg = GuardConfig(guard_link_gain=s["link_gain"], guard_agree_gain=s["agree_gain"], guard_rrf_k=s["rrf_k"])
        trust = name_trust(data["name_density"], s["name_density"])
        links = data["link_names" if s["names_only"] else "link"][str(s["hub"])]
        for i, gold in enumerate(data["gold"]):
            g, h = np.asarray(data["methods"]["m"][i]), np.asarray(data["hybrid"][i])
            agree = len(set(g[:dt.K].tolist()) & set(h[:dt.K].tolist())) / dt.K
            w = guard_weight(links[i], agree, cfg, trust, dt.K)
            hk = linked_hybrid(h, np.asarray(data["cover"][i]), s["cover_gain"])
            fused = fuse_rankings(g, hk, w, s["rrf_k"], dt.K)[0]
            keys = data["link_keys"]["names" if s["names_only"] else "all"][str(s["hub"])][i]

            def held(top):  # as guard.signals.names_held
                linked = {e for c in top[:dt.K].tolist() for e in data["chunk_entities"][str(c)]}
                return sum(1 for key in set(keys) if key in linked)

            if cfg.guard_walk_keeps_first and h[0] in g[:dt.K] and density >= NAME_RICH and held(g) >= held(fused):
                switched += 1
                fused = fuse_rankings(g, hk, 1.0, s["rrf_k"], dt.K)[0]  # as HybridGuard.fuse: the walk stands
            assert simulated[i] == dt.recall5(fused.tolist(), data["doc_of"], gold), (s, i)
    assert (switched > 0) == (density >= NAME_RICH)  # the switch was exercised where it may fire


def test_the_report_names_each_sets_run_and_what_the_reader_must_know_of_it(tmp_path):
    """BENCHMARKS.md is written from the results files alone: a set's section says at which commit it ran, and the
    run's own note (``run_note``: the run shared the cores with another job) stands beside it; a file without a note
    gets none."""
    results = tmp_path / "results"
    results.mkdir()
    shipped = json.loads((BENCHMARKS / "results" / "sherlock_holmes_check.json").read_text(encoding="utf-8"))
    noted = {**shipped, "commit": "abc1234", "run_note": "It ran beside another job."}
    (results / "sherlock_holmes_check.json").write_text(json.dumps(noted), encoding="utf-8")
    plain = {**shipped, "dataset": "hotpotqa_train100", "commit": "def5678"}
    plain.pop("run_note", None)
    (results / "hotpotqa_train100.json").write_text(json.dumps(plain), encoding="utf-8")
    statistical = json.loads((BENCHMARKS / "results" / "hotpotqa_train100-statistical.json")
                             .read_text(encoding="utf-8"))
    statistical = {**statistical, "commit": "fed9876", "run_note": "It shared the cores."}
    (results / "hotpotqa_train100-statistical.json").write_text(json.dumps(statistical), encoding="utf-8")
    out = tmp_path / "BENCHMARKS.md"
    report = runpy.run_path(str(BENCHMARKS / "report.py"))
    report["main"].__globals__["plot"] = lambda *args: None  # the figures need matplotlib (the bench extra), not CI
    old_argv = sys.argv
    sys.argv = ["report.py", "--results", str(results), "--out", str(out)]
    try:
        report["main"]()
    finally:
        sys.argv = old_argv
    text = out.read_text(encoding="utf-8")
    assert "Run at commit abc1234. It ran beside another job." in text
    section = text.split("## hotpotqa_train100", 1)[1].split("\n## ", 1)[0]
    assert "Run at commit def5678.\n" in section and "beside" not in section
    # the statistical graph's run, of another commit, says so, and its own note stands beside it
    assert "(def5678 above, fed9876 for the statistical graph)" in section
    assert "Of the statistical run: it shared the cores." in section
    # the retriever a user already has is a row of the summary and of each set's table, beside our own hybrid
    summary = text.split("## recall@5 on every set", 1)[1].split("\n## ", 1)[0]
    assert "| `hybrid` |" in summary and "| `llamaindex_hybrid` |" in summary


def test_the_switch_probe_finds_a_signal_that_tells_the_rankings_apart_and_nothing_in_noise():
    """rerank_probes.switch_ceiling bounds what any per-question choice between hybrid and a method's own ranking
    can reach on the guard's signals. Where one signal says which ranking finds the gold, the tree fit on the set
    reaches the oracle, and so does the cross-validated one; where the signals are noise, in-sample it may gain a
    little (it fits the noise), cross-validated it gains nothing to speak of."""
    import numpy as np

    sys.path.insert(0, str(BENCHMARKS))
    try:
        import rerank_probes as rp
    finally:
        sys.path.remove(str(BENCHMARKS))
    rng = np.random.default_rng(3)
    n = 400
    graph_wins = rng.random(n) < 0.4
    doc_of = [f"d{i}" for i in range(40)]
    hybrid = [[0, 1, 2, 3, 4]] * n
    own = [[5, 6, 7, 8, 9]] * n
    gold = [["d5"] if win else ["d0"] for win in graph_wins]  # exactly one of the two rankings finds it

    def data(link: np.ndarray) -> dict:
        rules = {"0.05": link.round(4).tolist()}
        return {"doc_of": doc_of, "gold": gold, "hybrid": hybrid, "dense": hybrid, "bm25": hybrid,
                "methods": {"a2rag@5": own}, "link": rules, "link_names": rules, "cover": [[0.0] * 5] * n}

    oracle, hybrid_alone = 1.0, 1.0 - graph_wins.mean()
    telling = rp.switch_ceiling(data(np.where(graph_wins, 0.8, 0.2) + rng.normal(0, 0.05, n)))
    assert float(np.mean(telling["switch, depth 1, in-sample"])) == oracle
    assert float(np.mean(telling["switch, depth 1, 5-fold"])) >= oracle - 0.01
    noise = rp.switch_ceiling(data(rng.random(n)))
    assert float(np.mean(noise["switch, depth 4, 5-fold"])) <= hybrid_alone + 0.05
    assert all(float(np.mean(v)) <= oracle for v in noise.values())


def test_sweep_lodo_reads_tuning_tables_and_shows_a_gain_only_its_own_set_predicts(tmp_path, capsys):
    """benchmarks/sweep_lodo.py picks a method's two-parameter setting by leave-one-dataset-out from tuning.py's
    tables. A setting that wins only on one set is picked in-sample, but not with that set left out: the left-out
    figure there is the other sets' choice, and the gap shows."""
    def table(name: str, hybrid: float, rows: dict[str, float]) -> str:
        lines = [f"## Tuning sweeps on `{name}` (10 questions, LLM-free)", "",
                 "| method | setting | recall@2 | recall@5 | all-gold@5 |", "|---|---|---:|---:|---:|",
                 f"| hybrid | baseline | 1.0 | {hybrid} | 1.0 |"]
        lines += [f"| m | {label} | 1.0 | {value} | 1.0 |" for label, value in rows.items()]
        return "\n".join(lines) + "\n"

    def rows(default: float, lonely: float) -> dict[str, float]:
        return {"default: a 1, b 1": default, "a 0, b 1": lonely, "a 1, b 2": default - 1, "a 0, b 2": lonely - 1}

    path = tmp_path / "tuning.txt"
    path.write_text(table("one", 50.0, rows(52.0, 70.0)) + table("two", 50.0, rows(52.0, 51.0))
                    + table("three", 50.0, rows(52.0, 51.0)), encoding="utf-8")
    old_argv = sys.argv
    sys.argv = ["sweep_lodo.py", "--tables", str(path), "--method", "m", "--params", "a,b", "--default", "a 1, b 1"]
    try:
        runpy.run_path(str(BENCHMARKS / "sweep_lodo.py"), run_name="__main__")
    finally:
        sys.argv = old_argv
    out = capsys.readouterr().out
    mean = out.split("**mean**", 1)[1].split("**smooth**", 1)[0]
    assert "in-sample pick a 0, b 1" in mean  # (20 + 1 + 1) / 3 beats the default's 2
    assert "| one | a 1, b 1 | 52.0 | 70.0 | +18.0 | 50.0 |" in mean  # the other two sets pick the default
    assert "| two | a 0, b 1 | 51.0 | 51.0 | +0.0 | 50.0 |" in mean
    assert "| a 1, b 1 (default) | +2.0 | +2.0 | +2.0 |" in out


def test_guard_top_k_picks_the_power_that_keeps_every_method_above_the_floor_then_the_best_gain():
    """benchmarks/guard_top_k.py: a power under which a method falls below hybrid − 0.5 at a small top_k loses to one
    that keeps the floor, whatever its mean gain; among powers that keep it, the best mean gain; each group of
    methods (A2RAG, the other four) picks its own, and leaving a set out can change the pick."""
    sys.path.insert(0, str(BENCHMARKS))
    try:
        import guard_top_k as gt
    finally:
        sys.path.remove(str(BENCHMARKS))

    def cell(by_power):  # recall@k per power; powers not named score as power 0
        return {p: by_power.get(p, by_power[0.0]) for p in gt.POWERS}

    table = {
        # power 0 gains most here but drops hipporag 2 points below hybrid at k 2
        "a": {2: {"hybrid": 50.0, "methods": {"hipporag": cell({0.0: 48.0, 2.0: 50.0, 3.0: 49.8}),
                                              "a2rag": cell({0.0: 60.0, 2.0: 52.0})}},
              3: {"hybrid": 60.0, "methods": {"hipporag": cell({0.0: 66.0, 2.0: 62.0, 3.0: 61.0}),
                                              "a2rag": cell({0.0: 70.0, 2.0: 61.0})}}},
        "b": {2: {"hybrid": 40.0, "methods": {"hipporag": cell({0.0: 44.0, 2.0: 41.0, 3.0: 40.5}),
                                              "a2rag": cell({0.0: 45.0})}},
              3: {"hybrid": 45.0, "methods": {"hipporag": cell({0.0: 50.0, 2.0: 46.0, 3.0: 45.5}),
                                              "a2rag": cell({0.0: 50.0})}}},
    }
    four, a2rag = gt.GROUPS["hipporag, agrag, pathrag, archrag"], gt.GROUPS["a2rag"]
    assert gt.score(table, ["a", "b"], four, 0.0)[0] == -1.5  # 48 against a floor of 49.5
    assert gt.pick(table, ["a", "b"], four) == 2.0  # keeps the floor with the best mean gain (3 keeps it too)
    assert gt.pick(table, ["b"], four) == 0.0  # set "a" left out: nothing falls short, the best gain wins
    assert gt.pick(table, ["a", "b"], a2rag) == 0.0  # A2RAG's own pick, from its own figures


def test_graph_headroom_counts_how_often_the_chunk_a_method_brings_in_is_gold(tmp_path, capsys):
    """benchmarks/graph_headroom.py: the method's best chunk outside hybrid's top 5 (by passage, not by chunk),
    where hybrid ranks it, whether it is gold, and recall@5 when it replaces hybrid's 5th; the oracle keeps the
    better of the two per question."""
    sys.path.insert(0, str(BENCHMARKS))
    try:
        import graph_headroom as gh
    finally:
        sys.path.remove(str(BENCHMARKS))

    # chunks 0..29, two chunks per passage: chunk c belongs to passage c // 2
    doc_of = [f"p{c // 2}" for c in range(30)]
    hybrid = [[0, 2, 4, 6, 8, 10, 12, 14], [0, 2, 4, 6, 8, 10, 12, 14]]
    # question 0: chunk 1 shares chunk 0's passage (so it is not "outside"); 12 (hybrid rank 6) is gold
    # question 1: its first outside chunk, 28, is not in hybrid's list (rank > 20) and is not gold; 8 (#5) is gold
    own = [[1, 12, 0], [28, 0]]
    data = {"doc_of": doc_of, "hybrid": hybrid, "gold": [["p0", "p6"], ["p4"]], "methods": {"m": own}}
    assert gh.first_outside(own[0], hybrid[0], doc_of) == (12, 6)
    assert gh.first_outside(own[1], hybrid[1], doc_of) == (28, None)
    assert gh.first_outside([0, 2], hybrid[0], doc_of) == (None, None)
    row = gh.headroom(data, "m")
    assert row["hybrid_at"] == {4: 0.0, 5: 0.5}  # hybrid's 5th chunk (8, passage p4) is gold for question 1
    assert row["outside"] == 0.5
    assert row["buckets"]["6-10"] == (1.0, 1) and row["buckets"][">20"] == (0.0, 1)
    assert row["buckets"]["11-20"][1] == 0
    # hybrid: q0 finds p0 of {p0, p6}, q1 finds p4; swapping the 5th brings p6 to q0 and loses p4 for q1
    assert row["recall"] == {"hybrid": 0.75, "swap": 0.5, "oracle": 1.0}

    work = tmp_path / "w" / "t" / "set"
    work.mkdir(parents=True)
    (work / "rankings.json").write_text(json.dumps({**data, "methods": {"a2rag@5": own}}))
    gh.main(["--work", str(tmp_path / "w"), "--tag", "t", "--sets", "set"])
    out = capsys.readouterr().out
    assert "| set | a2rag@5 | 0.0 | 50.0 | 50.0 | 100.0 (1) | - (0) | 0.0 (1) | 75.0 | 50.0 | 100.0 |" in out


def test_sentence_probe_scores_a_chunk_by_its_best_sentence_and_reproduces_hybrid(toy, tmp_path, monkeypatch):
    """sentence_probe.py: a chunk's score is its best sentence's cosine (not the mean of its sentences); its hybrid
    row is the bench's hybrid recall on the same index."""
    import numpy as np

    from llama_index_graphrag_suite.eval.bench import run_method
    from llama_index_graphrag_suite.eval.datasets import load_dataset
    from llama_index_graphrag_suite.registry import resolve_method

    monkeypatch.syspath_prepend(str(BENCHMARKS))
    import sentence_probe as probe

    sentences, owner = probe.chunk_sentences(["Ada was born in Lisbon. She taught there.", "No break here", ""])
    assert sentences == ["Ada was born in Lisbon.", "She taught there.", "No break here", ""]
    assert owner.tolist() == [0, 0, 1, 2]
    sentence_vecs = np.array([[1, 0], [0, 1], [0.6, 0.8], [0.8, 0.6]], np.float32)
    best = probe.best_sentence_scores(np.array([[0, 1], [1, 0]], np.float32), sentence_vecs, owner, 3)
    assert np.allclose(best, [[1.0, 0.8, 0.6], [1.0, 0.6, 0.8]])  # chunk 0 holds a perfect sentence for each

    index_dir, data = toy
    embed = HashEmbedding(dim=64)
    index = GraphRAGIndex.load(index_dir, embed_model=embed, show_progress=False)
    questions = load_dataset(data).questions
    folder = tmp_path / "work" / "toy"
    folder.mkdir(parents=True)
    (folder / "index").symlink_to(index_dir, target_is_directory=True)
    (folder / "rankings.json").write_text(json.dumps({
        "doc_of": [index.chunks[c].doc_id for c in index.chunk_order],
        "gold": [list(q.supporting_ids) for q in questions]}))
    lines = probe.probe(tmp_path / "work", "toy", [q.question for q in questions], model=embed)
    rows = {line.split("|")[1].strip(): float(line.split("|")[3]) for line in lines if line.startswith("| ")
            and not line.startswith("| ranking")}
    assert list(rows) == ["hybrid", "dense", "bm25", "best sentence", "dense + best sentence, then hybrid",
                          "three-way"]
    bench = run_method(index, load_dataset(data), resolve_method("hybrid"), show_progress=False)
    assert rows["hybrid"] == pytest.approx(100 * bench["recall@5"], abs=0.05)


def test_the_multihop_probe_picks_a_switch_on_the_other_sets_and_names_ties():
    """multihop_signal.leave_one_set_out: the signal that switches to a method's own ranking where it is better wins
    over one that also switches where it is worse (and falls below the own ranking - 0.5); two signals equal on the
    other sets are both named (the pick between them would be arbitrary)."""
    sys.path.insert(0, str(BENCHMARKS))
    try:
        import multihop_signal as ms
    finally:
        sys.path.remove(str(BENCHMARKS))
    guard, own = [1.0, 0.0, 0.0, 1.0], [0.0, 1.0, 1.0, 1.0]

    def method(safe, risky):
        return {"safe": safe, "safe_too": safe, "risky": risky, "_r": {"guard": guard, "own": own, "hybrid": guard}}

    # "safe" switches to the own ranking where it is better; "risky" where it is worse
    dump = {name: {"m1": method([0, 1, 1, 0], [1, 0, 0, 0]), "m2": method([0, 1, 1, 0], [1, 1, 0, 0])}
            for name in ("2wiki_retrieval101", "hotpotqa_train100")}
    lines = ms.leave_one_set_out(dump, list(dump))
    picked = [line for line in lines if line.startswith("- ")]
    assert len(picked) == 4 and all("(tied)" in line for line in picked)
    assert {line.split("`")[1] for line in picked} == {"safe", "safe_too"}
    assert "m1 100.0 (own 75.0, guard 50.0)" in picked[0]
