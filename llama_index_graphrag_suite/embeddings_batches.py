"""Batches of tokenized texts for the bundled BERT, shared by its float32 (ONNX Runtime) and bfloat16 (PyTorch) paths."""

from __future__ import annotations

from typing import Any

import numpy as np

__all__ = ["padded_inputs", "token_batches"]


def token_batches(lengths: list[int], max_tokens: int) -> list[list[int]]:
    """Positions of texts of ``lengths`` tokens grouped into batches, shortest texts first, each batch as large as
    its padded size (count x its longest) allows within ``max_tokens`` (a text longer than that alone): long
    chunks go a few at a time, short entity names many at a time, and little is spent on padding."""
    order = sorted(range(len(lengths)), key=lengths.__getitem__)
    batches, start = [], 0
    while start < len(order):
        end = start + 1
        while end < len(order) and (end - start + 1) * lengths[order[end]] <= max_tokens:
            end += 1
        batches.append(order[start:end])
        start = end
    return batches


def padded_inputs(encodings: list[Any], batch: list[int], width: int, rows: int | None = None) -> np.ndarray:
    """The BERT inputs of ``encodings[batch]`` as one int64 array ``(3, rows, width)``: input ids, attention mask,
    token types, zero-padded. ``rows`` past the batch (default: none) repeat its first text."""
    rows = len(batch) if rows is None else rows
    out = np.zeros((3, rows, width), np.int64)
    for row in range(rows):
        enc = encodings[batch[row] if row < len(batch) else batch[0]]
        n = len(enc.ids)
        out[0, row, :n], out[1, row, :n], out[2, row, :n] = enc.ids, enc.attention_mask, enc.type_ids
    return out
