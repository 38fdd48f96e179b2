"""Our Steiner tree (+ MCMI) against networkx's steiner_tree(method="mehlhorn"), same graph and terminals.

    python benchmarks/agrag_steiner.py --index-dir DIR --questions ../shared/datasets/2wiki_retrieval101/questions.jsonl

For each question: AGRAG's query-priced graph (Eq. 14 costs, pseudo passage node) and terminals (the kept
facts' entities); then the median time of (a) ours: Mehlhorn on scipy.sparse, (b) ours + MCMI expansion,
(c) networkx on an nx.Graph of the same costs (graph construction not timed). Checks equal tree cost.
"""

from __future__ import annotations

import argparse
import json
import statistics
import time

import networkx as nx
import numpy as np

from llama_index_graphrag_suite import GraphRAGIndex
from llama_index_graphrag_suite.graph.mcmi import mcmi_expand
from llama_index_graphrag_suite.graph.ppr import personalized_pagerank
from llama_index_graphrag_suite.graph.steiner import steiner_tree
from llama_index_graphrag_suite.methods.agrag import AGRAGRetriever
from llama_index_graphrag_suite.methods.scoring import hybrid


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--index-dir", required=True)
    parser.add_argument("--questions", required=True)
    parser.add_argument("--limit", type=int, default=20)
    args = parser.parse_args()
    index = GraphRAGIndex.load(args.index_dir)
    retriever = AGRAGRetriever(index)
    graph = retriever._graph()
    questions = [json.loads(line)["question"] for line in open(args.questions, encoding="utf-8") if line.strip()]
    ours, ours_mcmi, theirs, sizes = [], [], [], []
    for question in questions[: args.limit]:
        q = index.embed_query(question)
        hyb = hybrid(index.chunk_dense_scores(q), index.bm25.scores(question))
        kept, _ = retriever.filter_facts(question, index.search_facts(q, retriever.config.fact_top_k))
        terminals = sorted({index.snapshot.row(k) for f, _ in kept for k in (index.facts[f].subject, index.facts[f].object)})
        if len(terminals) < 2:
            continue
        costs, _ = graph.pairs.matrix(retriever._edge_costs(graph, q, hyb))
        reset = np.zeros(index.snapshot.num_nodes)
        reset[terminals] = 1.0
        scores = np.r_[personalized_pagerank(graph.transition, reset, damping=0.5), 0.0]

        start = time.perf_counter()
        tree = steiner_tree(costs, terminals, symmetric=True)
        ours.append(time.perf_counter() - start)
        start = time.perf_counter()
        tree2 = steiner_tree(costs, terminals, symmetric=True)
        mcmi_expand(costs, scores, tree2, terminals)
        ours_mcmi.append(time.perf_counter() - start)

        coo = costs.tocoo()
        g = nx.Graph()
        g.add_weighted_edges_from((int(u), int(v), float(c)) for u, v, c in zip(coo.row, coo.col, coo.data) if u < v)
        start = time.perf_counter()
        nx_tree = nx.algorithms.approximation.steiner_tree(g, terminals, weight="weight", method="mehlhorn")
        theirs.append(time.perf_counter() - start)
        ours_cost = sum(c for _, _, c in tree)
        nx_cost = nx_tree.size(weight="weight")
        if abs(ours_cost - nx_cost) > 1e-6 * max(1.0, nx_cost):
            print(f"cost differs: ours {ours_cost:.6f} networkx {nx_cost:.6f} ({question})")
        sizes.append(len(terminals))
    med = statistics.median
    print(f"graph: {costs.shape[0]} nodes, {costs.nnz // 2} edges; {len(ours)} queries with >= 2 terminals "
          f"(median {med(sizes)} terminals)")
    print(f"ours Steiner         median {1000 * med(ours):8.2f} ms")
    print(f"ours Steiner + MCMI  median {1000 * med(ours_mcmi):8.2f} ms")
    print(f"networkx Steiner     median {1000 * med(theirs):8.2f} ms")
    print(f"speed-up (networkx / ours Steiner): {med(theirs) / med(ours):.1f}x; "
          f"(networkx / ours Steiner+MCMI): {med(theirs) / med(ours_mcmi):.1f}x")


if __name__ == "__main__":
    main()
