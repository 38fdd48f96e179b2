"""`export --format html` of a ~10,000-node index: export time, page size, time until the page has drawn, a screenshot.

    python benchmarks/export_html.py --passages 2200 --screenshot docs/export-10k.png

Builds a cheap index (statistical entities, hashing embedding) from the first ``--passages`` passages of
2wiki_retrieval101 (2,200 passages give ~10,300 nodes), writes the HTML export, opens it in headless Chromium
(selenium; skipped when absent) and measures the time until the graph is drawn, then saves a screenshot of the
whole graph and one after searching an entity and clicking the first hit.
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from pathlib import Path


def build(passages: int, dataset: Path):
    from llama_index_graphrag_suite import GraphRAGIndex, IndexConfig
    from llama_index_graphrag_suite.documents import make_document
    from llama_index_graphrag_suite.embeddings import HashEmbedding

    with open(dataset / "corpus.jsonl", encoding="utf-8") as f:
        rows = [json.loads(line) for _, line in zip(range(passages), f)]
    docs = [make_document(r["id"], r["text"], r["title"]) for r in rows]
    return GraphRAGIndex.from_documents(docs, embed_model=HashEmbedding(), config=IndexConfig(entities="statistical"))


def open_in_chromium(page: Path, screenshot: Path | None, search: str) -> dict:
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import WebDriverWait

    options = webdriver.ChromeOptions()
    options.binary_location = "/usr/bin/chromium"
    for arg in ("--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--window-size=1600,1000",
                "--use-angle=swiftshader", "--enable-unsafe-swiftshader"):
        options.add_argument(arg)
    driver = webdriver.Chrome(service=Service("/usr/bin/chromedriver"), options=options)
    try:
        start = time.perf_counter()
        driver.get(page.as_uri())
        WebDriverWait(driver, 120).until(lambda d: d.execute_script("return !!window.graphExport"))
        drawn = time.perf_counter() - start
        out = {"page_drawn_s": round(drawn, 2), "nodes_drawn": driver.execute_script("return window.graphExport.graph.order")}
        if screenshot:
            time.sleep(1.5)  # sigma draws labels on the next animation frames
            driver.save_screenshot(str(screenshot))
            hits = driver.execute_script(f"return window.graphExport.search({json.dumps(search)})")
            if hits:
                driver.find_element(By.CSS_SELECTOR, "#results li").click()
                time.sleep(1.5)  # the camera animates to the node
                driver.save_screenshot(str(screenshot.with_name(screenshot.stem + "-search" + screenshot.suffix)))
            out["search_hits"] = hits
        return out
    finally:
        driver.quit()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--passages", type=int, default=2200)
    parser.add_argument("--dataset", default="/work/shared/datasets/2wiki_retrieval101")
    parser.add_argument("--screenshot", help="PNG path for the screenshot (a second one, NAME-search.png, too)")
    parser.add_argument("--search", default="Chicago", help="what to search for in the second screenshot")
    args = parser.parse_args()

    from llama_index_graphrag_suite.export import write_export

    start = time.perf_counter()
    index = build(args.passages, Path(args.dataset))
    built = time.perf_counter() - start
    with tempfile.TemporaryDirectory() as tmp:
        page = Path(tmp) / "graph.html"
        start = time.perf_counter()
        g = write_export(index, page, "html")
        exported = time.perf_counter() - start
        row = {"passages": args.passages, "nodes": g.number_of_nodes(), "edges": g.number_of_edges(),
               "build_s": round(built, 1), "export_s": round(exported, 2), "page_mb": round(page.stat().st_size / 1e6, 2)}
        try:
            row.update(open_in_chromium(page, Path(args.screenshot) if args.screenshot else None, args.search))
        except ImportError:
            row["page_drawn_s"] = "selenium not installed"
    print("| " + " | ".join(row) + " |")
    print("|" + "---|" * len(row))
    print("| " + " | ".join(str(v) for v in row.values()) + " |")


if __name__ == "__main__":
    main()
