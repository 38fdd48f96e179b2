"""Semantic checks of a loaded index: tables that are wrong but carry valid checksums are a corrupt index.

Checksums catch a damaged file, not a consistent-looking one that says the wrong thing (an edited table whose
manifest was updated, a tool that wrote its own). Before this, such an index loaded: a reversed
``vector_ids.json`` made four methods return other chunks, an entity pointing at a missing chunk raised
``KeyError`` deep in PathRAG, a fact on an unknown entity loaded without a word. Now :func:`check_tables`
raises :class:`~.storage.CorruptIndexError` with one line naming the first violation:

* ids unique in every table and vector table;
* every link between known rows: an entity's chunks, a chunk's entities, a fact's endpoints and chunks, a
  synonym pair's ends;
* each vector table indexes exactly its table: chunk ids, entity keys, the facts' text keys;
* the saved graph arrays agree with the tables: one node row per entity and chunk, one relation edge per fact,
  and each chunk's and entity's number of ``contains`` edges its row's (a table reordered under a saved
  ``graph.npz`` would join chunks to other chunks' entities);
* and, when the index is loaded with the embed model it was built with, that rows hold the vectors of their
  ids (:func:`check_vector_rows`): the first and last rows of the chunk and entity tables are embedded again,
  and each must be nearer its own row than the other's (a reordered id list swaps them).
"""

from __future__ import annotations

from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from typing import Iterable

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from .chunk_columns import ChunkColumns
from .entity_columns import EntityColumns
from .fact_columns import FactColumns
from .records import text_key
from .row_columns import RowColumns
from .storage import CorruptIndexError

__all__ = ["check_snapshot", "check_tables", "check_vector_rows"]

KEY_PROBES = 64  # saved fact text keys checked against their texts on each load
# Arrow's hash joins release the GIL, and a loaded version's checks make five independent ones over millions of
# rows (a fact's two ends, its chunks, its text's vector row, an entity's vector row): run side by side they took
# a 1M-passage load from ~10 s toward its cores' share (studies/perf/load_time.py)
JOIN_THREADS = 4


def _duplicate(ids: Iterable[str]) -> str | None:
    ids = list(ids)
    if len(set(ids)) == len(ids):  # the usual case, without counting every id
        return None
    counts = Counter(ids)
    return next((i for i, n in counts.items() if n > 1), None)


def _first_missing(values: pa.Array, known: pa.Array) -> int | None:
    """Position of the first of ``values`` that is not among ``known`` (a hash join in Arrow, not a Python loop)."""
    inside = pc.fill_null(pc.is_in(values, value_set=known), False)
    if pc.all(inside).as_py() in (True, None):  # None: no values
        return None
    return int(pc.index(inside, False).as_py())


def _keys(table) -> pa.Array:
    """A table's keys in order as an Arrow string array (the loaded columns keep the one they read)."""
    return table.key_array() if isinstance(table, RowColumns) else pa.array(list(table), pa.string())


def _joins_side_by_side(index) -> tuple[pa.Array, int | None]:
    """Run a loaded version's hash joins at once: the facts' ends and text rows and the entities' vector rows are
    kept by the columns for the checks and the derive that read them next. Returns the facts' saved text keys
    (taken before the text rows are found, which lets the facts drop them) and their first chunk that is not among
    the chunks (:func:`_first_missing` of their flattened chunk lists)."""
    facts, entities = index.facts, index.entities
    texts = facts.text_keys()
    known_entities, known_chunks = _keys(entities), _keys(index.chunks)
    with ThreadPoolExecutor(JOIN_THREADS) as pool:
        jobs = [pool.submit(facts.end_rows, end, known_entities) for end in ("subject", "object")]
        jobs.append(pool.submit(facts.text_rows, index.fact_vectors))
        if isinstance(entities, EntityColumns):
            jobs.append(pool.submit(entities.vector_rows, index.entity_vectors))
        missing_chunk = pool.submit(_first_missing, pc.list_flatten(facts.arrow_column("chunks")), known_chunks)
        for job in jobs:
            job.result()  # re-raises a join's error here
        return texts, missing_chunk.result()


