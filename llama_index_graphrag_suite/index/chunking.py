"""Token-window chunking: the chunks of LlamaIndex's ``TokenTextSplitter``, computed faster on big texts.

``TokenTextSplitter`` (llama_index.core.node_parser.text.token) cuts a text in two steps:

1. *split*: a text of more than ``chunk_size`` tokens is split on spaces (each piece keeps its leading
   space), a piece with no space on newlines, a piece with neither into characters; a piece still too
   long is split again the same way;
2. *merge*: pieces are appended to a window while the sum of their token counts (each piece tokenised on
   its own) stays within ``chunk_size``; a full window is emitted (stripped of outer whitespace) and the
   next one starts with the previous window's last pieces, as many as fit in ``chunk_overlap`` tokens.

Chunks therefore end on word boundaries (not on sentences), and a chunk's size is the sum of its words'
token counts (the stripped chunk tokenised as a whole can be a token or two over ``chunk_size``).

This module computes exactly the same chunks. The splitter is slow on one huge document (22 of 81 s of a
5 MB build): it tokenises every word twice, plus once more for every word dropped from the front of a
window, through pydantic attribute lookups. Here a word's token count is looked up in a dict (words repeat,
so about one word in eight is ever tokenised), and a window is a ``[lo, hi)`` range over the pieces
instead of a list popped from the front (which is quadratic in the window length).
"""

from __future__ import annotations

import logging
from typing import Callable, Sequence

from llama_index.core import Document
from llama_index.core.schema import NodeRelationship, RelatedNodeInfo, TextNode

from ..config import IndexConfig
from ..documents import document_key
from .records import content_hash
from .row_overlay import table_column

log = logging.getLogger(__name__)

_SEPARATORS = (" ", "\n")  # TokenTextSplitter's separator and its backup separator, tried in this order
_CACHE_LIMIT = 2_000_000  # distinct pieces remembered; past this the cache starts again (memory bound)


class TokenChunker:
    """``split_text(text)`` gives ``TokenTextSplitter(chunk_size, chunk_overlap).split_text(text)``.

    ``tokenizer`` defaults to LlamaIndex's global tokenizer (``tiktoken`` ``cl100k_base`` unless the user set
    another), the one ``TokenTextSplitter`` uses. One chunker may split many documents: the token counts
    it has learnt carry over.
    """

    def __init__(self, chunk_size: int, chunk_overlap: int, tokenizer: Callable[[str], list] | None = None):
        if chunk_size <= 0:
            raise ValueError(f"chunk_size must be positive, got {chunk_size}")
        if not 0 <= chunk_overlap <= chunk_size:
            raise ValueError(f"chunk_overlap ({chunk_overlap}) must be between 0 and chunk_size ({chunk_size})")
        if tokenizer is None:
            from llama_index.core.utils import get_tokenizer

            tokenizer = get_tokenizer()
        self.chunk_size = chunk_size
        self.chunk_overlap = chunk_overlap
        self._tokenizer = tokenizer
        self._counts: dict[str, int] = {}

    def count(self, piece: str) -> int:
        """Tokens in ``piece`` tokenised on its own (memoised)."""
        n = self._counts.get(piece)
        if n is None:
            n = len(self._tokenizer(piece))
            if len(self._counts) >= _CACHE_LIMIT:
                self._counts.clear()
            self._counts[piece] = n
        return n

    def split_text(self, text: str) -> list[str]:
        if text == "":
            return [text]  # as TokenTextSplitter does
        pieces, counts = self.pieces(text)
        chunks = ("".join(pieces[lo:hi]).strip() for lo, hi in self.windows(counts))
        return [c for c in chunks if c]

    def pieces(self, text: str) -> tuple[list[str], list[int]]:
        """The text's pieces (step 1) and each one's token count."""
        # The whole text is tokenised once, not cached: it is asked about once (and may be megabytes).
        if len(self._tokenizer(text)) <= self.chunk_size:
            return [text], [self.count(text)]
        pieces: list[str] = []
        counts: list[int] = []
        self._split(text, pieces, counts)
        return pieces, counts

    # ------------------------------------------------------------------ step 1: pieces

    def _split(self, text: str, pieces: list[str], counts: list[int]) -> None:
        """Appends to ``pieces`` the pieces of ``text``, which is more than ``chunk_size`` tokens, and their
        counts: each piece at most ``chunk_size`` tokens, but for a single character that is more."""
        for sep in _SEPARATORS:
            parts = _split_keep_separator(text, sep)
            if len(parts) > 1:
                break
        else:
            parts = list(text)
        if len(parts) == 1:  # one character: it cannot be split further, too long or not
            pieces.append(text)
            counts.append(self.count(text))
            return
        size, known = self.chunk_size, self._counts
        for part in parts:
            n = known.get(part)  # self.count inlined: this loop runs once per word of the document
            if n is None:
                n = self.count(part)
            if n <= size:
                pieces.append(part)
                counts.append(n)
            else:
                self._split(part, pieces, counts)

    # ------------------------------------------------------------------ step 2: windows

    def windows(self, counts: list[int]) -> list[tuple[int, int]]:
        """Greedy windows ``pieces[lo:hi]`` of at most ``chunk_size`` tokens (TokenTextSplitter._merge, with the
        window as an index range). A window's size is the sum of its pieces' counts; the chunk, stripped of
        outer whitespace and tokenised as a whole, can be a token or two longer (a first word that loses its
        leading space may tokenise into more pieces), exactly as with TokenTextSplitter."""
        size, overlap = self.chunk_size, self.chunk_overlap
        out: list[tuple[int, int]] = []
        lo = 0  # the open window is pieces[lo:i]
        cur = 0  # its token count
        oversized = 0
        for i, n in enumerate(counts):
            if n > size:
                oversized += 1
            if cur + n > size:
                out.append((lo, i))
                # The next window keeps the previous one's tail: drop pieces from its front until what is
                # left fits in the overlap and leaves room for this piece.
                while lo < i and (cur > overlap or cur + n > size):
                    cur -= counts[lo]
                    lo += 1
            cur += n
        out.append((lo, len(counts)))
        if oversized:
            log.warning("%d piece(s) longer than chunk_size %d tokens could not be split further (single "
                        "characters); their chunks are longer", oversized, size)
        return out


