"""A loaded version's n-gram frequencies as sorted Arrow columns answer as the Counter they replace."""

from __future__ import annotations

from collections import Counter

import numpy as np
import pyarrow as pa
import pytest

from llama_index_graphrag_suite.extractors.entity_stats import EntityStatistics
from llama_index_graphrag_suite.index.ngram_columns import NgramColumns, doc_freq_of

COUNTS = Counter({"harbour": 3, "grey harbour": 1, "zoë": 2, "é": 5, "a": 7, "ab": 1, "b": 2, "straße": 4,
                  "日本": 1, "z z": 9})


def _columns(counts: Counter) -> NgramColumns:
    keys = list(counts)
    return NgramColumns(pa.array(keys, pa.string()), np.array([counts[k] for k in keys]))


def test_lookups_iteration_and_counter_match_the_counter():
    cols = _columns(COUNTS)
    for key, df in COUNTS.items():  # UTF-8 byte order is Python's string order: non-ASCII keys are found too
        assert cols[key] == df and cols.get(key) == df and key in cols
    for absent in ("", "harbou", "harbourz", "zzz", "日", 3, None):
        assert cols.get(absent, 0) == 0 and absent not in cols
    with pytest.raises(KeyError):
        cols["nowhere"]
    assert len(cols) == len(COUNTS) and sorted(cols) == sorted(COUNTS)
    assert dict(cols.items()) == dict(COUNTS) and cols.to_counter() == COUNTS


def test_statistics_on_columns_score_as_on_a_counter_and_a_change_edits_a_counter():
    on_counter = EntityStatistics(2, 10, Counter(COUNTS))
    on_columns = EntityStatistics(2, 10, _columns(COUNTS))
    text = "Zoë sailed to Grey Harbour. The harbour of Straße."
    assert on_columns.score(text) == on_counter.score(text)
    on_columns.fit(["the grey harbour again"])
    on_counter.fit(["the grey harbour again"])
    assert isinstance(on_columns.doc_freq, Counter) and on_columns.doc_freq == on_counter.doc_freq
    assert on_columns.changed == on_counter.changed


def test_a_folded_table_is_a_counter_below_the_threshold_and_columns_from_it(monkeypatch):
    from llama_index_graphrag_suite.index import ngram_columns

    table = pa.table({"key": list(COUNTS), "gone": [False] * len(COUNTS), "df": list(COUNTS.values())})
    assert isinstance(doc_freq_of(table), Counter) and doc_freq_of(table) == COUNTS
    monkeypatch.setattr(ngram_columns, "COLUMNS_FROM", len(COUNTS))
    assert isinstance(doc_freq_of(table), NgramColumns) and doc_freq_of(table).to_counter() == COUNTS


@pytest.mark.parametrize("columns_from", [0, 10**9])
def test_a_table_listing_an_ngram_twice_is_refused(monkeypatch, columns_from):
    from llama_index_graphrag_suite.index import ngram_columns

    monkeypatch.setattr(ngram_columns, "COLUMNS_FROM", columns_from)
    table = pa.table({"key": ["b", "a", "b"], "gone": [False] * 3, "df": [1, 2, 3]})
    with pytest.raises(ValueError, match="lists a key twice"):
        doc_freq_of(table)
