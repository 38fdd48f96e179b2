"""Building an index larger than memory: documents in batches, each inserted and saved, the tables reloaded.

A build in one insert holds every chunk, entity and fact of the corpus as records until it is saved (about 16 KB
per passage on the synthetic corpus, plus what the extractors leave behind). :func:`build_in_batches` inserts
``batch_size`` documents at a time into the saved index instead: after each batch the index is saved (a save
writes the rows the batch changed as new segments) and loaded again, so the tables are read-only columns and
memory-mapped vectors, and only the rows the next batch reaches become records (``row_overlay.py``). Memory is
then bounded by one batch and the loaded columns, not by the corpus.

With ``ray_address`` each batch's chunking, extraction and embedding are sharded over a Ray cluster
(``distributed.py``), and the driver holds one batch's records and the loaded columns, never the corpus: the
index is the one the same batches make in one process (``tests/index/test_ray_cluster.py``).

The build can be resumed: run it again on the same folder and the documents the saved index already holds are
skipped. A batched build is a sequence of inserts, so its index is the one those inserts make (the n-gram
statistics, the known names and the synonym search see the corpus as it grows), not byte for byte a one-insert
build of the same documents.
"""

from __future__ import annotations

import contextlib
import gc
import logging
import time
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import Any

from llama_index.core import Document

from ..documents import document_key
from .collector import collector_paused
from .row_overlay import table_column
from .compaction_hint import without_compaction_hint
from .segment_files import appending_segments
from .storage import CURRENT

log = logging.getLogger(__name__)

__all__ = ["build_in_batches"]


def _batches(documents: Iterable[Document], size: int, skip: set[str]) -> Iterator[list[Document]]:
    batch: list[Document] = []
    for doc in documents:
        if document_key(doc)[0] in skip:
            continue
        batch.append(doc)
        if len(batch) == size:
            yield batch
            batch = []
    if batch:
        yield batch


def _running_counts(state) -> tuple:
    """The corpus counts an insert keeps up to date (n-gram document frequencies, how each word is written), as
    they stand after a save: what a load would otherwise read back whole (statistics) or count again from every
    chunk text (word counts) before the next batch, a cost that grows with the index, not the batch."""
    return state.entity_stats, state.name_words, len(state.chunks)


def _hand_over(counts: tuple, state) -> None:
    """Give the loaded ``state`` the counts its save wrote (the same values a load computes: the statistics
    equal the saved ones, the word counts those of the chunk texts), when they describe its chunks."""
    stats, words, chunks = counts
    if chunks != len(state.chunks):
        return
    if stats is not None and stats.n_chunks == chunks and not stats.changed:
        state.entity_stats = stats  # its n-grams' order aside: a set's, which no run ever kept
    if words is not None:
        state.name_words = words