def _split_keep_separator(text: str, sep: str) -> list[str]:
    """``text`` split on ``sep``, each piece after the first starting with it; empty pieces dropped
    (llama_index's ``split_text_keep_separator``)."""
    parts = text.split(sep)
    return [p for p in [parts[0]] + [sep + s for s in parts[1:]] if p]


# --- documents -> chunk nodes (an insert's first step, also run on Ray workers) ---------------------------

DOC_HASH = "doc_hash"  # chunk-node metadata key carrying the document's content_hash() to its ChunkRecord


def check_new_documents(state, documents: Sequence[Document]) -> None:
    """ValueError naming the first document that is already in the index ``state`` or given twice (insert adds,
    refresh replaces)."""
    seen = set(table_column(state.chunks, "doc_id"))
    for doc in documents:
        doc_id = document_key(doc)[0]
        if doc_id in seen:
            raise ValueError(f"document {doc_id!r} is already in the index; use refresh() to replace it "
                             "(or delete it first)")
        seen.add(doc_id)


def document_body(doc: Document) -> tuple[str, str, str]:
    """``(doc_id, title, body)``: the text the index chunks is the title, a blank line, then the text
    (unless the text starts with its title); "" for an empty document."""
    doc_id, title = document_key(doc)
    text = doc.text.strip()
    if not text:
        return doc_id, title, ""
    return doc_id, title, f"{title}\n\n{text}" if title and not text.startswith(title) else text


def chunk_documents(config: IndexConfig, documents: Sequence[Document]) -> list[TextNode]:
    """The chunk nodes of ``documents`` (``config``'s chunk size and overlap); an empty document is skipped."""
    # TokenTextSplitter's chunks, computed without its per-word re-tokenising (see chunking.py)
    splitter = TokenChunker(config.chunk_size, config.chunk_overlap)
    out: list[TextNode] = []
    for doc in documents:
        doc_id, title, body = document_body(doc)
        if not body:
            log.warning("skipping empty document %s", doc_id)
            continue
        doc_hash = content_hash(title, body)
        for pos, piece in enumerate(splitter.split_text(body)):
            node = TextNode(
                text=piece,
                id_=f"{doc_id}#{pos}",
                metadata={"doc_id": doc_id, "title": title, DOC_HASH: doc_hash},
                relationships={NodeRelationship.SOURCE: RelatedNodeInfo(node_id=doc_id)},
            )
            node.excluded_embed_metadata_keys = ["doc_id", "title", DOC_HASH]
            node.excluded_llm_metadata_keys = ["doc_id", DOC_HASH]
            out.append(node)
    return out