def _check_fact_columns(facts: FactColumns, entities, chunks, fail, at: int | None) -> None:
    """Every fact's ends among the entities and its chunks among the chunks (``at``: the first flattened chunk id
    that is not, from :func:`_joins_side_by_side`), column by column."""
    known_entities = _keys(entities)
    ids = facts.arrow_column("id")
    for end in ("subject", "object"):
        missing = np.flatnonzero(facts.end_rows(end, known_entities) < 0)  # kept for the graph snapshot's edges
        if missing.size:
            row = int(missing[0])
            fail(f"fact {ids[row].as_py()!r} is on unknown entity {facts.arrow_column(end)[row].as_py()!r}")
    if at is not None:
        lists = facts.arrow_column("chunks")
        lists = lists.combine_chunks() if isinstance(lists, pa.ChunkedArray) else lists  # for the parents
        row = int(pc.list_parent_indices(lists)[at].as_py())
        fail(f"fact {ids[row].as_py()!r} links missing chunk {pc.list_flatten(lists)[at].as_py()!r}")


def _check_text_keys(facts: FactColumns, keys: pa.Array, fail) -> None:
    """A few saved text keys against their texts (every fact's key is not hashed again on each load: a table whose
    keys are wrong but whose checksums hold is caught where these rows are, as a reordered vector table is)."""
    n = len(facts)
    texts = facts.arrow_column("text")
    for row in sorted({int(r) for r in np.linspace(0, n - 1, min(n, KEY_PROBES))}):
        if keys[row].as_py() != text_key(texts[row].as_py() or ""):
            fail(f"fact {facts.arrow_column('id')[row].as_py()!r} has a text key that is not its text's")


def check_tables(index, rows: dict[str, list[str]], where: str) -> None:
    """``rows``: the ids as read, per table (``chunks``, ``entities``, ``facts``), before dicts merged duplicates
    (a format-2 version's tables fold to distinct keys: none to give)."""
    def fail(what: str) -> None:
        raise CorruptIndexError(f"corrupt index at {where}: {what}")

    for table, ids in rows.items():
        dup = _duplicate(ids)
        if dup is not None:
            fail(f"the {table} table lists {dup!r} twice")
    chunks, entities, facts = index.chunks, index.entities, index.facts
    for cid, rec in ({} if isinstance(chunks, ChunkColumns) else chunks).items():  # columns: checked when read
        for key in rec.entities:
            if key not in entities:
                fail(f"chunk {cid!r} contains unknown entity {key!r}")
    for key, ent in ({} if isinstance(entities, EntityColumns) else entities).items():  # columns: from the links
        for cid in ent.chunks:
            if cid not in chunks:
                fail(f"entity {key!r} links missing chunk {cid!r}")
    columnar = isinstance(facts, FactColumns)  # a loaded version's facts: checked column by column
    if columnar:
        texts, at = _joins_side_by_side(index)
        _check_fact_columns(facts, entities, chunks, fail, at)
        _check_text_keys(facts, texts, fail)
    for fid, f in ({} if columnar else facts).items():
        for end in (f.subject, f.object):
            if end not in entities:
                fail(f"fact {fid!r} is on unknown entity {end!r}")
        for cid in f.chunks:
            if cid not in chunks:
                fail(f"fact {fid!r} links missing chunk {cid!r}")
    names = pa.array(index.synonyms.used_names(), pa.string())
    at = _first_missing(names, _keys(entities))
    if at is not None:
        fail(f"a synonym pair is on unknown entity {names[at].as_py()!r}")
    if not columnar:
        texts = pa.array([text_key(f.text) for f in facts.values()], pa.string())
    expected = {"chunks": _keys(chunks), "entities": _keys(entities), "facts": texts}
    for name, table in (("chunks", index.chunk_vectors), ("entities", index.entity_vectors), ("facts", index.fact_vectors)):
        if name == "facts" and columnar:  # the rows the index's derive reads anyway (kept by the facts)
            problem = _same_text_ids(table, texts, facts.text_rows(table))
        elif name == "entities" and isinstance(entities, EntityColumns):  # likewise (kept by the entities)
            problem = _same_rows(table.id_array(), expected[name], entities.vector_rows(table))
        else:
            problem = _same_ids(table.id_array(), expected[name])
        if problem == "twice":
            fail(f"the {name} vector ids list {_duplicate(table.ids)!r} twice")
        if problem is not None:
            extra, odd = problem
            fail(f"the {name} vector ids do not match the {name} table ({odd!r} "
                 f"{'has a vector but no row' if extra else 'has no vector'})")


def _same_rows(have: pa.Array, expected: pa.Array, rows: np.ndarray):
    """:func:`_same_ids` from the row in ``have`` of each of ``expected`` (distinct keys; ``rows``, -1: none): when
    they are a permutation of ``have``'s rows, both hold the same ids, each once (no count of distinct ids)."""
    if have.equals(expected) or (len(rows) == len(have) and bool((rows >= 0).all())
                                 and bool((np.bincount(rows, minlength=len(have)) == 1).all())):
        return None
    return _same_ids(have, expected)  # something is wrong: name it


