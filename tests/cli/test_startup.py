"""Start-up cost: what a command imports before it does its work (the timings themselves are in BENCHMARKS.md)."""

from __future__ import annotations

import json
import subprocess
import sys


def _modules_after(code: str) -> set[str]:
    out = subprocess.run([sys.executable, "-c", code + "\nimport sys, json; print(json.dumps(sorted(sys.modules)))"],
                         capture_output=True, text=True, check=True, timeout=120).stdout
    return set(json.loads(out.splitlines()[-1]))


def test_a_cached_onnx_export_is_found_without_torch_or_transformers(tmp_path):
    """Finding the exported MiniLM reads file sizes and a small JSON memo: no torch import (~4 s), no re-hash."""
    model = tmp_path / "model"
    model.mkdir()
    (model / "config.json").write_text("{}")
    (model / "model.safetensors").write_bytes(b"weights")
    cache = tmp_path / "cache"
    code = ("from pathlib import Path\nfrom llama_index_graphrag_suite.embeddings_onnx import _model_digest, export_onnx\n"
            f"d = _model_digest(Path({str(model)!r}), Path({str(cache)!r}))\n"
            f"Path({str(cache)!r}, 'model-' + d + '.onnx').write_bytes(b'graph')\n"
            f"assert export_onnx({str(model)!r}, {str(cache)!r}).name == 'model-' + d + '.onnx'\n")
    loaded = _modules_after(code)
    assert "torch" not in loaded and "transformers" not in loaded
    memo = json.loads((cache / "digests.json").read_text())
    assert len(memo) == 1  # remembered by size and mtime: the next process reads it instead of hashing
    (model / "model.safetensors").write_bytes(b"other weights")  # new weights: a new digest, a new export name
    code2 = ("from pathlib import Path\nfrom llama_index_graphrag_suite.embeddings_onnx import _model_digest\n"
             f"print(_model_digest(Path({str(model)!r}), Path({str(cache)!r})))")
    out = subprocess.run([sys.executable, "-c", code2], capture_output=True, text=True, check=True).stdout.strip()
    assert out not in memo.values() and len(json.loads((cache / "digests.json").read_text())) == 2
