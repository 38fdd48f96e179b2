"""How many entities the statistical extractor keeps, per reading of Eq. 2 and per threshold τ.

    python benchmarks/entity_stats.py ../shared/datasets/hotpotqa_train100/corpus.jsonl

Prints, for each setting: vocabulary size, entities extracted per chunk (mean), `contains` links per
chunk once every chunk is linked to every vocabulary entity it mentions, and the share of short
passage titles (<= 3 words) that became entities (titles are the bridges of multi-hop questions).
Chunks here are whole passages (title + text), as in the datasets.
"""

from __future__ import annotations

import argparse
import json
import statistics

from llama_index_graphrag_suite.extractors.entity_stats import EntityStatistics, find_mentions
from llama_index_graphrag_suite.text import normalize_entity


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("corpus", help="corpus.jsonl with id/title/text")
    parser.add_argument("--max-ngram", type=int, default=3)
    args = parser.parse_args()
    rows = [json.loads(line) for line in open(args.corpus, encoding="utf-8") if line.strip()]
    texts = [f"{r.get('title', '')}\n\n{r['text']}" for r in rows]
    stats = EntityStatistics(args.max_ngram)
    stats.fit(texts)
    titles = [normalize_entity(r.get("title", "")) for r in rows]
    short_titles = [t for t in titles if t and len(t.split()) <= 3]
    print(f"{args.corpus}: {len(texts)} chunks")
    print(f"{'|t| reading':10s} {'tau':>5s} {'vocab':>7s} {'extracted/chunk':>16s} {'contains/chunk':>15s} {'title recall':>13s}")
    for norm, taus in (("max_count", (0.5, 0.4, 0.3)), ("tokens", (0.5, 0.05, 0.02, 0.01))):
        scored = [stats.score(t, norm) for t in texts]
        top = statistics.median(s[0].score for s in scored if s)
        print(f"{norm:10s} median over chunks of the chunk's largest ER: {top:.3f}")
        for tau in taus:
            kept = [[e.key for e in s if e.score > tau] for s in scored]
            vocab = frozenset(k for ks in kept for k in ks)
            contains = [len({m.key for m in find_mentions(t, vocab, args.max_ngram)} | set(ks)) for t, ks in zip(texts, kept)]
            recall = sum(t in vocab for t in short_titles) / max(len(short_titles), 1)
            print(f"{norm:10s} {tau:5.2f} {len(vocab):7d} {statistics.mean(map(len, kept)):16.1f} "
                  f"{statistics.mean(contains):15.1f} {recall:13.2f}")


if __name__ == "__main__":
    main()
