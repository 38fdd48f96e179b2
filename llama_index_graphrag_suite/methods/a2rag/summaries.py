"""A2RAG's offline artefacts: document summaries for the gate (Section III-B-1, Eq. 1) and the map-back π.

* Summaries: one short summary ``s_j`` per document, embedded with the index's model. With an LLM,
  the ``doc_summary`` prompt writes it (``kind="llm"``); LLM-free, the *extractive* summary is the
  title plus the document's first sentences up to a character budget (``kind="extractive"``): in
  encyclopaedic and news text the lead states what the document is about.
  ``gate_score(q) = max_j clip(cos(q, s_j), 0, 1)`` (Eq. 1).
* Map-back ``π : V -> 2^D`` (Eq. 12): an entity node maps to the chunks that contain it (its
  provenance in the index's entity records), a passage node to itself. Stored as a CSR matrix
  (snapshot rows x chunk positions in ``index.chunk_order``), so a set of nodes maps to chunks with
  one sparse product.

Summaries can be saved to a folder (``summaries.json`` + ``summary_vectors.npy``, no pickle, each
file written to a temporary name and renamed) so an LLM summary run is paid for once.
"""

from __future__ import annotations

import json
import logging
import os
import tempfile
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import scipy.sparse as sp

from llama_index.core.prompts import BasePromptTemplate

from ...embeddings import embed_model_name
from ...index.vectors import normalize_rows
from ...text import split_sentences
from ..shared_graph import ChunkPositions, chunk_positions, chunk_rows, entity_rows as shared_entity_rows
from .names import sorted_unique
from .prompts import DOC_SUMMARY_PROMPT

log = logging.getLogger(__name__)
SUMMARY_FORMAT = 1
SUMMARY_JSON, SUMMARY_VECTORS = "summaries.json", "summary_vectors.npy"


def document_texts(index) -> dict[str, tuple[str, str]]:
    """``doc_id -> (title, text)`` rebuilt from the index's chunks in position order (overlaps kept)."""
    by_doc: dict[str, list] = {}
    for rec in index.chunks.values():
        by_doc.setdefault(rec.doc_id, []).append(rec)
    out = {}
    for doc_id, recs in by_doc.items():
        recs.sort(key=lambda r: r.position)
        out[doc_id] = (recs[0].title, "\n".join(r.text for r in recs))
    return out


def extractive_summary(title: str, text: str, max_chars: int = 300) -> str:
    """LLM-free summary: the title, then whole leading sentences while they fit in ``max_chars``.

    The first sentence is always kept (cut at ``max_chars`` if it alone is longer), so no summary is
    empty. A chunk that starts with its title does not repeat it.
    """
    body, title = text.strip(), " ".join(title.split())
    if title and body.startswith(title):
        body = body[len(title):].lstrip()
    parts: list[str] = [title] if title else []
    taken = 0  # sentences of the body taken so far
    for start, end in split_sentences(body):
        sentence = " ".join(body[start:end].split())
        if len(" ".join(parts + [sentence])) <= max_chars:
            parts.append(sentence)
            taken += 1
            continue
        if taken == 0:  # not even the first sentence fits: take as much of it as does
            room = max_chars - len(" ".join(parts)) - (1 if parts else 0)
            parts.append(sentence[: max(0, room)])
        break
    return " ".join(p for p in parts if p) or body[:max_chars]


@dataclass
class DocumentSummaries:
    """Summaries ``S = {s_j}`` and their unit vectors, one per document of the index."""

    doc_ids: list[str]
    texts: list[str]
    kind: str  # "extractive" | "llm" | "mixed" (LLM with extractive fallbacks for failed calls)
    vectors: np.ndarray  # (N, dim) float32, unit rows
    embed_model: str
    llm_failures: int = 0

    def __post_init__(self) -> None:
        if len(self.doc_ids) != len(self.texts) or self.vectors.shape[0] != len(self.doc_ids):
            raise ValueError("summaries: doc_ids, texts and vectors disagree in length")

    def scores(self, query_vec: np.ndarray) -> np.ndarray:
        """γ_j(q): cosine of the query with every summary, clipped to [0, 1]."""
        if not self.doc_ids:
            return np.zeros(0, np.float32)
        return np.clip(self.vectors @ normalize_rows(query_vec)[0], 0.0, 1.0)

    def gate_score(self, query_vec: np.ndarray) -> float:
        """``max_j γ_j(q)`` (the quantity Eq. 1 thresholds); 0 for an empty corpus."""
        s = self.scores(query_vec)
        return float(s.max()) if s.size else 0.0

    # ------------------------------------------------------------------ persistence

    def save(self, folder: str | os.PathLike) -> Path:
        """Write ``summaries.json`` and ``summary_vectors.npy`` under ``folder`` (atomic per file)."""
        folder = Path(folder)
        folder.mkdir(parents=True, exist_ok=True)
        _atomic_write(folder / SUMMARY_VECTORS, lambda f: np.save(f, self.vectors.astype(np.float32), allow_pickle=False))
        meta = {"format": SUMMARY_FORMAT, "kind": self.kind, "embed_model": self.embed_model,
                "dim": int(self.vectors.shape[1]) if self.vectors.ndim == 2 else 0,
                "llm_failures": self.llm_failures, "doc_ids": self.doc_ids, "texts": self.texts}
        _atomic_write(folder / SUMMARY_JSON, lambda f: f.write(json.dumps(meta, ensure_ascii=False).encode()))
        return folder

    @classmethod
    def load(cls, folder: str | os.PathLike) -> "DocumentSummaries":
        folder = Path(folder)
        try:
            meta = json.loads((folder / SUMMARY_JSON).read_text(encoding="utf-8"))
            vectors = np.load(folder / SUMMARY_VECTORS, allow_pickle=False)
        except FileNotFoundError as exc:
            raise FileNotFoundError(f"no saved A2RAG summaries in {folder}") from exc
        except (ValueError, json.JSONDecodeError, UnicodeDecodeError) as exc:
            raise ValueError(f"corrupt A2RAG summaries in {folder}: {exc}") from exc
        if meta.get("format") != SUMMARY_FORMAT:
            raise ValueError(f"A2RAG summaries in {folder} have format {meta.get('format')!r}, expected {SUMMARY_FORMAT}")
        return cls(list(meta["doc_ids"]), list(meta["texts"]), meta["kind"], vectors.astype(np.float32),
                   meta["embed_model"], int(meta.get("llm_failures", 0)))

    def matches(self, index) -> bool:
        """Whether these summaries describe exactly the index's documents with its embed model."""
        docs = {c.doc_id for c in index.chunks.values()}
        return (set(self.doc_ids) == docs and len(self.doc_ids) == len(docs)
                and self.embed_model == embed_model_name(index.embed_model))


