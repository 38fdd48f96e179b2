"""The index's tables and vectors on disk: Arrow and ``.npy`` segments that versions share (``segment_files.py``).

A version's manifest lists, per table, the segments it is made of, oldest first; the files live once in the
index folder's ``segments/`` (``storage.py`` checks their checksums, keeps them while a kept version lists them,
and removes them after). Reading a table folds its segments in order, as a dict would take the same changes:
a segment's ``gone`` rows remove keys, its other rows replace a key's row where it is (a changed row) or add it
at the end (a new row, or one removed and added again, ``IndexState.unsaved``). So a save writes the rows changed
since the version it extends, not the whole index, and every saved version reads back exactly as it was saved.

Tables (one Arrow schema each)::

    chunks        id, doc_id, title, position, doc_hash, text, terms, counts   (a chunk's text and its BM25 row:
                                                                              written when the chunk is added)
    chunk_links   id, entities, entity_rows                                (what a chunk contains: may change)
    entities      key, surface, type, attributes (JSON)                    (an entity's chunks are the chunks
                                                                              whose links name it)
    facts         id, subject, predicate, object, text, kind, chunks, text_key, subject_row, object_row, text_row
                                                                             (rows a load checks instead of joining
                                                                              names again: saved_rows.py)
    synonyms      a, b, score
    vocabulary    term                                                     (BM25's, append-only)

Vectors: per vector table a list of parts, ``[ids segment, matrix segment, rows used]``, and for a large chunk or
fact table first a part of its rows stored list by list (``vector_io.py``); the table is the rows of the saved
parts followed by the rows added since (``VectorTable.saved_rows``), so an insert appends one part. A table with
:data:`MAX_SEGMENTS` parts, or one a delete shortened near its start, is written whole again (compaction).
"""

from __future__ import annotations

import json
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import scipy.sparse as sp

from .bm25 import BM25Table, Vocabulary
from .chunk_columns import ChunkColumns
from .entity_columns import EntityColumns
from .fact_columns import SAVED_ROWS, TEXT_KEY, FactColumns, saved_row_columns, with_saved_rows, with_text_keys
from .listed_io import list_count, read_vector_lists, vector_lists_segments, write_vector_lists
from .ngram_columns import doc_freq_of
from .folding import any_gone, first_duplicate, fold_rows, folded_table
from .records import ChunkRecord, EntityRecord, FactRecord, text_key
from .row_overlay import RowOverlay
from .saved_rows import LINK_ROWS, checked_rows, link_row_column, with_link_rows
from .segment_files import MAX_SEGMENTS, SEGMENTS, SegmentWriter, one_array, read_segment, appending
from .synonym_pairs import SynonymPairs, read_segments as read_synonyms, whole_table as whole_synonyms
from .vector_io import read_vector_parts, vector_part_segments, write_vector_parts
from .vectors import VectorTable
from .whole_columns import whole_columns

__all__ = ["MAX_SEGMENTS", "SEGMENTS", "SegmentWriter", "read_tables", "write_tables"]

ROW_TABLES = ("chunks", "chunk_links", "entities", "facts", "synonyms")
VECTOR_TABLES = {"chunks": "chunk_vectors", "entities": "entity_vectors", "facts": "fact_vectors"}  # -> state field
_STR = pa.string()
_LIST_STR = pa.list_(pa.string())
_LIST_I32 = pa.list_(pa.int32())
SCHEMAS = {
    "chunks": pa.schema([("id", _STR), ("gone", pa.bool_()), ("doc_id", _STR), ("title", _STR), ("position", pa.int32()),
                         ("doc_hash", _STR), ("text", pa.large_string()), ("terms", _LIST_I32), ("counts", _LIST_I32)]),
    "chunk_links": pa.schema([("id", _STR), ("gone", pa.bool_()), ("entities", _LIST_STR), (LINK_ROWS, _LIST_I32)]),
    "entities": pa.schema([("key", _STR), ("gone", pa.bool_()), ("surface", _STR), ("type", _STR), ("attributes", _STR)]),
    "facts": pa.schema([("id", _STR), ("gone", pa.bool_()), ("subject", _STR), ("predicate", _STR), ("object", _STR),
                        ("text", _STR), ("kind", _STR), ("chunks", _LIST_STR), (TEXT_KEY, _STR),
                        *((column, pa.int32()) for column in SAVED_ROWS.values())]),
    "synonyms": pa.schema([("a", _STR), ("b", _STR), ("gone", pa.bool_()), ("score", pa.float32())]),
    "vocabulary": pa.schema([("term", _STR)]),
    "ngrams": pa.schema([("key", _STR), ("gone", pa.bool_()), ("df", pa.int32())]),
}
# which table of IndexState.unsaved says what changed in each saved table
_UNSAVED_OF = {"chunks": "chunks", "chunk_links": "chunks", "entities": "entities", "facts": "facts",
               "synonyms": "synonyms"}


