"""What several perf studies share: how much of an exact top k an approximation keeps, the closing table, and this
process's CPU seconds."""

from __future__ import annotations

import resource
import sys
from pathlib import Path

import numpy as np


def kept_share(exact: np.ndarray, approximate: np.ndarray, k: int) -> float:
    """Share of the ``k`` highest ``exact`` scores that are among the ``k`` highest ``approximate`` ones."""
    top = set(np.argsort(-exact, kind="stable")[:k].tolist())
    return len(top & set(np.argsort(-approximate, kind="stable")[:k].tolist())) / k


def print_and_write(lines: list[str], out: Path | None, title: str) -> None:
    """Print the table; with ``out``, write it under ``title`` and the command that made it."""
    text = "\n".join(lines)
    print(text)
    if out:
        out.write_text(f"# {title}\n\n`python {' '.join(sys.argv)}`\n\n{text}\n")


def cpu() -> float:
    """CPU seconds of this process so far (user and system)."""
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime
