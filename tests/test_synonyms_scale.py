"""Synonym search above the exact-search threshold: the IVF pairs are exact pairs, and nearly all of them."""

import numpy as np
import pytest

from llama_index_graphrag_suite.graph import synonyms
from llama_index_graphrag_suite.graph.synonyms import APPROX_ENV, approx_min_rows, synonym_pairs

FORCED = 500  # the approximate mode from 500 query rows on, instead of tens of thousands


def clustered(n: int = 3000, dim: int = 32, clusters: int = 150, seed: int = 0) -> np.ndarray:
    """Unit vectors in tight clusters (name variants) around random centres, a fifth of them loners."""
    rng = np.random.default_rng(seed)
    centres = rng.normal(size=(clusters, dim))
    centres /= np.linalg.norm(centres, axis=1, keepdims=True)
    member = rng.integers(0, clusters, n)
    noise = rng.normal(size=(n, dim)) * rng.uniform(0.04, 0.12, (n, 1))  # cosines to the centre ~0.8-0.97
    vecs = centres[member] + noise
    loners = rng.random(n) < 0.2
    vecs[loners] = rng.normal(size=(int(loners.sum()), dim))
    vecs /= np.linalg.norm(vecs, axis=1, keepdims=True)
    return vecs.astype(np.float32)


def as_set(pairs) -> set[tuple[int, int]]:
    return set(zip(pairs[0].tolist(), pairs[1].tolist()))


def check_contract(vecs, pairs, threshold=0.8):
    lo, hi, sim = pairs
    assert lo.dtype == hi.dtype == np.int64 and sim.dtype == np.float32
    assert (lo < hi).all()
    assert len(set(zip(lo.tolist(), hi.tolist()))) == lo.size  # each pair once
    assert (sim > threshold).all()
    np.testing.assert_allclose(sim, np.einsum("ij,ij->i", vecs[lo], vecs[hi]), atol=1e-5)


@pytest.fixture(scope="module")
def vecs():
    return clustered()


@pytest.fixture(scope="module")
def exact(vecs):
    return synonym_pairs(vecs, 0.8, 100, approx_rows=0)


def test_approximate_pairs_are_exact_pairs_with_high_recall(vecs, exact):
    approx = synonym_pairs(vecs, 0.8, 100, approx_rows=FORCED)
    check_contract(vecs, approx)
    found, truth = as_set(approx), as_set(exact)
    assert len(truth) > 5000
    assert found <= truth
    assert len(found) / len(truth) >= 0.97
    # a fixed seed: the same vectors give the same pairs
    again = synonym_pairs(vecs, 0.8, 100, approx_rows=FORCED)
    assert all(np.array_equal(a, b) for a, b in zip(approx, again))


def test_a_lossy_search_still_finds_only_exact_pairs(vecs, exact, monkeypatch):
    monkeypatch.setattr(synonyms, "IVF_NPROBE", 1)  # one list per query: some neighbours are missed
    found, truth = as_set(synonym_pairs(vecs, 0.8, 100, approx_rows=FORCED)), as_set(exact)
    assert found <= truth and len(found) / len(truth) >= 0.9


def test_the_approximate_mode_is_used_only_from_the_threshold_on(vecs, exact, monkeypatch):
    built = []
    real = synonyms.ivf_index
    monkeypatch.setattr(synonyms, "ivf_index", lambda v, *a, **k: built.append(len(v)) or real(v, *a, **k))
    below = synonym_pairs(vecs, 0.8, 100, approx_rows=len(vecs) + 1)
    assert not built
    assert all(np.array_equal(a, b) for a, b in zip(below, exact))  # identical, not just equal as sets
    synonym_pairs(vecs, 0.8, 100, approx_rows=len(vecs))
    assert built == [len(vecs)]
    # the default threshold keeps a small index exact
    assert approx_min_rows() == synonyms.APPROX_MIN_ROWS > len(vecs)
    default = synonym_pairs(vecs, 0.8, 100)
    assert built == [len(vecs)] and all(np.array_equal(a, b) for a, b in zip(default, exact))


def test_threshold_from_the_environment(vecs, exact, monkeypatch):
    built = []
    real = synonyms.ivf_index
    monkeypatch.setattr(synonyms, "ivf_index", lambda v, *a, **k: built.append(len(v)) or real(v, *a, **k))
    monkeypatch.setenv(APPROX_ENV, str(FORCED))
    assert approx_min_rows() == FORCED
    assert as_set(synonym_pairs(vecs)) <= as_set(exact) and built == [len(vecs)]
    monkeypatch.setenv(APPROX_ENV, "0")  # always exact
    assert all(np.array_equal(a, b) for a, b in zip(synonym_pairs(vecs), exact)) and built == [len(vecs)]
    monkeypatch.setenv(APPROX_ENV, "many")
    with pytest.raises(ValueError, match=APPROX_ENV):
        approx_min_rows()


def test_query_rows_in_both_modes(vecs):
    new = np.arange(2000, 3000)  # an insert's 1,000 new entities, searched against all 3,000
    truth = as_set(synonym_pairs(vecs, 0.8, 100, query_rows=new, approx_rows=0))
    assert truth and all(a in set(new.tolist()) or b in set(new.tolist()) for a, b in truth)
    approx = synonym_pairs(vecs, 0.8, 100, query_rows=new, approx_rows=FORCED)  # 1,000 query rows >= 500
    check_contract(vecs, approx)
    found = as_set(approx)
    assert found <= truth and len(found) / len(truth) >= 0.97
    # an old entity's pair with a new one is found from the new side
    assert any(a < 2000 for a, _ in found)
    few = synonym_pairs(vecs, 0.8, 100, query_rows=new[:100], approx_rows=FORCED)  # 100 < 500 rows: exact
    assert as_set(few) == as_set(synonym_pairs(vecs, 0.8, 100, query_rows=new[:100], approx_rows=0))


def test_eligible_rows_and_the_neighbour_cap_in_approximate_mode(vecs, exact):
    eligible = np.ones(len(vecs), bool)
    eligible[::7] = False
    approx = synonym_pairs(vecs, 0.8, 100, eligible=eligible, approx_rows=FORCED)
    check_contract(vecs, approx)
    assert eligible[approx[0]].all() and eligible[approx[1]].all()
    assert as_set(approx) <= as_set(exact)
    capped = synonym_pairs(vecs, 0.8, 2, approx_rows=FORCED)
    check_contract(vecs, capped)
    assert len(as_set(capped)) <= 2 * len(vecs)  # each row keeps at most 2 neighbours
    assert len(as_set(capped)) < len(as_set(exact))


@pytest.mark.parametrize("approx_rows", [0, FORCED])
def test_rows_in_blocks_give_the_pairs_of_one_matrix(vecs, approx_rows):
    """A vector table's rows are searched as the blocks that hold them, never joined: the same pairs, exact or IVF."""
    from llama_index_graphrag_suite.graph.synonyms import Blocks

    rows = np.arange(len(vecs) - 900, len(vecs))[::-1]  # an insert's new names, in no particular order
    whole = synonym_pairs(vecs, 0.8, 100, rows, approx_rows=approx_rows)
    blocks = Blocks([vecs[:1000], vecs[1000:1001], vecs[1001:2500], vecs[2500:]])
    split = synonym_pairs(blocks, 0.8, 100, rows, approx_rows=approx_rows)
    assert whole[0].size > 100
    for a, b in zip(whole, split):
        np.testing.assert_array_equal(a, b)
    assert np.array_equal(blocks[rows[:50]], vecs[rows[:50]])
