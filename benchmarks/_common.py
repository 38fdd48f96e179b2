"""What the benchmark scripts share: their command lines, the questions with gold, recall@k, the recall cells of a
table row, and their output."""

from __future__ import annotations

import argparse
from pathlib import Path


# the five shared benchmark sets (../shared/datasets) the tuning scripts and the report read, in their tables' order
SHARED_SETS = ("2wiki_retrieval101", "hotpotqa_train100", "musique_train100", "graphrag_bench_medical", "covidqa_dev")


def index_and_dataset_args(doc: str) -> argparse.ArgumentParser:
    """``--index-dir`` (a saved GraphRAGIndex), ``--dataset`` (a benchmark folder) and ``--out``."""
    parser = argparse.ArgumentParser(description=doc.split("\n")[0])
    parser.add_argument("--index-dir", default="/tmp/dev/2wiki_retrieval101")
    parser.add_argument("--dataset", default="../shared/datasets/2wiki_retrieval101")
    parser.add_argument("--out", help="write the markdown here too")
    return parser


def probe_args(doc: str, sets: str) -> argparse.ArgumentParser:
    """``--datasets``, ``--work`` and ``--tag`` (where ``domain_tuning.py`` left its indexes and rankings) and
    ``--sets`` (comma-separated, ``sets`` by default): the command line of the probes that read them."""
    parser = argparse.ArgumentParser(description=doc.split("\n")[0])
    parser.add_argument("--datasets", default="../shared/datasets")
    parser.add_argument("--work", default="/tmp/gr25", help="domain_tuning.py's --work folder")
    parser.add_argument("--tag", default="default")
    parser.add_argument("--sets", default=sets)
    return parser


def questions_with_gold(datasets: str | Path, name: str) -> list[str]:
    """The texts of a dataset's questions that have gold passages, in its order: the order of the ``gold`` lists
    in ``domain_tuning.py``'s ``rankings.json``."""
    from llama_index_graphrag_suite.eval.datasets import load_dataset

    return [q.question for q in load_dataset(Path(datasets) / name).questions if q.supporting_ids]


def probe_each_set(args: argparse.Namespace, probe) -> list[str]:
    """The lines of ``probe(work folder, set, its questions with gold)`` for each set of ``--sets``, in order."""
    lines: list[str] = []
    for name in args.sets.split(","):
        lines += probe(Path(args.work) / args.tag, name, questions_with_gold(args.datasets, name))
    return lines


def recall_cells(report: dict) -> str:
    """``recall@2 | recall@5 | all-gold@5`` in percent, from an ``eval.bench.run_method`` report."""
    return " | ".join(f"{100 * report[k]:.1f}" for k in ("recall@2", "recall@5", "all_gold@5"))


def recall_at(ranked, doc_of, gold, k: int) -> float:
    """Share of the gold passages among the passages of the first ``k`` ranked chunks (chunk positions mapped to
    passages by ``doc_of``): recall@k as the bench counts it."""
    return len(set(gold) & {doc_of[c] for c in ranked[:k]}) / len(set(gold))


def emit(lines: list[str], out: str | None) -> None:
    """Print the markdown, and write it to ``out`` when given."""
    text = "\n".join(lines)
    print(text)
    if out:
        Path(out).write_text(text + "\n", encoding="utf-8")
