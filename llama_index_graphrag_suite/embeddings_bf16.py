"""Document batches of the bundled MiniLM in bfloat16, on CPUs that multiply bfloat16 natively.

Embedding is most of an LLM-free build. On a CPU with AMX or AVX512-BF16 units, PyTorch's autocast runs the
transformer's matrix products in bfloat16 (products accumulated in float32; layer norms, softmax and the pooling
stay float32) for about 2.5x less CPU than ONNX Runtime's float32. The vectors keep a cosine above 0.9999 to the
float32 ones (``studies/perf/embed_precision.py`` measures both, and the recall of every method on the shared sets).
Queries stay on ONNX Runtime in float32: one short text, where loading PyTorch would cost more than it saves.

Batches run on a pool of Python threads, one PyTorch thread each, rather than on PyTorch's own thread pool: its
OpenMP threads wait for each other at every operator, and on a machine whose other cores are busy a build then
slowed down several times over (measured on 2 cores); a thread per batch degrades to one core's speed instead.
"""

from __future__ import annotations

import importlib.util
import logging
import os
import threading
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import numpy as np

from .embeddings_batches import padded_inputs

log = logging.getLogger(__name__)

__all__ = ["BATCH_TOKENS", "PRECISIONS", "Bf16Encoder", "batch_width", "bf16_native", "resolve_precision"]

#: ``auto``: bfloat16 where :func:`bf16_native`, else float32.
PRECISIONS = ("auto", "float32", "bfloat16")

_TORCH_LOCK = threading.Lock()  # torch's thread count is process-wide: one encoder at a time sets and restores it


def bf16_native() -> bool:
    """Whether PyTorch is installed and this CPU multiplies bfloat16 in hardware (AMX tiles or AVX512-BF16).

    Elsewhere autocast still works, converting in software, and is slower than float32: never chosen by ``auto``.
    """
    if importlib.util.find_spec("torch") is None:
        return False
    try:
        import torch

        return bool(torch.cpu._is_amx_tile_supported() or torch.cpu._is_avx512_bf16_supported())
    except Exception:  # an older torch without the probes: do not guess
        return False


def resolve_precision(precision: str | None = None) -> str:
    """``float32`` or ``bfloat16`` for a setting of :data:`PRECISIONS`; without one, ``GRAPHRAG_SUITE_EMBED_PRECISION``,
    else ``auto``."""
    value = (precision or os.environ.get("GRAPHRAG_SUITE_EMBED_PRECISION") or "auto").strip().lower()
    if value not in PRECISIONS:
        raise ValueError(f"embedding precision must be one of {', '.join(PRECISIONS)}, not {value!r} "
                         "(GRAPHRAG_SUITE_EMBED_PRECISION or the model's bulk_precision)")
    if value == "auto":
        return "bfloat16" if bf16_native() else "float32"
    if value == "bfloat16" and importlib.util.find_spec("torch") is None:
        raise ImportError("bfloat16 document embeddings need PyTorch: pip install the package's 'offline' extra")
    return value


#: Tokens of a bfloat16 batch (rows x width). Every batch of a width has the same row count, so the last one of each
#: width is filled up: a budget this small bounds that waste (a one-document insert pays about a second for it) and
#: runs as fast as 2048 (studies/perf/results/embed_precision.md).
BATCH_TOKENS = 1024


def batch_width(tokens: int) -> int:
    """The width of the batches a text of ``tokens`` tokens runs in: rounded up to a step of an eighth of it at
    most (exact below 16 tokens, then steps of 2, 4, 8 ...), so padding adds under 1/8 and there are few widths."""
    step = 1 << max(0, max(tokens, 1).bit_length() - 4)
    return -(-max(tokens, 1) // step) * step


class Bf16Encoder:
    """The transformer of a sentence-transformers folder on PyTorch under bfloat16 autocast, with the same
    tokenizer, mean pooling and normalisation as :class:`~.embeddings_onnx.OnnxSentenceEmbedding`."""

    def __init__(self, model_dir: str, workers: int, max_batch_tokens: int = BATCH_TOKENS) -> None:
        import torch
        from transformers import AutoModel

        self._torch = torch
        self.model = AutoModel.from_pretrained(model_dir).eval()
        self.workers = max(1, workers)
        self.max_batch_tokens = max_batch_tokens

    def batches(self, lengths: list[int]) -> list[tuple[int, list[int]]]:
        """``(width, positions)`` of every batch: a text of n tokens goes into a batch :func:`batch_width` (n) wide and
        ``max_batch_tokens // width`` rows tall (the last batch of a width is filled up by :meth:`encode`).

        Every text is thus run in a batch of one shape that its own length fixes. PyTorch's kernels pick their
        blocking by shape (the row count as well as the width), and in bfloat16 a different blocking rounds
        differently: with batches that depended on the other texts, a text's vector changed (up to 1e-3) with what it
        was embedded beside, and a build in batches, a resumed build or one sharded on Ray would not give the same
        index as one build in one go. Its row in the batch does not matter.
        """
        by_width: dict[int, list[int]] = {}
        for i, n in enumerate(lengths):
            by_width.setdefault(batch_width(n), []).append(i)
        out = []
        for width in sorted(by_width):
            rows = max(1, self.max_batch_tokens // width)
            members = by_width[width]
            out.extend((width, members[k:k + rows]) for k in range(0, len(members), rows))
        return out

    def encode(self, encodings: list[Any]) -> np.ndarray:
        """Unit vectors of the tokenized texts ``encodings`` (``tokenizers`` encodings, unpadded); rows in their
        order."""
        torch = self._torch
        out = np.zeros((len(encodings), self.model.config.hidden_size), np.float32)

        def run(job: tuple[int, list[int]]) -> tuple[list[int], np.ndarray]:
            width, batch = job
            rows = max(1, self.max_batch_tokens // width)
            # rows past the batch repeat its first text (their vectors are dropped)
            feed = torch.from_numpy(padded_inputs(encodings, batch, width, rows))
            with torch.inference_mode(), torch.autocast("cpu", dtype=torch.bfloat16):
                hidden = self.model(input_ids=feed[0], attention_mask=feed[1], token_type_ids=feed[2]).last_hidden_state
            weights = feed[1][:len(batch), :, None].float()
            vecs = (hidden[:len(batch)].float() * weights).sum(dim=1) / weights.sum(dim=1).clamp(min=1e-9)
            vecs = vecs / vecs.norm(dim=1, keepdim=True).clamp(min=1e-12)
            return batch, vecs.numpy()

        with _TORCH_LOCK:
            before = torch.get_num_threads()
            torch.set_num_threads(1)
            try:
                with ThreadPoolExecutor(self.workers) as pool:
                    for batch, vecs in pool.map(run, self.batches([len(e.ids) for e in encodings])):
                        out[batch] = vecs
            finally:
                torch.set_num_threads(before)
        return out
