"""Old import paths kept for one release: each old module re-exports its names and warns once on import."""

from __future__ import annotations

import warnings


def warn_moved(old: str, new: str) -> None:
    """Emit the DeprecationWarning of an old module that now lives at ``new``."""
    warnings.warn(f"{old} is deprecated and will be removed in the next release; import from {new} instead",
                  DeprecationWarning, stacklevel=3)