# --- writing ------------------------------------------------------------------------------------------------------

#: Rows a whole write turns into records and Python lists at once (:func:`_whole_rows`).
WHOLE_SLICE_ROWS = 50_000


def _segment_limit() -> int | float:
    """Segments a table may have before a save writes it whole again: none while a batched build appends."""
    return float("inf") if appending() else MAX_SEGMENTS


def _whole_rows(state: Any, table: str, keys: list[Any]) -> pa.Table:
    """Every row of ``table`` (``keys``: all of them, in table order), made :data:`WHOLE_SLICE_ROWS` rows at a
    time: a loaded table's rows become records only while their slice is converted (at a million chunks all of
    them at once, texts and BM25 rows as Python objects, were several GB), and the Arrow slices are joined."""
    positions = _chunk_positions(state, keys) if table in ("chunks", "chunk_links") else \
        np.arange(len(keys)) if table == "facts" else None
    if len(keys) <= WHOLE_SLICE_ROWS:
        return _rows(state, table, keys, [], positions)
    parts = []
    for lo in range(0, len(keys), WHOLE_SLICE_ROWS):
        at = positions[lo:lo + WHOLE_SLICE_ROWS] if positions is not None else None
        parts.append(_rows(state, table, keys[lo:lo + WHOLE_SLICE_ROWS], [], at, saved=False))
    whole = pa.concat_tables(parts)
    # the saved rows once for the whole table, not per slice (each reads the whole snapshot: saved_rows.py)
    for name, column in _saved_columns(state, table, len(keys), positions).items():
        whole = whole.set_column(whole.schema.get_field_index(name), name, column)
    return whole


def _saved_columns(state: Any, table: str, n: int, positions, n_gone: int = 0) -> dict[str, pa.Array]:
    """``saved_rows.py``'s columns of ``n`` rows of ``table`` at ``positions`` (None: nulls), after ``n_gone``."""
    return saved_row_columns(state, n, positions, n_gone) if table == "facts" else \
        {LINK_ROWS: link_row_column(state, n, positions, n_gone)} if table == "chunk_links" else {}