def _atomic_write(path: Path, write) -> None:
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as f:
            write(f)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


def build_summaries(index, llm=None, max_chars: int = 300, max_words: int = 60,
                    show_progress: bool = False, prompt: BasePromptTemplate = DOC_SUMMARY_PROMPT) -> DocumentSummaries:
    """One summary per document of ``index``: LLM-written with ``prompt`` when ``llm`` is given, else extractive.

    A failed or empty LLM answer falls back to the extractive summary for that document (counted in
    ``llm_failures``; ``kind`` becomes ``"mixed"``), so one bad call never loses the gate.
    """
    from tqdm.auto import tqdm

    docs = document_texts(index)
    doc_ids = sorted(docs)
    texts, failures = [], 0
    for doc_id in tqdm(doc_ids, desc="A2RAG summaries", disable=not show_progress):
        title, text = docs[doc_id]
        summary = ""
        if llm is not None:
            try:
                summary = " ".join(str(llm.predict(prompt, title=title or "(none)", text=text[:4000],
                                                   max_words=max_words)).split())
            except Exception as exc:  # a dead server or a refusal must not lose the whole gate
                log.warning("A2RAG summary of %s failed (%s); using the extractive summary", doc_id, exc)
            if not summary:
                failures += 1
        texts.append(summary or extractive_summary(title, text, max_chars))
    kind = "extractive" if llm is None else ("llm" if failures == 0 else "mixed")
    if texts:
        vecs = index.embed_model.get_text_embedding_batch(texts, show_progress=show_progress)
        vectors = normalize_rows(np.asarray(vecs, np.float32))
    else:
        vectors = np.zeros((0, 1), np.float32)
    return DocumentSummaries(doc_ids, texts, kind, vectors, embed_model_name(index.embed_model), failures)


def build_mapback(index, entity_rows: np.ndarray | None = None) -> sp.csr_matrix:
    """π as a CSR matrix: row = snapshot node row, column = chunk position in ``index.chunk_order``.

    Entity rows list the chunks that contain the entity (``EntityRecord.chunks``); chunk rows list
    themselves. ``π(S) = union of rows S`` is ``mapback[S].indices``. ``entity_rows``: the snapshot row of every
    entity in ``index.entities`` order (-1: none), when the caller has them.

    A loaded version's tables give what each chunk contains as arrays (the same links its entities' chunk sets are
    read from): the (entity, chunk) pairs come from them whole, no record per entity.
    """
    snap = index.snapshot
    position = ChunkPositions(index)
    pairs = _link_pairs(index, entity_rows)
    if pairs is not None:
        rows, cols = pairs
    else:
        rows, cols = [], []
        for key, ent in index.entities.items():
            if snap.has(key):
                r = snap.row(key)
                for c in ent.chunks:
                    p = position.get(c)
                    if p is not None:
                        rows.append(r)
                        cols.append(p)
    # every chunk row lists itself (CSR from pairs sums repeats and sorts each row, so the pairs' order is free)
    rows = np.concatenate([np.asarray(rows, np.int64), chunk_rows(index).astype(np.int64)])
    cols = np.concatenate([np.asarray(cols, np.int64), np.arange(len(position), dtype=np.int64)])
    data = np.ones(rows.size, np.float32)
    return sp.csr_matrix((data, (rows, cols)), shape=(snap.num_nodes, len(position)))


def _link_pairs(index, entity_rows: np.ndarray | None) -> tuple[np.ndarray, np.ndarray] | None:
    """(entity rows, chunk positions): each entity with every chunk that contains it, once, from a loaded version's
    link arrays; None when the tables are records (a change made them so)."""
    from ...index.chunk_columns import ChunkColumns
    from ...index.entity_columns import EntityColumns

    chunks, entities = index.chunks, index.entities
    if not (isinstance(chunks, ChunkColumns) and isinstance(entities, EntityColumns)):
        return None
    offsets, codes, keys = chunks.links()
    if keys is not entities.key_list():  # the codes are not rows of this entities table
        return None
    if entity_rows is None:
        entity_rows = shared_entity_rows(index)
    ids = chunks.key_list()
    # chunks-table row -> position in chunk_order (-1: none); the table lists them in that order after a load
    where = np.arange(len(ids)) if ids == index.chunk_order else chunk_positions(index, ids)
    e = np.asarray(entity_rows, np.int64)[np.asarray(codes, np.int64)]
    c = where[np.repeat(np.arange(len(ids)), np.diff(offsets))]
    ok = (e >= 0) & (c >= 0)
    n = max(len(index.chunk_order), 1)
    pair = sorted_unique(e[ok] * n + c[ok])  # an entity's chunks are a set: a chunk listing it twice counts once
    return pair // n, pair % n
