"""Evaluation: benchmark datasets, retrieval metrics and the bench runner behind `graphrag-suite bench`."""

from .datasets import BenchDataset, Question, load_dataset
from .metrics import all_gold_at, recall_at

__all__ = ["BenchDataset", "Question", "all_gold_at", "load_dataset", "recall_at"]
