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
