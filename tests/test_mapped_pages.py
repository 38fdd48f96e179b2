"""index/mapped_pages.py: read-only mappings of an index folder's files are unmapped, their data unchanged."""

import sys
from pathlib import Path

import numpy as np
import pytest

from llama_index_graphrag_suite.index import mapped_pages
from llama_index_graphrag_suite.index.mapped_pages import MappedBudget, file_backed_mb, release

linux = pytest.mark.skipif(not Path("/proc/self/maps").exists(), reason="needs /proc/self/maps")


def _resident_kb(path: Path) -> int:
    """Rss of this process's mappings of ``path`` (from /proc/self/smaps)."""
    total, inside = 0, False
    for line in Path("/proc/self/smaps").read_text().splitlines():
        head = line.split()
        if head and "-" in head[0] and len(head) >= 5 and ":" not in head[0]:
            inside = len(head) == 6 and head[5] == str(path)
        elif inside and line.startswith("Rss:"):
            total += int(head[1])
    return total


@linux
def test_release_unmaps_pages_and_keeps_data(tmp_path):
    data = np.random.default_rng(0).standard_normal((4096, 64)).astype(np.float32)  # 1 MB
    inside, outside = tmp_path / "index" / "m.npy", tmp_path / "other.npy"
    inside.parent.mkdir()
    np.save(inside, data)
    np.save(outside, data)
    a = np.load(inside, mmap_mode="r")
    b = np.load(outside, mmap_mode="r")
    assert float(a.sum()) == float(data.sum()) == float(b.sum())  # every page touched
    assert _resident_kb(inside.resolve()) >= 900 and _resident_kb(outside.resolve()) >= 900
    assert release(tmp_path / "index") >= data.nbytes
    assert _resident_kb(inside.resolve()) < 100  # unmapped from the process ...
    assert _resident_kb(outside.resolve()) >= 900  # ... only under the folder given
    np.testing.assert_array_equal(a, data)  # read again from the file (the page cache)


@linux
def test_writable_mappings_are_left_alone(tmp_path):
    path = tmp_path / "w.npy"
    np.save(path, np.zeros((1024, 256), np.float32))
    m = np.load(path, mmap_mode="r+")
    m[:] = 7  # a change not yet written back must survive
    release(tmp_path)
    assert (m == 7).all()


def test_budget_releases_only_above_the_bound(tmp_path, monkeypatch):
    calls = []
    monkeypatch.setattr(mapped_pages, "release", lambda folder: calls.append(folder) or 1)
    monkeypatch.setattr(mapped_pages, "file_backed_mb", lambda: 500.0)
    anon, trims = [100.0], []
    monkeypatch.setattr(mapped_pages, "_status_mb", lambda field: anon[0])
    monkeypatch.setattr(mapped_pages, "trim_heap", lambda: trims.append(anon[0]) or True)

    class Index:
        class state:
            origin = (tmp_path, "v#1")

    assert not MappedBudget(None).check(Index)
    assert not MappedBudget(600).check(Index)
    assert MappedBudget(400).check(Index) and calls == [tmp_path]

    class Unsaved:
        class state:
            origin = None

    assert not MappedBudget(0).check(Unsaved)  # nothing mapped from a folder

    budget = MappedBudget(10_000)
    trims.clear()
    budget.check(Index)  # the first check trims (anonymous RSS above 0 + TRIM_MB)
    budget.check(Index)
    anon[0] += MappedBudget.TRIM_MB + 1  # a first query's structures built: trimmed once more
    budget.check(Index)
    budget.check(Index)
    assert trims == [100.0, 100.0 + MappedBudget.TRIM_MB + 1]


@linux
def test_file_backed_mb_reads_status():
    mb = file_backed_mb()
    assert mb is not None and mb > 0 and sys.platform.startswith("linux")
