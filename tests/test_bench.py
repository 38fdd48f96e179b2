"""The bench end to end on a tiny fixture dataset with the hashing embedding."""

import json
from pathlib import Path

import pytest

from llama_index_graphrag_suite.cli import main
from llama_index_graphrag_suite.documents import CorpusError
from llama_index_graphrag_suite.eval.bench import run_bench
from llama_index_graphrag_suite.eval.datasets import load_dataset
from llama_index_graphrag_suite.eval.metrics import all_gold_at, recall_at
from llama_index_graphrag_suite.methods.base import GraphIndexRetriever, chunk_node, evidence_node

FIXTURE = Path(__file__).parent / "fixtures" / "tiny_bench"
METHOD_KEYS = {"recall@2", "recall@5", "all_gold@5", "query_ms_p50", "query_ms_p95", "context_tokens_mean",
               "llm_calls_mean"}


class OracleRetriever(GraphIndexRetriever):
    """Returns exactly the gold passages (read from the fixture), then an evidence node."""

    method = "oracle"

    def __init__(self, index, top_k=5, **kw):
        super().__init__(index, top_k, **kw)
        self.gold = {q.question: q.supporting_ids for q in load_dataset(FIXTURE).questions}

    def _retrieve(self, query_bundle):
        gold = self.gold[query_bundle.query_str]
        chunks = [c for c in self.index.chunk_order if self.index.chunks[c].doc_id in gold]
        return [chunk_node(self.index, c, 1.0, "oracle") for c in chunks] + [
            evidence_node("oracle", "the answer key", {"gold": gold})]


def test_metrics_by_hand():
    assert recall_at(["a", "x", "b"], ["a", "b"], 2) == 0.5
    assert recall_at(["a", "x", "b"], ["a", "b"], 5) == 1.0
    assert all_gold_at(["a", "x", "b"], ["a", "b"], 2) == 0.0 and all_gold_at(["a", "x", "b"], ["a", "b"], 3) == 1.0


def test_bench_report_schema_and_oracle(tmp_path):
    report = run_bench(FIXTURE, ["dense", "bm25", "hybrid", "oracle"], embed="hash", show_progress=False,
                       index_dir=tmp_path / "idx", extra_methods={"oracle": OracleRetriever})
    assert set(report) == {"dataset", "passages", "questions", "questions_without_gold", "embed_model", "machine",
                           "index", "methods"}
    assert report["dataset"] == "tiny_bench" and report["passages"] == 8 and report["questions"] == 4
    assert report["embed_model"] == "hash:256:8"
    assert {"seconds", "peak_rss_mb", "entities", "relations", "llm_calls"} <= set(report["index"])
    assert report["index"]["peak_rss_mb"] > 0 and report["index"]["reused"] is False
    assert list(report["methods"]) == ["dense", "bm25", "hybrid", "oracle"]
    for m in report["methods"].values():
        assert set(m) == METHOD_KEYS
        for key in ("recall@2", "recall@5", "all_gold@5"):
            assert 0.0 <= m[key] <= 1.0
        assert m["query_ms_p95"] >= m["query_ms_p50"] >= 0 and m["context_tokens_mean"] > 0
    oracle = report["methods"]["oracle"]
    assert oracle["recall@5"] == 1.0 and oracle["all_gold@5"] == 1.0
    assert oracle["recall@2"] == pytest.approx((2 / 3 + 1 + 1 + 1) / 4, abs=1e-4)  # q1 has three gold passages
    again = run_bench(FIXTURE, ["hybrid"], embed="hash", show_progress=False, index_dir=tmp_path / "idx")
    assert again["index"]["reused"] is True
    assert again["methods"]["hybrid"]["recall@5"] == report["methods"]["hybrid"]["recall@5"]


def test_bench_cli_writes_json(tmp_path, capsys):
    out = tmp_path / "r" / "report.json"
    code = main(["bench", "--dataset", str(FIXTURE), "--methods", "all", "--out", str(out), "--embed", "hash",
                 "--quiet", "--limit", "2"])
    assert code == 0, capsys.readouterr().err
    report = json.loads(out.read_text())
    assert report["questions"] == 2 and {"dense", "bm25", "hybrid"} <= set(report["methods"])
    assert "wrote" in capsys.readouterr().out


@pytest.mark.parametrize("bad, message", [
    ('{"id": "q1", "question": "x", "supporting_ids": ["t1"]}\n{"id": "q2", "question": \n', "questions.jsonl:2: not valid JSON"),
    ('{"id": "q1", "question": "x", "supporting_ids": ["nope"]}\n', "'nope' is not in the corpus"),
    ('{"id": "q1", "question": "x", "supporting_ids": "t1"}\n', "must be a list"),
    ('{"id": "q1", "question": "x", "supporting_ids": []}\n', "no questions with supporting_ids"),
])
def test_malformed_dataset_lines_fail_clearly(tmp_path, capsys, bad, message):
    d = tmp_path / "ds"
    d.mkdir()
    (d / "corpus.jsonl").write_text((FIXTURE / "corpus.jsonl").read_text())
    (d / "questions.jsonl").write_text(bad)
    with pytest.raises(CorpusError, match=message):
        load_dataset(d)
    code = main(["bench", "--dataset", str(d), "--out", str(tmp_path / "o.json"), "--embed", "hash", "--quiet"])
    err = capsys.readouterr().err
    assert code == 2 and message in err and len(err.strip().splitlines()) == 1


def test_unknown_method_and_variant_are_refused(tmp_path):
    from llama_index_graphrag_suite.registry import UnknownMethodError

    with pytest.raises(UnknownMethodError, match="unknown method 'nope'"):
        run_bench(FIXTURE, ["nope"], embed="hash", show_progress=False)
    with pytest.raises(UnknownMethodError, match="no variants"):
        run_bench(FIXTURE, ["hybrid:fast"], embed="hash", show_progress=False)


def test_questions_without_gold_are_skipped_and_counted(tmp_path):
    d = tmp_path / "ds"
    d.mkdir()
    (d / "corpus.jsonl").write_text((FIXTURE / "corpus.jsonl").read_text())
    (d / "questions.jsonl").write_text('{"id": "a", "question": "x", "supporting_ids": []}\n'
                                       '{"id": "b", "question": "Marlow river?", "supporting_ids": ["t2"]}\n')
    ds = load_dataset(d)
    assert [q.id for q in ds.questions] == ["b"] and ds.without_gold == 1