def _rows(state: Any, table: str, keys: Iterable[Any], gone: Iterable[Any], positions: list[int] | None = None,
          saved: bool = True) -> pa.Table:
    """``keys``' rows of ``table`` as they are in ``state`` now, after a ``gone`` row for each of ``gone``
    (``positions``: the chunks' rows in BM25's table, or the facts' in table order, when the caller has them);
    ``saved``: with their saved rows (else nulls, which :func:`_whole_rows` fills for the whole table at once)."""
    gone, keys = list(gone), list(keys)
    n_gone = len(gone)
    flags = [True] * n_gone + [False] * len(keys)
    if table == "chunks":
        recs = [state.chunks[c] for c in keys]
        rows = [state.bm25.row(p) for p in (positions if positions is not None else _chunk_positions(state, keys))]
        cols = {"id": gone + keys, "gone": flags,
                "doc_id": [None] * n_gone + [r.doc_id for r in recs],
                "title": [None] * n_gone + [r.title for r in recs],
                "position": [None] * n_gone + [r.position for r in recs],
                "doc_hash": [None] * n_gone + [r.doc_hash for r in recs],
                "text": [None] * n_gone + [r.text for r in recs],
                "terms": [None] * n_gone + [t for t, _ in rows],
                "counts": [None] * n_gone + [c for _, c in rows]}
    elif table == "chunk_links":
        cols = {"id": gone + keys, "gone": flags, "entities": [None] * n_gone + [state.chunks[c].entities for c in keys]}
        if saved and positions is None:
            positions = _chunk_positions(state, keys)
    elif table == "entities":
        recs = [state.entities[k] for k in keys]
        cols = {"key": gone + keys, "gone": flags, "surface": [None] * n_gone + [e.surface for e in recs],
                "type": [None] * n_gone + [e.type for e in recs],
                "attributes": [None] * n_gone + [json.dumps(e.attributes, ensure_ascii=False) if e.attributes else ""
                                                 for e in recs]}
    elif table == "facts":
        recs = [state.facts[f] for f in keys]
        cols = {"id": gone + keys, "gone": flags}
        for name in ("subject", "predicate", "object", "text", "kind"):
            cols[name] = [None] * n_gone + [getattr(f, name) for f in recs]
        cols["chunks"] = [None] * n_gone + [sorted(f.chunks) for f in recs]
        cols[TEXT_KEY] = [None] * n_gone + [text_key(f.text) for f in recs]
        if saved and positions is None and isinstance(state.facts, RowOverlay):
            positions = state.facts.positions(keys)
    else:  # synonyms
        pairs = gone + keys
        cols = {"a": [p[0] for p in pairs], "b": [p[1] for p in pairs], "gone": flags,
                "score": [None] * n_gone + [state.synonyms[p] for p in keys]}
    cols.update(_saved_columns(state, table, len(keys), positions if saved else None, n_gone))
    return pa.Table.from_pydict(cols, schema=SCHEMAS[table])


def _whole_facts(state: Any) -> pa.Table:
    """The loaded facts (unchanged) written whole, with their ends' rows."""
    t = state.facts.arrow()
    t = t.add_column(1, "gone", pa.array(np.zeros(len(t), bool)))
    for name, rows in _saved_columns(state, "facts", len(t), np.arange(len(t))).items():
        t = t.append_column(name, rows)
    return t.cast(SCHEMAS["facts"])


def _in_order(rows: Any, keys: list[Any]) -> list[Any]:
    """The ones of ``keys`` that ``rows`` holds, in its order: placed by a loaded table's overlay (cost: the keys), or
    read off a scan of the rows (a table of records)."""
    if isinstance(rows, RowOverlay):
        return rows.in_order(keys)
    wanted = set(keys)
    return [k for k in rows if k in wanted]


def _chunk_positions(state: Any, keys: list[str]) -> list[int]:
    """Each chunk's row in BM25's table (``chunk_order``): from the chunks overlay's own placement when BM25 follows
    the table's order (as ``derive`` makes it), checked key by key; else from a lookup of the whole order."""
    order = state.bm25.ids
    if isinstance(state.chunks, RowOverlay) and len(order) == len(state.chunks):
        found = state.chunks.positions(keys).tolist()
        if all(order[p] == c for p, c in zip(found, keys)):
            return found
    position = {c: i for i, c in enumerate(state.chunk_order)}
    return [position[c] for c in keys]


def _rows_dict(state: Any, table: str) -> dict:
    return state.chunks if table in ("chunks", "chunk_links") else getattr(state, table)


