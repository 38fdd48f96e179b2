"""AGRAG's fact mapping (Eq. 7-8) and the cosines its fact slots are derived from (Eq. 14), in one read.

On a listed fact table (``VectorTable.scores``: exact cosines on the query's nearest lists, each other row its
list centroid's, capped at the lowest exact one) neither needs the array of every row's cosine (2 million rows at
1,000,000 passages): the mapped facts come from the probed rows (as ``baselines.mapped_facts`` finds them) and a
fact slot's cosine is derived where a search reads it (:class:`~...graph.cosine_slots.CosineSlots` with the
lists). The same facts, scores and slot values as from the array; when the k-th best exact cosine ties with the
cap or with another row's, the array is made as before (``facts_from_cosines`` takes the top rows by
``argpartition``, whose choice among rows tied at the k-th is its own).
"""

from __future__ import annotations

import threading
from dataclasses import dataclass
from typing import Callable

import numpy as np

from ...graph.cosine_slots import CosineSlots
from ..baselines import _facts_of_rows, facts_from_cosines, probed_top

__all__ = ["FactCosines", "map_facts"]

_scratch = threading.local()  # per thread, the exact cosines of the probed rows (read only at those rows)


@dataclass
class FactCosines:
    """One query's cosines with every fact text: the array (``every``), or a listed table's probed rows' exact
    cosines (``exact``, valid at the rows of the probed lists) and each list's capped estimate (NaN if probed).
    ``exact`` is this thread's array: valid until its next :func:`map_facts`."""

    every: np.ndarray | None = None
    exact: np.ndarray | None = None
    lists: np.ndarray | None = None
    list_cosines: np.ndarray | None = None

    def slots(self, index, text_rows: np.ndarray) -> CosineSlots:
        """The fact slots (fact ``i`` reads text row ``text_rows[i]``) derived from these cosines."""
        if self.every is not None:
            return CosineSlots(self.every, text_rows)
        return CosineSlots(self.exact, text_rows, _fact_lists(index, self.lists, text_rows), self.list_cosines)


def _fact_lists(index, lists: np.ndarray, text_rows: np.ndarray) -> np.ndarray:
    """Each fact's text row's list (int32), made once per lists array and text rows."""
    kept = index.cached("agrag.fact_lists", dict)
    if kept.get("lists") is not lists or kept.get("rows") is not text_rows:
        out = np.asarray(lists)[text_rows]
        kept.update(lists=lists, rows=text_rows, out=out.astype(np.int32))
    return kept["out"]


def map_facts(index, query_vec: np.ndarray, k: int,
              every_cosine: Callable[[], np.ndarray] | None = None) -> tuple[FactCosines, list[tuple[str, float]]]:
    """The query's fact cosines and its ``k`` mapped facts (``facts_from_cosines`` of the array).
    ``every_cosine``: where the array of every fact text's cosine with ``query_vec`` comes from when one is needed
    (e.g. already computed for the best sentence, ``query_scores.fact_text_cosines``); by default the table's
    ``scores``."""
    table = index.fact_vectors
    if table.listed and k > 0:
        found = _listed(index, table, query_vec, k)
        if found is not None:
            return found
    every = every_cosine() if every_cosine is not None else table.scores(query_vec)
    return FactCosines(every=every), facts_from_cosines(index, every, k)


def _listed(index, table, query_vec: np.ndarray, k: int):
    top = probed_top(table, query_vec, k)
    if top is None:
        return None
    lists, near, probed, rows, sims = table.lists, top.near, top.probed, top.rows, top.sims
    n, cap = top.n, top.cap
    best = top.leaders()
    if best.size > n:  # a tie across the k-th: the array's argpartition picks among them (not by row)
        return None
    mapped = _facts_of_rows(index, rows[best], sims[best], k)
    exact = getattr(_scratch, "exact", None)
    if exact is None or exact.size != len(table) or exact.dtype != sims.dtype:
        exact = _scratch.exact = np.empty(len(table), sims.dtype)
    exact[rows] = sims
    np.minimum(near, cap, out=near)  # VectorLists.scores' estimates, then marked where the rows are exact
    estimates = near.astype(sims.dtype, copy=True)
    estimates[probed] = np.nan
    return FactCosines(exact=exact, lists=lists.lists, list_cosines=estimates), mapped
