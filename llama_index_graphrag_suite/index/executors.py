"""Where the parallel operations of an insert run: :class:`LocalExecutor` (this process) or, inside
``distributed.ray_build``, :class:`~.distributed.RayRunner` (a Ray cluster).

The insert's steps (``build.py``) hold the logic, once; an executor only says *where* its four parallel operations
(chunk, fit_statistics, run_transformations, embed) run, and a Ray run merges its shards so that the result is the
one the local executor gives (``tests/test_ray_indexing.py``).
"""

from __future__ import annotations

from typing import Any, Protocol, Sequence

import numpy as np
from llama_index.core import Document
from llama_index.core.base.embeddings.base import BaseEmbedding
from llama_index.core.ingestion import run_transformations
from llama_index.core.schema import BaseNode, TextNode, TransformComponent

from ..extractors.entity_stats import EntityStatistics
from .chunking import check_new_documents, chunk_documents

__all__ = ["EMBED_BLOCK", "Executor", "LOCAL", "LocalExecutor"]

EMBED_BLOCK = 8192  # texts per get_text_embedding_batch call (see LocalExecutor.embed)


class Executor(Protocol):
    """Where the parallel operations of a build run (see the module docstring)."""

    def chunk(self, state: Any, documents: Sequence[Document]) -> list[TextNode]: ...

    def fit_statistics(self, stats: EntityStatistics, texts: list[str]) -> None: ...

    def run_transformations(self, nodes: list[BaseNode], extractors: Sequence[TransformComponent],
                            show_progress: bool = False) -> None: ...

    def embed(self, model: BaseEmbedding, texts: list[str], show_progress: bool = False) -> np.ndarray: ...


class LocalExecutor:
    """Every operation in this process."""

    name = "local"

    def chunk(self, state: Any, documents: Sequence[Document]) -> list[TextNode]:
        check_new_documents(state, documents)
        return chunk_documents(state.config, documents)

    def fit_statistics(self, stats: EntityStatistics, texts: list[str]) -> None:
        stats.fit(texts)

    def run_transformations(self, nodes: list[BaseNode], extractors: Sequence[TransformComponent],
                            show_progress: bool = False) -> None:
        run_transformations(nodes, list(extractors), show_progress=show_progress)

    def embed(self, model: BaseEmbedding, texts: list[str], show_progress: bool = False) -> np.ndarray:
        """``get_text_embedding_batch`` over ``texts``, EMBED_BLOCK texts at a time: rows in the order of ``texts``.

        LlamaIndex returns Python lists of floats, about 12 KB per 384-d vector (40x the float32 row): 100,000
        texts at once would hold over a gigabyte of them. Each block is copied into the float32 array at once.
        """
        arr = None
        blocks = range(0, len(texts), EMBED_BLOCK)
        many = len(blocks) > 1
        if show_progress and many:
            from tqdm.auto import tqdm

            blocks = tqdm(blocks, desc=f"Embedding ({EMBED_BLOCK} texts a step)")
        for start in blocks:
            vecs = model.get_text_embedding_batch(texts[start:start + EMBED_BLOCK], show_progress=show_progress and not many)
            if arr is None:
                arr = np.empty((len(texts), len(vecs[0])), dtype=np.float32)
            arr[start:start + len(vecs)] = np.asarray(vecs, dtype=np.float32)
        return arr


LOCAL = LocalExecutor()
