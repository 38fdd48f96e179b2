"""The token-window chunker gives TokenTextSplitter's chunks, within chunk_size tokens, with the overlap,
losing no text, on ordinary, empty, whitespace, one-huge-word, non-English and long texts."""

from __future__ import annotations

import json
import random
from pathlib import Path

import pytest
from llama_index.core.node_parser import TokenTextSplitter
from llama_index.core.utils import get_tokenizer

from llama_index_graphrag_suite.index.chunking import TokenChunker

FIXTURES = Path(__file__).parent / "fixtures"
SETTINGS = [(256, 32), (64, 8), (16, 0), (40, 39)]


def fixture_texts() -> list[str]:
    texts = []
    for corpus in sorted(FIXTURES.glob("*/corpus.jsonl")):
        for line in corpus.open(encoding="utf-8"):
            if line.strip():
                row = json.loads(line)
                texts.append(f"{row.get('title', '')}\n\n{row['text']}".strip())
    return texts


def odd_texts() -> list[str]:
    rng = random.Random(3)
    words = "the of Marlow harbour 1901 painter Ada Lorne's — café naïve x\ty ".split(" ")
    return [
        "",
        " ",
        "\n\n \n",
        "word",
        "x" * 5000,  # one huge word: no space, no newline
        "ab3Z" * 900 + " tail words here",
        "北京是中华人民共和国的首都，位于华北平原北部。北京大学和清华大学都在北京。" * 20,
        "Москва — столица России. " * 60,
        "line one\nline two\n" * 150,
        "two  spaces   and\n\n\nnewlines  " * 80,
        "<|endoftext|> special " * 100,  # the splitter's tokenizer allows special tokens
        " ".join(rng.choice(words) for _ in range(3000)),
        "🙂🚀" * 400,
    ]


def all_texts() -> list[str]:
    return fixture_texts() + odd_texts()


@pytest.mark.parametrize("size,overlap", SETTINGS)
def test_same_chunks_as_token_text_splitter(size, overlap):
    theirs = TokenTextSplitter(chunk_size=size, chunk_overlap=overlap)
    ours = TokenChunker(size, overlap)
    for text in all_texts():
        assert ours.split_text(text) == theirs.split_text(text), text[:80]


def test_same_chunks_on_a_long_document():
    text = "\n\n".join(fixture_texts()) * 3
    assert TokenChunker(256, 32).split_text(text) == TokenTextSplitter(chunk_size=256, chunk_overlap=32).split_text(text)


@pytest.mark.parametrize("size,overlap", SETTINGS)
def test_windows_within_size_overlapping_and_lossless(size, overlap):
    tokens = get_tokenizer()
    chunker = TokenChunker(size, overlap)
    for text in all_texts():
        pieces, counts = chunker.pieces(text)
        windows = chunker.windows(counts)
        # no text lost: the pieces are the text, every piece is in a window, each chunk is its window's text
        # less outer whitespace
        assert "".join(pieces) == text
        assert set().union(*(range(lo, hi) for lo, hi in windows)) == set(range(len(pieces)))
        chunks = ["".join(pieces[lo:hi]).strip() for lo, hi in windows]
        assert [c for c in chunks if c] == chunker.split_text(text) or text == ""
        for lo, hi in windows:
            # a window holds at most chunk_size tokens, as the splitter counts them (each piece on its own);
            # only a single character that is alone longer (an emoji at a tiny size) can exceed it
            assert sum(counts[lo:hi]) <= size or hi - lo == 1 and len(pieces[lo]) == 1
        for chunk in chunks:
            # tokenised as a whole, a chunk whose first word lost its leading space to strip() can be a
            # few tokens longer (TokenTextSplitter's chunks are the same)
            assert len(tokens(chunk)) <= size + 4 or len(chunk) == 1, chunk[:80]
        for (lo0, hi0), (lo1, hi1) in zip(windows, windows[1:]):
            # the overlap: the next window starts with the previous one's last pieces, at most chunk_overlap
            # tokens of them (fewer when a whole piece would not fit)
            assert lo0 <= lo1 <= hi0 <= hi1 and sum(counts[lo1:hi0]) <= overlap
            if overlap and lo1 == hi0 and hi0 > lo0:
                assert counts[hi0 - 1] > overlap or sum(counts[hi0 - 1:hi0 + 1]) > size


def test_overlap_is_at_most_chunk_overlap_tokens():
    tokens = get_tokenizer()
    text = " ".join(f"w{i}" for i in range(4000))
    chunks = TokenChunker(50, 10).split_text(text)
    for a, b in zip(chunks, chunks[1:]):
        common = sorted(set(a.split()) & set(b.split()), key=lambda w: int(w[1:]))
        assert common and len(tokens(" " + " ".join(common))) <= 10 + 1


def test_empty_and_whitespace():
    chunker = TokenChunker(64, 8)
    assert chunker.split_text("") == [""]  # as TokenTextSplitter
    assert chunker.split_text("   \n ") == []


def test_bad_settings():
    with pytest.raises(ValueError):
        TokenChunker(0, 0)
    with pytest.raises(ValueError):
        TokenChunker(10, 11)


def test_the_index_chunks_with_it(documents, embed):
    from llama_index_graphrag_suite import GraphRAGIndex, IndexConfig

    index = GraphRAGIndex.from_documents(documents, embed_model=embed,
                                         config=IndexConfig(entities="statistical", chunk_size=16, chunk_overlap=4))
    splitter = TokenTextSplitter(chunk_size=16, chunk_overlap=4)
    for doc in documents:
        title, text = doc.metadata["title"], doc.text.strip()
        body = text if text.startswith(title) else f"{title}\n\n{text}"
        expected = splitter.split_text(body)
        got = [index.chunks[f"{doc.metadata['doc_id']}#{i}"].text for i in range(len(expected))]
        assert got == expected


def test_same_chunks_with_another_tokenizer():
    """Settings.tokenizer (or any callable) is used as TokenTextSplitter uses it."""
    def tokenizer(text):
        return list(text.encode("utf-8"))  # one token per byte

    theirs = TokenTextSplitter(chunk_size=120, chunk_overlap=20, tokenizer=tokenizer)
    ours = TokenChunker(120, 20, tokenizer=tokenizer)
    for text in all_texts()[:40] + odd_texts():
        assert ours.split_text(text) == theirs.split_text(text)
