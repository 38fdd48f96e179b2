"""The hybrid guard: a retriever around a graph method that fuses its ranking with hybrid retrieval, weighted per
query by what the graph knows of the question (``docs/guard.md``). The registry wraps every graph method in it;
``name:paper`` is the method without it.

* ``config.py``: :class:`GuardConfig`, its settings once, and the presets (``default``, ``a2rag``);
* ``signals.py``: what the guard reads of a question and a corpus (entity links, coverage, name density);
* ``fusion.py``: the weight and the weighted reciprocal-rank fusion (pure arithmetic);
* ``retriever.py``: :class:`HybridGuard`, the wrapper.
"""

from .config import GUARD_PRESETS, GuardConfig, guard_config
from .fusion import fuse_rankings, guard_weight, hybrid_ranking, linked_hybrid, protective_weight
from .retriever import HybridGuard, method_depth
from .signals import entity_coverage, query_link

__all__ = ["GUARD_PRESETS", "GuardConfig", "HybridGuard", "entity_coverage", "fuse_rankings", "guard_config",
           "guard_weight", "hybrid_ranking", "linked_hybrid", "method_depth", "protective_weight", "query_link"]
