"""The package's shape: no import cycle, every module imports in a fresh interpreter, no oversized module.

The cycle check reads every ``import`` / ``from ... import`` statement in the package (function-local
ones included, since a cycle held together by a local import is still a cycle) and looks for a strongly
connected component in the module graph.
"""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import networkx as nx
import pytest

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = ("llama_index_graphrag_suite", "langgraph_agents")
MAX_LINES = 420  # "no module over ~400 lines"


def _modules() -> dict[str, Path]:
    out = {}
    for pkg in PACKAGES:
        for path in sorted((ROOT / pkg).rglob("*.py")):
            parts = list(path.relative_to(ROOT).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts = parts[:-1]
            out[".".join(parts)] = path
    return out


def _imports(name: str, path: Path, modules: dict[str, Path]) -> set[str]:
    """Modules of this project that ``name`` imports anywhere in its body."""
    is_package = path.name == "__init__.py"
    package = name if is_package else name.rpartition(".")[0]
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[: len(base) - (node.level - 1)]
                module = ".".join(base + ([node.module] if node.module else []))
            else:
                module = node.module or ""
            targets = [f"{module}.{alias.name}" if f"{module}.{alias.name}" in modules else module
                       for alias in node.names]
        else:
            continue
        for target in targets:
            while target and target not in modules:  # "a.b.c" where only "a.b" is a module
                target = target.rpartition(".")[0]
            if target and target != name:
                found.add(target)
    return found


def test_no_import_cycle():
    modules = _modules()
    graph = nx.DiGraph()
    for name, path in modules.items():
        graph.add_node(name)
        for target in _imports(name, path, modules):
            graph.add_edge(name, target)
    cycles = [sorted(c) for c in nx.strongly_connected_components(graph) if len(c) > 1]
    assert not cycles, f"import cycles: {cycles}"


def test_cycle_check_sees_function_local_imports(tmp_path):
    """The checker itself: a cycle made only of a function-local import is found."""
    a, b = tmp_path / "a.py", tmp_path / "b.py"
    a.write_text("import b\n")
    b.write_text("def f():\n    import a\n")
    modules = {"a": a, "b": b}
    assert _imports("a", a, modules) == {"b"} and _imports("b", b, modules) == {"a"}


def test_no_module_is_oversized():
    big = {str(p.relative_to(ROOT)): n for p in _modules().values()
           if (n := len(p.read_text(encoding="utf-8").splitlines())) > MAX_LINES}
    assert not big, f"modules over {MAX_LINES} lines: {big}"


@pytest.mark.parametrize("first", ["llama_index_graphrag_suite.registry", "langgraph_agents"])
def test_every_module_imports_in_a_fresh_interpreter(first):
    """Import one entry module first (as a user would), then every other module, in a new process."""
    names = [n for n in _modules() if n != first]
    code = ("import importlib, warnings\nwarnings.simplefilter('ignore', DeprecationWarning)\n"
            f"importlib.import_module({first!r})\n"
            f"for n in {names!r}:\n    importlib.import_module(n)\n")
    proc = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=240)
    assert proc.returncode == 0, proc.stderr[-2000:]


def test_registry_module_imports_no_method():
    """Loading the registry costs nothing: methods are imported on first use."""
    code = ("import sys, llama_index_graphrag_suite.registry as r\n"
            "assert not any(m.startswith('llama_index_graphrag_suite.methods.') for m in sys.modules), "
            "[m for m in sys.modules if 'methods' in m]\n"
            "r.method_info('agrag').load()\n"
            "assert 'llama_index_graphrag_suite.methods.agrag.retriever' in sys.modules\n")
    proc = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr[-2000:]


def _protocol_members() -> set[str]:
    from llama_index_graphrag_suite.index.protocol import GraphIndexReader

    members = set(GraphIndexReader.__annotations__)
    members |= {k for k in vars(GraphIndexReader) if not k.startswith("_")}
    return members


def _index_reads() -> dict[str, set[str]]:
    """Attributes read on ``self.index`` / ``index`` / ``graph_index`` anywhere in methods/ and langgraph_agents/."""
    reads: dict[str, set[str]] = {}
    files = [*(ROOT / "llama_index_graphrag_suite" / "methods").rglob("*.py"), *(ROOT / "langgraph_agents").glob("*.py")]
    for path in files:
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if not isinstance(node, ast.Attribute):
                continue
            owner = node.value
            via_self = (isinstance(owner, ast.Attribute) and owner.attr == "index"
                        and isinstance(owner.value, ast.Name) and owner.value.id == "self")
            via_name = isinstance(owner, ast.Name) and owner.id in ("index", "graph_index")
            if via_self or via_name:
                reads.setdefault(node.attr, set()).add(str(path.relative_to(ROOT)))
    return reads


def test_methods_read_the_index_only_through_its_declared_interface():
    reads = _index_reads()
    assert {"snapshot", "chunk_order", "embed_query", "cached"} <= set(reads)  # the walk finds real reads
    undeclared = {name: sorted(where) for name, where in reads.items() if name not in _protocol_members()}
    assert not undeclared, f"index members read by methods but missing from GraphIndexReader: {undeclared}"


def test_graph_rag_index_implements_the_reader_protocol():
    from llama_index_graphrag_suite import GraphRAGIndex, IndexConfig
    from llama_index_graphrag_suite.documents import make_document
    from llama_index_graphrag_suite.embeddings import HashEmbedding
    from llama_index_graphrag_suite.index.protocol import GraphIndexReader

    docs = [make_document("a", "Ada Lorne was born in Marlow. Marlow lies on the Teme.", "Ada Lorne"),
            make_document("b", "The Teme is a river. Ada Lorne painted the Teme at Marlow.", "Teme")]
    index = GraphRAGIndex.from_documents(docs, embed_model=HashEmbedding(), config=IndexConfig(entities="statistical", entity_threshold=0.1))
    assert isinstance(index, GraphIndexReader)
    for name in _protocol_members():
        assert hasattr(index, name), name
