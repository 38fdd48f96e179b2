"""How many words an index must read before its ``terms="auto"`` decision is safe (terms.TERMS_DECIDED_AFTER_WORDS).

For each dataset: documents drawn at random (title line and text, as the chunker writes them) until at least W
words, 1,000 draws per W; the share of draws whose capitalised-words-per-100 falls on the other side of
``NAME_RICH`` from the whole corpus's. No model, no index: a few seconds.

    python benchmarks/name_density_sample.py --datasets ../shared/datasets
"""

from __future__ import annotations

import argparse
import json
import random
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import SHARED_SETS as DATASETS  # noqa: E402 (the folder on the path first)
from llama_index_graphrag_suite.extractors.terms import NAME_RICH, capitalised_word_counts  # noqa: E402
WORDS = (200, 1000, 2000, 5000, 10_000, 20_000)


def wrong_share(counts: list[tuple[int, int]], words: int, draws: int, rng: random.Random) -> float:
    whole = 100.0 * sum(c for c, _ in counts) / sum(n for _, n in counts) < NAME_RICH
    wrong = 0
    for _ in range(draws):
        order = list(range(len(counts)))
        rng.shuffle(order)
        cap = total = 0
        for i in order:
            cap, total = cap + counts[i][0], total + counts[i][1]
            if total >= words:
                break
        wrong += (100.0 * cap / max(total, 1) < NAME_RICH) != whole
    return wrong / draws


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--datasets", default="../shared/datasets")
    ap.add_argument("--draws", type=int, default=1000)
    args = ap.parse_args()
    print("| dataset | " + " | ".join(f"{w:,} words" for w in WORDS) + " |")
    print("|---|" + "---:|" * len(WORDS))
    for ds in DATASETS:
        with open(Path(args.datasets) / ds / "corpus.jsonl", encoding="utf-8") as f:
            rows = [json.loads(line) for line in f]
        counts = [capitalised_word_counts([f"{r.get('title', '')}\n\n{r['text']}"]) for r in rows]
        rng = random.Random(0)
        cells = [f"{100 * wrong_share(counts, w, args.draws, rng):.1f} %" for w in WORDS]
        print(f"| {ds} | " + " | ".join(cells) + " |", flush=True)


if __name__ == "__main__":
    main()