def write_tables(state: Any, writer: SegmentWriter, base: dict | None, stats: Any = None) -> dict:
    """Write what ``state`` changed since the version whose manifest is ``base`` (None: write everything);
    returns the manifest's ``tables``, ``vectors``, ``vocabulary`` and ``ngrams`` entries. ``stats``: the corpus
    n-gram statistics (``EntityStatistics``), or None when they were not needed since ``base`` was loaded (its
    own are kept)."""
    base_tables = (base or {}).get("tables")
    out: dict[str, Any] = {"tables": {}, "vectors": {}}
    for table in ROW_TABLES:
        segments = list(base_tables[table]) if base_tables else []
        rows = _rows_dict(state, table)
        marks = state.unsaved[_UNSAVED_OF[table]]
        if not base_tables or len(segments) >= _segment_limit():
            whole = (whole_synonyms(rows, SCHEMAS[table]) if table == "synonyms" else _whole_facts(state) if
                     isinstance(rows, FactColumns) else whole_columns(state, table, SCHEMAS[table]))
            if whole is None:
                whole = _whole_rows(state, table, list(rows))
            segments = [writer.table(whole)]
        elif marks:
            # the marked rows in table order, without a scan of every row where the table can place them itself
            if table == "chunks":  # text and BM25 row: written when a chunk is added (or added again) only
                keys = _in_order(rows, [k for k, added in marks.items() if added])
            elif table == "synonyms":
                keys = rows.in_order([k for k in marks if k in rows])
            else:
                keys = _in_order(rows, list(marks))
            gone = [k for k, added in marks.items() if added or k not in rows]
            if keys or gone:
                segments.append(writer.table(_rows(state, table, keys, gone)))
        out["tables"][table] = segments
    vocab = state.bm25.vocab
    saved = vocab.saved if base_tables else None
    vocab_segments = list(base["vocabulary"]) if saved is not None else []
    start = saved if saved is not None else 0
    if len(vocab_segments) >= _segment_limit():
        vocab_segments, start = [], 0
    if len(vocab) > start or not vocab_segments:
        vocab_segments.append(writer.table(pa.Table.from_pydict({"term": vocab.terms[start:]}, schema=SCHEMAS["vocabulary"])))
    out["vocabulary"] = vocab_segments
    for name in VECTOR_TABLES:
        table: VectorTable = getattr(state, VECTOR_TABLES[name])
        out["vectors"][name] = write_vector_parts(name, table, writer, base["vectors"][name] if base_tables else None)
    out.update(_write_statistics(stats, writer, base if base_tables else None))
    tables = {name: getattr(state, attr) for name, attr in VECTOR_TABLES.items()}
    out.update(write_vector_lists(tables, writer))  # large tables' lists
    return out


def _write_statistics(stats: Any, writer: SegmentWriter, base: dict | None) -> dict:
    """The n-gram document frequencies (AGRAG Eq. 2): the base's segments when unchanged, plus one segment of the
    n-grams whose frequency changed, or the whole table."""
    if stats is None:
        return {k: base[k] for k in ("ngrams", "ngram_chunks")}
    segments = list(base.get("ngrams", [])) if base is not None and stats.saved else []
    if segments and len(segments) < _segment_limit():
        keys = sorted(stats.changed)
        if keys:
            dfs = [stats.doc_freq.get(k, 0) for k in keys]
            segments.append(writer.table(pa.Table.from_pydict(
                {"key": keys, "gone": [d <= 0 for d in dfs], "df": [max(d, 0) for d in dfs]}, schema=SCHEMAS["ngrams"])))
    else:
        keys, dfs = (list(c) for c in zip(*stats.doc_freq.items())) if stats.doc_freq else ([], [])
        segments = [writer.table(pa.Table.from_pydict(
            {"key": keys, "gone": [False] * len(keys), "df": dfs}, schema=SCHEMAS["ngrams"]))]
    return {"ngrams": segments, "ngram_chunks": stats.n_chunks}


def read_statistics(segment_folder: Path, manifest: dict, max_ngram: int) -> Any:
    """The n-gram statistics a version saved (None when it saved none: an older version)."""
    from ..extractors.entity_stats import EntityStatistics

    if "ngrams" not in manifest:
        return None
    table = folded_table([read_segment(segment_folder / s) for s in manifest["ngrams"]], "key", SCHEMAS["ngrams"],
                         checked=True)  # doc_freq_of refuses a key listed twice
    stats = EntityStatistics(max_ngram, int(manifest["ngram_chunks"]), doc_freq_of(table))
    stats.saved = True
    return stats


def mark_saved(state: Any) -> None:
    """After a save: nothing is unsaved, and the vectors and vocabulary know which rows the version holds."""
    for marks in state.unsaved.values():
        marks.clear()
    state.bm25.vocab.saved = len(state.bm25.vocab)
    if state.entity_stats is not None:
        state.entity_stats.changed.clear()
        state.entity_stats.saved = True
    for field_name in VECTOR_TABLES.values():
        getattr(state, field_name).mark_saved()


