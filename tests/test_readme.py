"""README and docs as tests: every fenced ```python and ```bash/```sh/```shell block in README.md and in the pages
of ``docs/`` runs, so they cannot rot.

Blocks run in README order, then page by page (``docs/`` sorted by path), in one temporary folder that looks like a
clone of this repository (``examples/`` and ``.venv`` linked in), so a block may use a file an earlier block wrote
(``my-index``), as a reader following the README would; a docs page may use what the README made, never what
another page made. Python blocks are exec'd in a fresh namespace each; shell blocks run
with bash, the venv's ``bin`` first on ``PATH``. A block is skipped only when the line directly above its
opening fence is ``<!-- not-run: reason -->``; a skip without a reason fails :func:`test_skips_have_reasons`.
``GRAPHRAG_LLM_URL`` is unset, so blocks that need an LLM use the scripted stand-in they define.
"""

from __future__ import annotations

import functools
import os
import re
import subprocess
import sys
import types
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
README = ROOT / "README.md"
# pages whose blocks are not run yet, with the reason (each page's owner should mark such a block not-run instead)
UNCHECKED = {"docs/stores.md": "its one block starts a FalkorDB server that runs until stopped"}
PAGES = [README] + [p for p in sorted((ROOT / "docs").rglob("*.md"))
                    if p.relative_to(ROOT).as_posix() not in UNCHECKED]
LANGS = {"python": "python", "bash": "bash", "sh": "bash", "shell": "bash"}
_FENCE = re.compile(r"^```\s*([\w+-]*)\s*$")
_NOT_RUN = re.compile(r"^<!--\s*not-run\s*:?(.*?)-->\s*$")


@dataclass
class Block:
    line: int  # 1-based line of the opening fence
    lang: str  # "python" or "bash"
    code: str
    skip: str | None  # None: run; else the reason ("" = marked without a reason)
    page: str = "README.md"

    @property
    def id(self) -> str:
        stem = "" if self.page == "README.md" else self.page.removeprefix("docs/").removesuffix(".md") + "-"
        return f"{stem}{self.lang}-L{self.line}"


def readme_blocks(text: str, page: str = "README.md") -> list[Block]:
    """Every python/shell block of a markdown text, with the ``not-run`` marker above it, if any."""
    lines = text.splitlines()
    blocks, i = [], 0
    while i < len(lines):
        m = _FENCE.match(lines[i])
        if not m:
            i += 1
            continue
        end = next((j for j in range(i + 1, len(lines)) if lines[j].startswith("```")), len(lines))
        lang = LANGS.get(m.group(1).lower())
        if lang:
            above = _NOT_RUN.match(lines[i - 1].strip()) if i else None
            skip = above.group(1).strip() if above else None
            blocks.append(Block(i + 1, lang, "\n".join(lines[i + 1 : end]) + "\n", skip, page))
        i = end + 1
    return blocks


BLOCKS = [b for page in PAGES
          for b in readme_blocks(page.read_text(encoding="utf-8"), page.relative_to(ROOT).as_posix())]


def test_parser_sees_markers_and_languages():
    text = "x\n```bash\necho 1\n```\n<!-- not-run: needs a GPU -->\n```python\nraise SystemExit\n```\n" \
           "<!-- not-run -->\n```sh\nexit 1\n```\n```\nplain\n```\n"
    got = [(b.lang, b.code, b.skip) for b in readme_blocks(text)]
    assert got == [("bash", "echo 1\n", None), ("python", "raise SystemExit\n", "needs a GPU"), ("bash", "exit 1\n", "")]


def test_readme_has_blocks_that_run():
    assert sum(b.skip is None and b.page == "README.md" for b in BLOCKS) >= 5
    assert sum(b.skip is None for b in BLOCKS) >= 12


def test_docs_pages_have_no_machine_paths():
    """A reader's clone is not ours: no absolute folder of this machine in the README, BENCHMARKS.md or docs/."""
    # a folder of this machine or a run's scratch folder (/tmp/x/y); a generic example such as /tmp/falkordb is fine
    machine = re.compile(r"(?<![\w.~])/(?:(?:work|home|root|Users)/[\w.-]+|tmp/[\w.-]+/[\w.-]+)")
    pages = [README, ROOT / "BENCHMARKS.md", *sorted((ROOT / "docs").rglob("*.md"))]
    found = [f"{p.relative_to(ROOT)}:{n}: {m.group(0)}" for p in pages
             for n, line in enumerate(p.read_text(encoding="utf-8").splitlines(), 1) for m in machine.finditer(line)]
    assert found == []


def test_links_between_pages_lead_somewhere():
    """Every relative link of the README, BENCHMARKS.md, studies/README.md and docs/ names a file of the repository."""
    pages = [README, ROOT / "BENCHMARKS.md", ROOT / "studies" / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]
    broken = [f"{p.relative_to(ROOT)}: {target}" for p in pages
              for target in re.findall(r"\]\(([^)#\s]+)[^)]*\)", p.read_text(encoding="utf-8"))
              if "://" not in target and not (p.parent / target).exists()]
    assert broken == []


def test_skips_have_reasons():
    skipped = [b for b in BLOCKS if b.skip is not None]
    for b in skipped:  # listed in the output of `pytest -s`
        print(f"{b.page} {b.id} not run: {b.skip or '(NO REASON)'}")
    assert [b.id for b in skipped if not b.skip] == [], "a <!-- not-run --> marker needs a reason"


@pytest.fixture(scope="module")
def clone(tmp_path_factory):
    """A folder laid out like the repository root, without the repository's own files to write over."""
    folder = tmp_path_factory.mktemp("readme")
    for name in ("examples", ".venv"):
        (folder / name).symlink_to(ROOT / name)
    return folder


@pytest.fixture(scope="module")
def shared_embedders():
    """Load each named embedding model once for all blocks (only speed: the same model every time)."""
    from llama_index_graphrag_suite import embeddings
    from llama_index_graphrag_suite.index import graph_index

    original = embeddings.resolve_embed_model

    @functools.lru_cache(maxsize=None)
    def by_name(spec, batch_size):
        return original(spec, batch_size)

    def cached(spec=None, batch_size=64):
        return original(spec, batch_size) if not (spec is None or isinstance(spec, str)) else by_name(spec, batch_size)

    mp = pytest.MonkeyPatch()
    mp.setattr(embeddings, "resolve_embed_model", cached)
    mp.setattr(graph_index, "resolve_embed_model", cached)
    yield
    mp.undo()


@pytest.mark.parametrize("block", BLOCKS, ids=[b.id for b in BLOCKS])
def test_readme_block_runs(block, clone, shared_embedders, monkeypatch, capsys):
    if block.skip is not None:
        pytest.skip(f"{block.page} line {block.line}: {block.skip or 'no reason given'}")
    monkeypatch.delenv("GRAPHRAG_LLM_URL", raising=False)
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    if block.lang == "python":
        monkeypatch.chdir(clone)
        module = types.ModuleType(f"readme_{block.id.replace('-', '_').replace('/', '_')}")  # a fresh namespace that typing can resolve names in
        monkeypatch.setitem(sys.modules, module.__name__, module)
        exec(compile(block.code, f"{block.page}:{block.line}", "exec"), module.__dict__)  # noqa: S102 - our own docs
        return
    env = dict(os.environ, PATH=f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}")
    done = subprocess.run(["bash", "-euo", "pipefail", "-c", block.code], cwd=clone, env=env,
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, f"{block.page} line {block.line} failed ({done.returncode}):\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}"
