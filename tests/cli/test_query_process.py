"""One `graphrag-suite query` process: what it imports, and how it ends (timings are in studies/perf/results/).

The CLI module and its parsers import nothing heavy; a query imports only what its method and the index need
(no PyTorch or transformers for the bundled MiniLM, which runs on ONNX Runtime; no spaCy, networkx or numba for
the hybrid baseline); run as the program it leaves without the interpreter's teardown, with the same output,
exit status and exit handlers as an ordinary exit.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
ENV = {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in (str(ROOT), os.environ.get("PYTHONPATH", "")) if p),
       "HF_HUB_OFFLINE": "1"}
# Never needed to parse a command line or to run a query of a baseline.
HEAVY = ("torch", "transformers", "sentence_transformers", "spacy", "networkx", "numba", "sklearn", "langchain_core",
         "langgraph")
# Needed by a query, but not to import the CLI or build its parsers (`graphrag-suite --help`).
QUESTION = "Who designed the theatre where the opera 'The Salt Crown' premiered?"  # examples/data, q02
QUERY_ONLY = ("llama_index", "numpy", "scipy", "faiss", "onnxruntime", "pyarrow", "pandas", "pydantic")


def _python(code: str, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", code, *args], capture_output=True, text=True, env=ENV, timeout=300,
                          cwd=ROOT)


def _modules_after(code: str) -> set[str]:
    proc = _python(code + "\nimport sys, json; print(json.dumps(sorted(sys.modules)))")
    assert proc.returncode == 0, proc.stderr
    return set(json.loads(proc.stdout.splitlines()[-1]))


def _loaded(modules: set[str], packages: tuple[str, ...]) -> list[str]:
    return sorted(p for p in packages if any(m == p or m.startswith(p + ".") for m in modules))


def test_importing_the_cli_and_parsing_a_query_imports_nothing_heavy():
    modules = _modules_after("from llama_index_graphrag_suite.cli import build_parser\n"
                             "build_parser().parse_args(['query', 'IDX', 'a question', '--method', 'agrag'])")
    assert _loaded(modules, HEAVY + QUERY_ONLY) == []


def test_a_hybrid_query_imports_no_model_library_nlp_pipeline_or_compiler(demo_index):
    modules = _modules_after("import gc\nfrom llama_index_graphrag_suite.cli import main\n"
                             f"assert main(['query', {str(demo_index)!r}, {QUESTION!r}, '--quiet']) == 0\n"
                             "assert gc.isenabled()  # called with argv: the caller's collector is left alone")
    assert _loaded(modules, HEAVY) == []
    assert "scipy.sparse.csgraph" not in modules  # PageRank's ordering: HippoRAG's, not the baselines'


@pytest.mark.parametrize("numba", ["", "1"])
def test_a_pagerank_query_runs_on_scipy_unless_numba_is_asked_for(demo_index, numba):
    """One question does not pay for numba's start-up; GRAPHRAG_SUITE_NUMBA=1 keeps it (the demo graph takes the
    fast form here by lowering its threshold)."""
    pytest.importorskip("numba")
    modules = _modules_after("import os\nfrom llama_index_graphrag_suite.graph import ppr\n"
                             "from llama_index_graphrag_suite.cli import main\n"
                             f"if {numba!r}: os.environ['GRAPHRAG_SUITE_NUMBA'] = {numba!r}\n"
                             "ppr.FAST_MIN_NNZ = 0\n"
                             f"assert main(['query', {str(demo_index)!r}, {QUESTION!r}, '--method', 'hipporag', "
                             "'--quiet']) == 0")
    assert "scipy.sparse.csgraph" in modules  # the fast form was made
    assert ("numba" in modules) == bool(numba)


def test_the_query_command_leaves_the_callers_environment_as_it_was(demo_index, monkeypatch):
    from llama_index_graphrag_suite.cli import main

    monkeypatch.delenv("GRAPHRAG_SUITE_NUMBA", raising=False)
    assert main(["query", str(demo_index), QUESTION, "--method", "hipporag", "--quiet"]) == 0
    assert "GRAPHRAG_SUITE_NUMBA" not in os.environ


def test_the_program_prints_what_main_returns_and_ends_with_its_status(demo_index):
    """Through a pipe (block-buffered stdout), the fast exit loses nothing; a failure keeps status 2 and its line."""
    for args, status in (([str(demo_index), QUESTION, "--method", "hipporag", "--quiet"], 0),
                         ([str(demo_index), QUESTION, "--method", "nosuch", "--quiet"], 2)):
        program = subprocess.run([sys.executable, "-m", "llama_index_graphrag_suite.cli", "query", *args],
                                 capture_output=True, text=True, env=ENV, timeout=300, cwd=ROOT)
        called = _python("import sys\nfrom llama_index_graphrag_suite.cli import main\nrc = main(['query', *sys.argv[1:]])\n"
                         "sys.stdout.flush(); print('RC', rc)", *args)
        assert program.returncode == status
        out, rc = called.stdout.rsplit("RC ", 1)
        assert int(rc) == status and program.stderr == called.stderr
        strip = lambda text: [line.split("  (")[0] for line in text.splitlines()]  # noqa: E731 - the ms differ
        assert strip(program.stdout) == strip(out) and (status != 0 or "evidence:" in program.stdout)


def test_the_fast_exit_runs_exit_handlers_and_waits_for_threads(tmp_path):
    marker = tmp_path / "handler-ran"
    code = ("import atexit, sys\nfrom llama_index_graphrag_suite.cli import exit_without_teardown\n"
            f"atexit.register(lambda: open({str(marker)!r}, 'w').write('yes'))\nprint('out', end='')\n"
            "exit_without_teardown(3)\nsys.exit(9)")
    proc = _python(code)
    assert (proc.returncode, proc.stdout, marker.read_text()) == (3, "out", "yes")
    # another thread still running: the ordinary exit (which waits for it) is kept
    code = ("import threading, time, sys\nfrom llama_index_graphrag_suite.cli import exit_without_teardown\n"
            "t = threading.Thread(target=lambda: (time.sleep(0.3), print('thread done', flush=True)))\nt.start()\n"
            "exit_without_teardown(3)\nsys.exit(4)")
    proc = _python(code)
    assert (proc.returncode, proc.stdout) == (4, "thread done\n")


def test_a_minilm_query_runs_without_torch(tmp_path):
    """The bundled MiniLM answers a query on ONNX Runtime (exported once, as the first build does)."""
    pytest.importorskip("onnxruntime")
    from llama_index_graphrag_suite.embeddings import bundled_minilm_path

    if bundled_minilm_path() is None:
        pytest.skip("the bundled MiniLM (extra `offline`) is not installed")
    index = tmp_path / "index"
    corpus = tmp_path / "corpus.jsonl"
    shutil.copy(ROOT / "examples" / "data" / "corpus.jsonl", corpus)
    built = subprocess.run([sys.executable, "-m", "llama_index_graphrag_suite.cli", "index", str(corpus), "--out",
                            str(index), "--entities", "statistical", "--quiet"], capture_output=True, text=True,
                           env=ENV, timeout=600, cwd=ROOT)
    assert built.returncode == 0, built.stderr
    # the model is made once, on the loader's thread, while the main thread imports the method and reads the tables
    modules = _modules_after("import threading\nfrom llama_index_graphrag_suite import embeddings\n"
                             "from llama_index_graphrag_suite.cli import main\n"
                             "made, resolve = [], embeddings.resolve_embed_model\n"
                             "def recorded(spec=None, *a, **k):\n"
                             "    if not isinstance(spec, embeddings.BaseEmbedding):\n"
                             "        made.append(threading.current_thread().name)\n"
                             "    return resolve(spec, *a, **k)\n"
                             "embeddings.resolve_embed_model = recorded\n"
                             f"assert main(['query', {str(index)!r}, {QUESTION!r}, '--quiet']) == 0\n"
                             "assert made == ['embed-model'], made")
    assert "onnxruntime" in modules and _loaded(modules, ("torch", "transformers", "sentence_transformers")) == []


def test_a_model_that_fails_on_the_loader_thread_is_left_to_the_load(demo_index, monkeypatch):
    import argparse
    import threading

    from llama_index_graphrag_suite import embeddings
    from llama_index_graphrag_suite.cli import common

    resolve = embeddings.resolve_embed_model

    def failing_on_the_thread(spec=None, *args, **kwargs):
        if threading.current_thread().name == "embed-model":
            raise RuntimeError("no model here")
        return resolve(spec, *args, **kwargs)

    monkeypatch.setattr(embeddings, "resolve_embed_model", failing_on_the_thread)
    monkeypatch.setattr(common, "_check_saved_embed", lambda args: "all-MiniLM-L6-v2")  # a thread is started
    args = argparse.Namespace(index_dir=str(demo_index), embed=None, version=None)
    loader = common.EmbedModelLoader(args)
    assert loader._thread is not None and loader.model() is None
    index = common.load_index(args, embed=loader)  # the manifest's own model (hash), as without the loader
    assert index.state.embed_model.class_name() == "HashEmbedding"