# --- reading ------------------------------------------------------------------------------------------------------

@dataclass
class LoadedTables:
    chunks: ChunkColumns | dict[str, ChunkRecord] = field(default_factory=dict)
    entities: EntityColumns | dict[str, EntityRecord] = field(default_factory=dict)
    facts: FactColumns | dict[str, FactRecord] = field(default_factory=dict)
    synonyms: SynonymPairs = field(default_factory=SynonymPairs)
    bm25: BM25Table | None = None
    vectors: dict[str, VectorTable] = field(default_factory=dict)
    duplicates: list[str] = field(default_factory=list)  # "table: key" read twice within one segment


def listed_segments(manifest: dict) -> set[str]:
    """Every segment name a format-2 manifest's tables, vocabulary, statistics and vectors refer to."""
    names = {n for parts in manifest["tables"].values() for n in parts}
    names |= set(manifest["vocabulary"]) | set(manifest.get("ngrams", []))
    names |= vector_lists_segments(manifest)
    return names | {n for parts in manifest["vectors"].values() for n in vector_part_segments(parts)}


def read_tables(segment_folder: Path, manifest: dict, dim: int) -> LoadedTables:
    """The tables, BM25 and vector tables of a format-2 version (its segments checked by ``storage.py``: only a
    segment listed there with its checksum is read)."""
    unlisted = listed_segments(manifest) - set(manifest.get("segments", {}))
    if unlisted:
        raise ValueError(f"the manifest refers to segment {sorted(unlisted)[0]!r} without listing its checksum")
    read = lambda name: read_segment(segment_folder / name)  # noqa: E731
    entries = manifest["tables"]
    out = LoadedTables()

    # the facts (the largest table) fold in Arrow, without Python's lock, while the entities and chunks are read
    with ThreadPoolExecutor(1) as pool:
        facts = pool.submit(lambda: FactColumns(folded_table(_fact_segments([read(s) for s in entries["facts"]]), "id",
                                                             SCHEMAS["facts"], checked=True)))
        entities = folded_table([read(s) for s in entries["entities"]], "key", SCHEMAS["entities"], checked=True)
        key_array = one_array(entities.column("key"))
        keys = key_array.to_pylist()

        chunk_tables = [read(s) for s in entries["chunks"]]
        chunks = folded_table(chunk_tables, "id", SCHEMAS["chunks"], checked=True)
        chunk_array = one_array(chunks.column("id"))
        chunk_ids = chunk_array.to_pylist()
        links = folded_table(with_link_rows([read(s) for s in entries["chunk_links"]]), "id", SCHEMAS["chunk_links"],
                             checked=True)  # the same keys as the chunks, or checked below
        link_array = one_array(links.column("id"))
        if not link_array.equals(chunk_array):
            if pc.count_distinct(chunk_array).as_py() != len(chunk_array):
                raise ValueError(f"the chunks table lists a key twice ({first_duplicate(chunk_ids)!r})")
            where = pc.index_in(chunk_array, value_set=link_array)
            if len(link_array) != len(chunk_array) or where.null_count or pc.count_distinct(link_array).as_py() != len(link_array):
                raise ValueError("the chunk_links table does not list the chunks of the chunks table")
            links = links.take(where)
        saved = one_array(links.column(LINK_ROWS)) if LINK_ROWS in links.column_names else None
        offsets, codes = _link_codes(one_array(links.column("entities")), key_array, chunk_ids, saved)
        out.chunks = ChunkColumns(chunk_ids, chunks, offsets, codes, keys, key_array=chunk_array)
        out.entities = EntityColumns(keys, *(one_array(entities.column(c)) for c in ("surface", "type", "attributes")),
                                     chunk_ids, offsets, codes, key_array=key_array)  # an entity's chunks: those whose links name it
        out.facts = facts.result()

    out.synonyms = read_synonyms([read(s) for s in entries["synonyms"]], keys, key_array)

    vocab = Vocabulary.of([t for name in manifest["vocabulary"] for t in read(name).column("term").to_pylist()])
    vocab.saved = len(vocab)
    out.bm25 = BM25Table(ids=chunk_ids, vocab=vocab, counts=_bm25_counts(chunk_tables, len(vocab)))

    # a vector table whose ids are its table's keys in order (the usual case for chunks and entities) shares
    # their string objects instead of making its own
    same = {"chunks": (chunk_array, chunk_ids), "entities": (key_array, keys)}
    for name in VECTOR_TABLES:
        id_array, blocks, packed = read_vector_parts(segment_folder, manifest["vectors"][name], read, dim,
                                                     list_count(segment_folder, manifest, name))
        keys_array, key_list = same.get(name, (None, None))
        if id_array is not None and keys_array is not None and id_array.equals(keys_array):
            ids = list(key_list)  # a list of its own (an insert appends to it), of the same strings
        else:
            ids = id_array.to_pylist() if id_array is not None else []
        out.vectors[name] = VectorTable(dim, ids, blocks, id_array=id_array, packed=packed)
    read_vector_lists(segment_folder, manifest, out.vectors, read)
    return out


