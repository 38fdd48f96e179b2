"""spaCy parsing speed of the NER extractor with 1 and with every core's worth of processes.

    .venv/bin/python benchmarks/ner_speed.py --corpus ../shared/datasets/musique_train100/corpus.jsonl --n 1200

Prints the median wall time of ``nlp.pipe`` (tokenizer, tok2vec, parser, ner) over the first N passages, for each
process count, three runs each, so the ``n_process`` default rests on a written command.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from llama_index_graphrag_suite.extractors.spacy_pipeline import default_processes, load_pipeline, parse  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--corpus", required=True)
    parser.add_argument("--n", type=int, default=1200)
    args = parser.parse_args()
    lines = Path(args.corpus).read_text(encoding="utf-8").splitlines()
    texts = [json.loads(line)["text"] for line in lines if line.strip()][: args.n]
    nlp = load_pipeline()
    counts = sorted({1, default_processes()})
    times: dict[int, list[float]] = {n: [] for n in counts}
    for _ in range(3):
        for n in counts:  # interleaved, so a busy moment hits both
            start = time.perf_counter()
            for _doc in parse(nlp, texts, 64, n):
                pass
            times[n].append(time.perf_counter() - start)
    print(f"| processes | median s for {len(texts)} passages | passages/s |")
    print("|---:|---:|---:|")
    for n in counts:
        med = statistics.median(times[n])
        print(f"| {n} | {med:.1f} | {len(texts) / med:.0f} |")


if __name__ == "__main__":
    main()
