"""The bundled all-MiniLM-L6-v2 run with ONNX Runtime: the same vectors as sentence-transformers, faster.

Embedding is most of an LLM-free build's time (2wiki_retrieval101: 401 of 502 s with the PyTorch path). ONNX
Runtime runs this small BERT about twice as fast on a CPU (``studies/perf/embed_speed.py`` measures both on one
machine, side by side) and without loading PyTorch at query time. sentence-transformers' own ONNX backend needs
``optimum``, which would pin ``transformers`` below the version the rest of the stack uses, so this module does the
two steps itself:

1. **Export once.** The model folder's weights are exported with ``torch.onnx`` (PyTorch is already installed
   for sentence-transformers) to a per-user cache, named by a digest of the weights and config, and written
   atomically, so concurrent first runs cannot leave a half-written file.
2. **Run.** The fast tokenizer from ``tokenizer.json`` (truncation at the model's ``max_seq_length``), the ONNX
   graph, then the mean pooling over real tokens and L2 normalisation that the model's sentence-transformers
   modules prescribe. Batches are cut by padded tokens rather than by count (texts sorted by length): long chunks
   go a few at a time, short entity names many at a time.

The vectors match sentence-transformers' to float rounding (cosine > 0.9999, checked in the tests), so an index
built with either backend is queried correctly by the other. Documents (not queries) run in bfloat16 on PyTorch
instead where the CPU computes it natively (``embeddings_bf16``).
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import tempfile
import warnings
from pathlib import Path
from typing import Any

import numpy as np
from llama_index.core.base.embeddings.base import BaseEmbedding
from pydantic import Field, PrivateAttr

from .embeddings_batches import padded_inputs, token_batches

log = logging.getLogger(__name__)

__all__ = ["OnnxSentenceEmbedding", "onnx_available", "onnx_cache_dir", "export_onnx"]

_INPUTS = ("input_ids", "attention_mask", "token_type_ids")


def onnx_available() -> bool:
    try:
        import onnxruntime  # noqa: F401
        import tokenizers  # noqa: F401
    except ImportError:
        return False
    return True


def onnx_cache_dir() -> Path:
    """Where exported models live: ``$GRAPHRAG_SUITE_CACHE/onnx`` or ``~/.cache/llama-index-graphrag-suite/onnx``."""
    root = os.environ.get("GRAPHRAG_SUITE_CACHE") or os.path.join(os.path.expanduser("~"), ".cache", "llama-index-graphrag-suite")
    return Path(root) / "onnx"


def _model_digest(model_dir: Path, out_dir: Path | None = None) -> str:
    """A digest of what determines the exported graph: the weights, the model config, the exporter's version.

    Read without importing torch (its version from the package metadata: importing it costs seconds), and
    remembered in ``out_dir`` by file size and modification time, so a query does not hash 90 MB of weights.
    """
    from importlib.metadata import version

    files = [model_dir / name for name in ("config.json", "model.safetensors", "pytorch_model.bin")]
    torch_version = version("torch")
    key = json.dumps([str(model_dir.resolve()), torch_version] +
                     [[p.stat().st_size, p.stat().st_mtime_ns] for p in files if p.exists()])
    memo = (out_dir / "digests.json") if out_dir else None
    known = _read_json(memo) if memo else {}
    if key in known:
        return known[key]
    h = hashlib.sha256(torch_version.encode())
    for path in files:
        if path.exists():
            with open(path, "rb") as fh:
                for block in iter(lambda: fh.read(1 << 20), b""):
                    h.update(block)
    digest = h.hexdigest()[:16]
    if memo is not None:
        try:  # a cache: losing a race or a read-only folder only costs the hashing next time
            memo.parent.mkdir(parents=True, exist_ok=True)
            fd, tmp = tempfile.mkstemp(dir=memo.parent, suffix=".json.partial")
            with os.fdopen(fd, "w", encoding="utf-8") as fh:
                json.dump({**known, key: digest}, fh)
            os.replace(tmp, memo)
        except OSError:
            pass
    return digest


def _read_json(path: Path) -> dict[str, str]:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return {k: v for k, v in data.items() if isinstance(v, str)} if isinstance(data, dict) else {}


def export_onnx(model_dir: str | Path, cache_dir: str | Path | None = None) -> Path:
    """The ONNX file of the transformer in ``model_dir`` (exported on first use, then reused)."""
    model_dir = Path(model_dir)
    out_dir = Path(cache_dir) if cache_dir else onnx_cache_dir()
    target = out_dir / f"{model_dir.name}-{_model_digest(model_dir, out_dir)}.onnx"
    if target.exists():  # the usual case: no torch or transformers import at all
        return target
    import torch
    from transformers import AutoModel, AutoTokenizer

    out_dir.mkdir(parents=True, exist_ok=True)
    log.info("exporting %s to ONNX (once) at %s", model_dir, target)
    model = AutoModel.from_pretrained(str(model_dir)).eval()
    sample = AutoTokenizer.from_pretrained(str(model_dir))(["an example", "a second example sentence"], padding=True,
                                                           return_tensors="pt")

    class _Hidden(torch.nn.Module):
        """Keyword-only call of the transformer, returning only the token states (what pooling reads)."""

        def __init__(self, inner) -> None:
            super().__init__()
            self.inner = inner

        def forward(self, input_ids, attention_mask, token_type_ids):
            return self.inner(input_ids=input_ids, attention_mask=attention_mask,
                              token_type_ids=token_type_ids).last_hidden_state

    fd, tmp = tempfile.mkstemp(dir=out_dir, suffix=".onnx.partial")
    os.close(fd)
    try:
        with torch.no_grad(), warnings.catch_warnings():
            warnings.simplefilter("ignore")  # tracer notes about Python-level branches that the export fixes
            torch.onnx.export(_Hidden(model), tuple(sample[k] for k in _INPUTS), tmp, input_names=list(_INPUTS),
                              output_names=["last_hidden_state"], opset_version=17, dynamo=False,
                              dynamic_axes={k: {0: "batch", 1: "tokens"} for k in (*_INPUTS, "last_hidden_state")})
        os.replace(tmp, target)
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)
    return target


class OnnxSentenceEmbedding(BaseEmbedding):
    """A sentence-transformers model folder (BERT + mean pooling + normalise) run with ONNX Runtime."""

    model_dir: str = Field(description="the sentence-transformers model folder (tokenizer.json, config, weights)")
    max_length: int = Field(default=256, description="tokens per text; longer texts are truncated, as sentence-transformers does")
    max_batch_tokens: int = Field(default=2048, gt=0, description="padded tokens per ONNX batch (texts sorted by length)")
    threads: int = Field(default=0, ge=0, description="ONNX Runtime intra-op threads; 0 = one per core")
    spin: bool = Field(default=False, description="let idle intra-op threads spin waiting for the next operator (ONNX "
                       "Runtime's default) instead of sleeping")
    bulk_precision: str | None = Field(default=None, description="document batches: auto (bfloat16 where the CPU "
                                       "multiplies it natively, embeddings_bf16), float32 or bfloat16; None: "
                                       "GRAPHRAG_SUITE_EMBED_PRECISION, else auto. Queries are always float32")
    _session: Any = PrivateAttr(default=None)
    _tokenizer: Any = PrivateAttr(default=None)
    _bulk: Any = PrivateAttr(default=None)  # the bfloat16 encoder, False for float32, None until first needed

    def __init__(self, model_dir: str, onnx_path: str | None = None, **kwargs: Any) -> None:
        config = Path(model_dir) / "sentence_bert_config.json"
        if "max_length" not in kwargs and config.exists():
            kwargs["max_length"] = int(json.loads(config.read_text()).get("max_seq_length", 256))
        super().__init__(model_dir=str(model_dir), **kwargs)
        import onnxruntime as ort
        from tokenizers import Tokenizer

        path = onnx_path or str(export_onnx(model_dir))
        options = ort.SessionOptions()
        options.intra_op_num_threads = self.threads or (os.cpu_count() or 1)
        options.log_severity_level = 3
        # Spinning threads burn a core between operators and after a call: a query process, which goes on in
        # Python after one short encode, pays for it, and so does a build on a shared machine (measured in
        # studies/perf/results/cli_query_wall.md). The vectors are bit-identical either way.
        options.add_session_config_entry("session.intra_op.allow_spinning", "1" if self.spin else "0")
        try:
            self._session = ort.InferenceSession(path, options, providers=["CPUExecutionProvider"])
        except Exception as exc:  # a damaged cache file: export again rather than fail the build
            log.warning("ONNX model %s unreadable (%s); exporting again", path, exc)
            os.unlink(path)
            self._session = ort.InferenceSession(str(export_onnx(model_dir)), options, providers=["CPUExecutionProvider"])
        tok = Tokenizer.from_file(str(Path(model_dir) / "tokenizer.json"))
        tok.enable_truncation(self.max_length)
        tok.no_padding()
        self._tokenizer = tok

    @classmethod
    def class_name(cls) -> str:
        return "OnnxSentenceEmbedding"

    def _tokenize(self, texts: list[str]) -> tuple[list[Any], list[list[int]]]:
        """The texts' encodings and their batches (:func:`token_batches`)."""
        encodings = self._encodings(texts)
        return encodings, token_batches([len(e.ids) for e in encodings], self.max_batch_tokens)

    def _encodings(self, texts: list[str]) -> list[Any]:
        """The texts tokenized (truncated, unpadded); a blank text as one space, which BERT reads as [CLS] [SEP]."""
        return self._tokenizer.encode_batch([t if t.strip() else " " for t in texts])

    def encode_float32(self, texts: list[str]) -> np.ndarray:
        """Unit float32 vectors of ``texts`` from the ONNX graph (queries, and documents where not bfloat16)."""
        out = np.zeros((len(texts), 0), np.float32)
        if not texts:
            return out
        encodings, batches = self._tokenize(texts)
        for batch in batches:
            feed = dict(zip(_INPUTS, padded_inputs(encodings, batch, len(encodings[batch[-1]].ids))))
            hidden = self._session.run(None, feed)[0]
            mask = feed["attention_mask"][..., None].astype(np.float32)
            vecs = (hidden * mask).sum(axis=1) / np.clip(mask.sum(axis=1), 1e-9, None)
            vecs /= np.clip(np.linalg.norm(vecs, axis=1, keepdims=True), 1e-12, None)
            if out.shape[1] == 0:
                out = np.zeros((len(texts), vecs.shape[1]), np.float32)
            out[batch] = vecs
        return out

    def encode_documents(self, texts: list[str]) -> np.ndarray:
        """Unit vectors of many document texts: in bfloat16 on PyTorch when :attr:`bulk_precision` resolves so
        (``embeddings_bf16``), else :meth:`encode_float32`'s float32."""
        if not texts:
            return np.zeros((0, 0), np.float32)
        if self._bulk is None:
            from .embeddings_bf16 import Bf16Encoder, resolve_precision

            if resolve_precision(self.bulk_precision) == "bfloat16":
                self._bulk = Bf16Encoder(self.model_dir, self.threads or (os.cpu_count() or 1))
            else:
                self._bulk = False
        if self._bulk is False:
            return self.encode_float32(texts)
        return self._bulk.encode(self._encodings(texts))

    def _get_query_embedding(self, query: str) -> list[float]:
        return self.encode_float32([query])[0].tolist()

    async def _aget_query_embedding(self, query: str) -> list[float]:
        return self._get_query_embedding(query)

    def _get_text_embedding(self, text: str) -> list[float]:
        return self.encode_documents([text])[0].tolist()  # a document, as in a batch: the same vector either way

    def _get_text_embeddings(self, texts: list[str]) -> list[list[float]]:
        return self.encode_documents(texts).tolist()