def _fact_segments(segments: list[pa.Table]) -> list[pa.Table]:
    """The facts segments as one table's: text keys and end rows added where a segment lacks them (saved before they
    were), and the columns in the schema's order whichever order they were added in."""
    order = SCHEMAS["facts"].names
    return [t.select([c for c in order if c in t.column_names]) for t in with_saved_rows(with_text_keys(segments))]


def _link_codes(linked: pa.ListArray, keys: pa.Array, chunk_ids: list[str], saved: pa.ListArray | None = None
                ) -> tuple[np.ndarray, np.ndarray]:
    """What each chunk contains as (offsets per chunk, rows of ``keys``); ValueError naming an unknown entity.
    ``saved``: the rows a save wrote beside the names (``saved_rows.py``), used where they list as many per chunk."""
    offsets = np.asarray(linked.offsets, np.int64)
    flat = linked.values.slice(offsets[0], offsets[-1] - offsets[0])
    guess = None
    if saved is not None and saved.null_count == 0 and np.array_equal(np.diff(np.asarray(saved.offsets, np.int64)),
                                                                      np.diff(offsets)):
        at = np.asarray(saved.offsets, np.int64)
        guess = saved.values.slice(at[0], at[-1] - at[0])
    codes = checked_rows(flat, keys, guess).astype(np.int32)
    if (codes < 0).any():
        at = int(np.flatnonzero(codes < 0)[0])
        cid = chunk_ids[int(np.searchsorted(offsets - offsets[0], at, side="right")) - 1]
        raise ValueError(f"chunk {cid!r} contains unknown entity {flat[at].as_py()!r}")
    return offsets - offsets[0], codes


def _bm25_counts(tables: list[pa.Table], n_terms: int) -> sp.csr_matrix:
    """The chunk x term count matrix, rows in the folded order of the chunks table, from the segments' saved rows
    (no tokenising)."""
    blocks = []
    for t in tables:
        terms, counts = one_array(t.column("terms")), one_array(t.column("counts"))
        indptr = np.asarray(terms.offsets, np.int64)
        if not np.array_equal(indptr, np.asarray(counts.offsets, np.int64)):
            raise ValueError("a chunk's BM25 terms and counts differ in length")
        data = np.asarray(counts.values, np.float32)
        indices = np.asarray(terms.values, np.int32)
        if indices.size and (indices.min() < 0 or indices.max() >= n_terms):
            raise ValueError("a chunk's BM25 row names a term the vocabulary does not have")
        # gone rows have null lists: their offsets repeat, so they are empty rows here
        blocks.append(sp.csr_matrix((data, indices, indptr - indptr[0]), shape=(len(t), n_terms)))
    if not blocks:
        return sp.csr_matrix((0, n_terms), dtype=np.float32)
    if len(tables) == 1 and not any_gone(tables[0]):
        return blocks[0]
    stacked = sp.vstack(blocks, format="csr")
    rows = fold_rows(tables, ("id",), checked=True)  # the chunks table read beside it refuses a key listed twice
    if len(rows) == stacked.shape[0] and (rows == np.arange(len(rows))).all():
        return stacked  # only new chunks were added
    return stacked[rows]
