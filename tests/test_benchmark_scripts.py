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
