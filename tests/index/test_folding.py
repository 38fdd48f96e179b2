"""Folding a table's segments on arrays (index/folding.py) gives what replaying their changes into a dict gives."""

from __future__ import annotations

import random

import numpy as np
import pyarrow as pa
import pytest

from llama_index_graphrag_suite.index.folding import fold, fold_rows, folded_table


def _replayed(tables, key_columns):
    """The definition: each segment's gone rows pop their keys, then its other rows set theirs."""
    out = {}
    for s, t in enumerate(tables):
        cols = [t.column(c).to_pylist() for c in key_columns]
        keys = cols[0] if len(cols) == 1 else list(zip(*cols))
        gone = t.column("gone").to_pylist()
        for k, g in zip(keys, gone):
            if g:
                out.pop(k, None)
        for r, (k, g) in enumerate(zip(keys, gone)):
            if not g:
                out[k] = (s, r)
    return out


def _segment(keys, gone, other):
    return pa.table({"id": pa.array(keys, pa.string()), "b": pa.array(other, pa.string()),
                     "gone": pa.array(gone, pa.bool_())})


@pytest.mark.parametrize("seed", range(4))
def test_fold_matches_the_dict_replay_on_random_segments(seed):
    rng = random.Random(seed)
    for _ in range(300):
        universe = [f"k{i}" for i in range(rng.randint(1, 12))]
        tables = []
        for s in range(rng.randint(1, 4)):
            n = rng.randint(0, 10)
            if s == 0 and rng.random() < 0.5:  # a whole first table: distinct keys, nothing gone
                keys, gone = rng.sample(universe, min(n, len(universe))), None
                gone = [False] * len(keys)
            else:
                keys = [rng.choice(universe) for _ in range(n)]
                gone = [rng.random() < 0.3 for _ in range(n)]
            tables.append(_segment(keys, gone, [rng.choice("xy") for _ in keys]))
        first = tables[0]
        first_keys = first.column("id").to_pylist()
        whole_with_duplicate = not any(first.column("gone").to_pylist()) and len(set(first_keys)) != len(first_keys)
        for key_columns in (("id",), ("id", "b")):
            want = _replayed(tables, key_columns)
            if whole_with_duplicate and key_columns == ("id",):
                with pytest.raises(ValueError, match="lists a key twice"):
                    fold(tables, key_columns)
                continue
            if whole_with_duplicate:
                continue  # a pair key may or may not repeat: the single-key case covers the refusal
            assert list(fold(tables, key_columns).items()) == list(want.items())
            starts = [0]
            for t in tables:
                starts.append(starts[-1] + len(t))
            assert fold_rows(tables, key_columns).tolist() == [starts[s] + r for s, r in want.values()]


def test_segments_that_only_add_rows_are_joined_without_a_copy():
    a = _segment(["x", "y"], [False, False], ["1", "2"])
    b = _segment(["z"], [False], ["3"])
    table = folded_table([a, b], "id", a.schema)
    assert table.column("id").to_pylist() == ["x", "y", "z"] and table.column("id").num_chunks == 2
    changed = folded_table([a, _segment(["x", "y"], [True, False], [None, "9"])], "id", a.schema)
    assert changed.column("id").to_pylist() == ["y"] and changed.column("b").to_pylist() == ["9"]


@pytest.mark.parametrize("seed", range(4))
def test_a_small_tail_folded_onto_its_first_segment_gives_the_rows_of_every_key_folded(seed, monkeypatch):
    """A first segment written whole (distinct keys, nothing gone) and small later segments: folding only the first
    segment's rows that later segments name (``checked``) gives the rows and order the fold of every key gives."""
    from llama_index_graphrag_suite.index import folding

    monkeypatch.setattr(folding, "SMALL_TAIL_SHARE", 1.0)  # any tail up to the first segment's size
    rng = random.Random(seed)
    onto = 0
    for _ in range(300):
        universe = [f"k{i}" for i in range(rng.randint(1, 30))]
        base = rng.sample(universe, rng.randint(1, len(universe)))
        tables = [_segment(base, [False] * len(base), ["x"] * len(base))]
        for _ in range(rng.randint(1, 3)):
            keys = [rng.choice(universe) for _ in range(rng.randint(0, 6))]
            tables.append(_segment(keys, [rng.random() < 0.3 for _ in keys], ["y"] * len(keys)))
        lengths = np.array([len(t) for t in tables], np.int64)
        fast = folding._fold_onto_first(tables, ("id",), lengths)
        want = folding._fold_every_key(tables, ("id",), lengths)[0]
        if fast is None:  # a tail larger than the first segment
            continue
        onto += 1
        assert fast.tolist() == want.tolist()
        assert fold_rows(tables, ("id",), checked=True).tolist() == want.tolist()
        replayed = _replayed(tables, ("id",))
        starts = np.cumsum([0] + [len(t) for t in tables])
        assert [(int(np.searchsorted(starts, g, "right")) - 1, int(g - starts[np.searchsorted(starts, g, "right") - 1]))
                for g in fast] == list(replayed.values())
    assert onto > 100
    gone_first = [_segment(["a", "b"], [True, False], ["x", "x"]), _segment(["a"], [False], ["y"])]
    assert folding._fold_onto_first(gone_first, ("id",), np.array([2, 1])) is None  # removals in the first: every key
    monkeypatch.setattr(folding, "SMALL_TAIL_SHARE", 0.25)
    big_tail = [_segment(["a", "b"], [False, False], ["x", "x"]), _segment(["c"], [False], ["y"])]
    assert folding._fold_onto_first(big_tail, ("id",), np.array([2, 1])) is None


@pytest.mark.parametrize("seed", range(3))
def test_rows_gathered_as_slices_are_the_rows_taken(seed, monkeypatch):
    """A fold's rows in few runs of consecutive rows are joined from slices (no copy), in many runs copied: the
    same rows either way, in the same order."""
    from llama_index_graphrag_suite.index import folding

    rng = np.random.default_rng(seed)
    parts = [_segment([f"k{i}" for i in range(a, b)], [False] * (b - a), [str(i % 7) for i in range(a, b)])
             for a, b in ((0, 40), (40, 47), (47, 50))]
    table = pa.concat_tables(parts)
    for _ in range(200):
        rows = np.arange(table.num_rows)
        replaced = rng.choice(40, int(rng.integers(0, 6)), replace=False)
        rows[replaced] = rng.integers(40, 50, replaced.size)
        rows = np.concatenate([np.delete(rows[:40], rng.choice(40, int(rng.integers(0, 3)), replace=False)),
                               rng.permutation(np.arange(40, 50))[: int(rng.integers(0, 5))]])
        want = table.take(pa.array(rows, pa.int64())).to_pylist()
        got = folding.gathered(table, rows)
        assert got.to_pylist() == want
        runs = 1 + int(np.count_nonzero(np.diff(rows) != 1)) if rows.size else 0
        assert got.column("id").num_chunks >= runs  # a slice (one chunk or more) per run: nothing copied
    monkeypatch.setattr(folding, "MAX_SLICES", 1)  # every fold with two runs or more is copied
    rows = np.array([0, 1, 45, 3])
    assert folding.gathered(table, rows).to_pylist() == table.take(pa.array(rows)).to_pylist()
    assert folding.gathered(table, rows).column("id").num_chunks == 1
    assert folding.gathered(table, np.zeros(0, np.int64)).num_rows == 0