def _same_text_ids(table, texts: pa.Array, rows: np.ndarray):
    """:func:`_same_ids` of the fact vector table and the facts' text keys ``texts``, from the row of each text in
    the table (``rows``, -1: none)."""
    have = table.id_array()
    used = np.zeros(len(have), bool)
    used[rows[rows >= 0]] = True
    if used.all() and not (rows < 0).any():  # every row holds a fact's text: no id is there twice (an id's second
        return None                          # row would be used by no fact), none is missing
    if pc.count_distinct(have, mode="all").as_py() != len(have):
        return "twice"
    if not used.all():
        return True, pc.min(have.filter(pa.array(~used))).as_py()
    if (rows < 0).any():
        return False, pc.min(texts.filter(pa.array(rows < 0))).as_py()
    return None


def _same_ids(have: pa.Array, expected: pa.Array):
    """None when the vector ids ``have`` are distinct and, as a set, ``expected``; else "twice" (an id listed twice),
    or (True, an id with no row) or (False, an expected id with no vector), the least one of its kind, as the set
    comparison this replaces named it."""
    if have.equals(expected):  # the usual case: the same ids in the same order
        return None
    if pc.count_distinct(have, mode="all").as_py() != len(have):
        return "twice"
    extra = pc.filter(have, pc.invert(pc.fill_null(pc.is_in(have, value_set=expected), False)))
    if len(extra):
        return True, pc.min(extra).as_py()
    missing = pc.filter(expected, pc.invert(pc.fill_null(pc.is_in(expected, value_set=have), False)))
    if len(missing):
        return False, pc.min(missing).as_py()
    return None


def check_vector_rows(index, where: str) -> np.ndarray:
    """Embed the first and last chunk texts and entity names again: each must be nearer its own row than the
    other's. Returns one of the fresh vectors (for the caller's dimension check)."""
    probes: list[tuple[object, list[str], list[str]]] = []  # (table, ids, texts)
    entities = index.entities
    surface = entities.surface_of if isinstance(entities, EntityColumns) else lambda k: entities[k].surface
    for table, text_of in ((index.chunk_vectors, lambda i: index.chunks[i].text), (index.entity_vectors, surface)):
        if len(table) >= 2:
            ids = [table.ids[0], table.ids[-1]]
            probes.append((table, ids, [text_of(i) for i in ids]))
    texts = [t for _, _, ts in probes for t in ts] or ["dimension check"]
    from ..embeddings import embed_few

    fresh = embed_few(index.embed_model, texts)
    if fresh.shape[1] != index.state.dim:
        return fresh[0]
    at = 0
    for table, ids, pair in probes:
        vecs, at = fresh[at:at + 2], at + 2
        if pair[0] == pair[1]:
            continue
        sims = vecs @ table.at(np.array([0, len(table) - 1])).T  # fresh probe x stored row (the ids' rows)
        if sims[0, 0] < sims[0, 1] or sims[1, 1] < sims[1, 0]:
            raise CorruptIndexError(f"corrupt index at {where}: the vector ids do not match the vectors' rows "
                                    f"({ids[0]!r} is nearer the vector stored for {ids[1]!r})")
    return fresh[0]


def check_snapshot(index, snapshot, where: str) -> None:
    """The loaded graph arrays against the tables (see the module docstring); a few numpy passes."""
    from ..graph.snapshot import CONTAINS, ENTITY, RELATION

    n_ent, chunks = len(index.entities), list(index.chunks.values())
    kind, src, dst = snapshot.edge_kind, snapshot.edge_src, snapshot.edge_dst
    problem = None
    if int((snapshot.node_kind == ENTITY).sum()) != n_ent or bool((snapshot.node_kind[:n_ent] != ENTITY).any()):
        problem = "its entity rows differ from the entities table"
    elif int((kind == RELATION).sum()) != len(index.facts):
        problem = "its relation edges differ from the facts table"
    else:
        contains = kind == CONTAINS
        per_chunk = np.bincount(src[contains] - n_ent, minlength=len(chunks))
        per_entity = np.bincount(dst[contains], minlength=n_ent)
        if not np.array_equal(per_chunk, np.fromiter((len(c.entities) for c in chunks), np.int64, len(chunks))):
            problem = "its chunk rows do not contain the entities the chunks table lists"
        elif not np.array_equal(per_entity, np.fromiter((len(e.chunks) for e in index.entities.values()), np.int64, n_ent)):
            problem = "its entity rows are not in the chunks the entities table lists"
    if problem:
        raise CorruptIndexError(f"corrupt index at {where}: graph.npz does not match the tables ({problem})")
