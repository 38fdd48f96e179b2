"""The demo corpus indexed once for the CLI tests (hash embedding, statistical entities: seconds, no model)."""

from __future__ import annotations

from pathlib import Path

import pytest

DATA = Path(__file__).resolve().parents[2] / "examples" / "data"


@pytest.fixture(scope="session")
def demo_index(tmp_path_factory) -> Path:
    """A saved index of examples/data/corpus.jsonl (read-only for the tests: copy it to change it)."""
    from tests.conftest import index_demo_corpus

    return index_demo_corpus(tmp_path_factory.mktemp("cli") / "index")
