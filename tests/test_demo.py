"""The graph demo (``python -m llama_index_graphrag_suite.demo``): its HotpotQA slice, how it sorts questions, how it
explains a passage the graph found, and a whole run on a tiny corpus."""

from __future__ import annotations

import json

from llama_index_graphrag_suite import demo

from conftest import CORPUS


def test_the_slice_is_whole_and_says_its_licence():
    corpus = [json.loads(line) for line in (demo.SLICE / "corpus.jsonl").read_text(encoding="utf-8").splitlines()]
    questions = demo.load_questions(demo.SLICE)
    ids = {d["id"] for d in corpus}
    assert len(questions) == 30 and len(corpus) == len(ids) == 305
    assert all(len(q["supporting_ids"]) == 2 and set(q["supporting_ids"]) <= ids for q in questions)
    assert "CC BY-SA 4.0" in (demo.SLICE / "README.md").read_text(encoding="utf-8")


def test_a_question_is_found_same_or_lost_by_how_many_gold_passages_each_top_k_holds():
    def row(base, graph):
        return demo.Row("q", "bridge", ["a", "b"], base, graph)

    assert row(["a", "x"], ["a", "b"]).outcome == demo.FOUND
    assert row(["a", "b"], ["b", "x"]).outcome == demo.LOST
    assert row(["a", "x"], ["b", "x"]).outcome == demo.SAME  # a swap: one gold passage each
    assert row(["x"], ["y"]).outcome == demo.SAME
    assert demo.recall([row(["a"], ["a", "b"]), row([], ["b"])], "graph") == 75.0


def test_the_explanation_says_whether_the_other_passage_names_the_found_ones_title():
    assert demo.explain(["Maximum Overdrive"], "Maximum Overdrive") == \
        "the other gold passage names its title, Maximum Overdrive"
    assert demo.explain(["C. P. E. Bach", "Johann Sebastian Bach"], "c. p. e. bach") == \
        "the other gold passage names its title, C. P. E. Bach; both name Johann Sebastian Bach"
    assert demo.explain([], "X").startswith("no name in common")


def test_a_whole_run_prints_the_three_kinds_and_the_recall(tmp_path, capsys):
    (tmp_path / "corpus.jsonl").write_text("".join(json.dumps({"id": i, "title": t, "text": x}) + "\n"
                                                   for i, t, x in CORPUS), encoding="utf-8")
    questions = [{"id": "q1", "question": "Where was the painter of The Grey Harbour born?", "type": "bridge",
                  "supporting_ids": ["p-harbour", "p-ada"]},
                 {"id": "q2", "question": "Which school did Tomas Brey teach at?", "type": "bridge",
                  "supporting_ids": ["p-brey", "p-kell"]}]
    (tmp_path / "questions.jsonl").write_text("".join(json.dumps(q) + "\n" for q in questions), encoding="utf-8")
    assert demo.main(["--data", str(tmp_path), "--embed", "hash", "--method", "hipporag", "--all"]) == 0
    out = capsys.readouterr().out
    assert "2 questions, hybrid against hipporag, top 5" in out
    counts = [int(line.rsplit(": ", 1)[1].split(" of ")[0]) for line in out.splitlines() if line.startswith("== ")]
    assert len(counts) == 3 and sum(counts) == 2
    assert "recall@5 over these 2 questions: hybrid " in out and "Q (bridge): Which school" in out


def test_a_folder_without_the_files_is_one_line(tmp_path, capsys):
    assert demo.main(["--data", str(tmp_path)]) == 2
    assert capsys.readouterr().err.strip().endswith("needs corpus.jsonl and questions.jsonl")


def test_the_names_that_join_two_passages_leave_hubs_out():
    from types import SimpleNamespace as NS

    chunks = {f"c{i}": NS(doc_id=f"d{i}", entities=["american"] + (["leland"] if i < 2 else [])) for i in range(100)}
    entities = {"american": NS(surface="American", chunks=set(chunks)),
                "leland": NS(surface="Leland, North Carolina", chunks={"c0", "c1"})}
    index = NS(chunks=chunks, entities=entities)
    assert demo.linking_names(index, "d1", ["d0"]) == ["Leland, North Carolina"]  # not American: in every chunk
    assert demo.linking_names(index, "d5", ["d0"]) == []
