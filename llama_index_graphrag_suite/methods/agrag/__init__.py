"""AGRAG (Wang et al.): an MCMI reasoning subgraph plus hybrid chunks.

``retriever.py`` (the LlamaIndex retriever: fact mapping, triple filter, influence, edge costs, Steiner +
MCMI, fusion with the hybrid chunks, evidence), ``config.py`` (settings, with the paper reference of every
default, and the ablation presets), ``prompts.py`` (triple filter, answer). The pure algorithms live in
``graph/ppr.py``, ``graph/costs.py``, ``graph/steiner.py`` and ``graph/mcmi.py``; the statistical entity
extraction (index time) in ``extractors/statistical.py``.
"""

from .config import AGRAGConfig, MCMIRatio
from .prompts import AGRAG_QA_PROMPT, DEFAULT_PROMPTS, TRIPLE_FILTER_PROMPT
from .retriever import VARIANTS, AGRAGRetriever

__all__ = [
    "AGRAGConfig",
    "AGRAGRetriever",
    "AGRAG_QA_PROMPT",
    "DEFAULT_PROMPTS",
    "MCMIRatio",
    "TRIPLE_FILTER_PROMPT",
    "VARIANTS",
]