def build_in_batches(documents: Iterable[Document], persist_dir: str | Path, batch_size: int = 50_000, *,
                     resume: bool = True, keep_versions: int | None = None,
                     on_batch: Callable[[int, int, float], None] | None = None, ray_address: str | None = None,
                     compact: bool = True, **kwargs: Any):
    """Index ``documents`` (any iterable: a stream is read one batch at a time) into ``persist_dir``, ``batch_size``
    documents per insert, saving after each; returns the index loaded from the last save.

    ``kwargs``: as for :class:`~.graph_index.GraphRAGIndex` (``embed_model``, ``config``, ``llm``, ...), used for
    the first batch; later batches use what the saved index records. When ``persist_dir`` already holds an index,
    the build goes on from it (documents it holds are skipped), or with ``resume=False`` replaces it (the first
    batch's save is a new version of the folder). ``keep_versions``: as for ``persist``. ``on_batch(batch number,
    documents so far, seconds)`` is called after each save. ``ray_address`` (``"local"``, ``"auto"``,
    ``"ray://host:10001"``): each batch's per-chunk work runs on that Ray cluster, started once for the build.
    ``compact``: after more than one batch, save the index once more with every table written whole
    (``persist(compact=True)``): each batch's save appended its rows, and a query reads appended vectors one row
    at a time; the compacted index reads them list by list, as a build in one insert does. A build into a new
    folder keeps only that last version (the ones before it are its batches), unless ``keep_versions`` is given.
    """
    from .graph_index import GraphRAGIndex

    if batch_size < 1:
        raise ValueError(f"batch_size must be at least 1, not {batch_size}")
    folder = Path(persist_dir)
    index = None
    done: set[str] = set()
    reopen = {"llm": kwargs.get("llm"), "store": kwargs.get("store")}
    saving = {} if keep_versions is None else {"keep_versions": keep_versions}
    new_folder = not (folder / CURRENT).exists()
    if resume and (folder / CURRENT).exists():  # what the saved index holds is done
        index = GraphRAGIndex.load(folder, embed_model=kwargs.get("embed_model"), **reopen)
        done = set(table_column(index.state.chunks, "doc_id"))
        log.info("%s holds %d documents: going on from there", folder, len(done))
    held = first = len(done)
    batches = 0
    with contextlib.ExitStack() as session:
        if ray_address:
            from .distributed import ray_session

            session.enter_context(ray_session(ray_address))
        if compact:  # the batches append their rows; the end writes every table whole, once
            session.enter_context(appending_segments())
        # No cyclic collection while a batch is read, inserted and saved: its passes would walk the batch's records
        # again and again to find little garbage. One collection after each batch takes what cycles it left.
        session.enter_context(collector_paused())
        for number, batch in enumerate(_batches(documents, batch_size, done), 1):
            start = time.perf_counter()
            saved = _save(_insert(index, batch, ray_address, kwargs), folder, saving)
            del index  # here, not in a helper: the caller's name would keep the records alive
            gc.collect()  # the batch's records (and its cycles) go before the columns are read back
            with without_compaction_hint():  # the build compacts at its end (unless told not to)
                index = _load_back(folder, saved, reopen)
            held += len(batch)
            if on_batch is not None:
                on_batch(number, held, time.perf_counter() - start)
            log.info("batch %d: %d documents indexed and saved", number, held)
            batches = number
    if index is None:
        raise ValueError("no documents to index")
    if compact and batches and (batches > 1 or first):  # rows were appended to a saved index
        start = time.perf_counter()
        # a new build's earlier versions are its batches: only the compacted one is kept, unless asked otherwise
        kept = {"keep_versions": 1} if new_folder and keep_versions is None else saving
        saved = _save(index, folder, {**kept, "compact": True})
        del index
        gc.collect()
        index = _load_back(folder, saved, reopen)
        log.info("%s compacted in %.1f s", folder, time.perf_counter() - start)
    return index


def _save(index, folder: Path, saving: dict) -> tuple:
    """Save ``index`` into ``folder``; returns what loading it back needs besides the folder."""
    index.persist(folder, **saving)
    return index.embed_model, _running_counts(index.state)


def _load_back(folder: Path, saved: tuple, reopen: dict):
    """The index :func:`_save` saved, loaded from its folder, with the running counts the save wrote."""
    from .graph_index import GraphRAGIndex

    embed_model, counts = saved
    index = GraphRAGIndex.load(folder, embed_model=embed_model, **reopen)
    _hand_over(counts, index.state)
    return index


def _insert(index, batch: list[Document], ray_address: str | None, kwargs: dict):
    """``batch`` into ``index`` (a new index for the first batch), its per-chunk work on Ray when asked."""
    from .graph_index import GraphRAGIndex

    if index is None:
        return GraphRAGIndex.from_documents(batch, ray_address=ray_address, **kwargs)
    if ray_address:
        from .distributed import ray_build

        with ray_build(index, ray_address):
            index.insert(batch)
    else:
        index.insert(batch)
    return index

