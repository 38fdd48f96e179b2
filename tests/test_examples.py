"""Examples are run by the tests so they never rot."""

import importlib.util
from pathlib import Path

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"


def load(name):
    spec = importlib.util.spec_from_file_location(name, EXAMPLES / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_quickstart_finds_the_theatre(capsys):
    top = load("quickstart").main(embed="hash")
    assert top[1] == top[2] == "doc-08"  # BM25 and hybrid put the Orrin Theatre first
    assert "index:" in capsys.readouterr().out
