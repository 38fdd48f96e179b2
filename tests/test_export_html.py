"""`export --format html`: one self-contained page (sigma.js + graphology inlined), a community layout computed in
Python (not a grid), communities coloured, search data. The browser part runs in headless Chromium
when it is installed (skipped otherwise)."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import numpy as np
import pytest

from llama_index_graphrag_suite.export import ASSETS, html_data, write_export
from llama_index_graphrag_suite.graph.layout import community_layout, push_apart


def _page_data(page: str) -> dict:
    raw = re.search(r'<script id="graph-data" type="application/json">(.*?)</script>', page, re.S).group(1)
    return json.loads(raw)


def _planted_partition(groups: int, size: int, seed: int = 0) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``groups`` groups of ``size`` nodes, 4 random edges per node inside its group, 1 in 50 nodes linked to another
    group: (src, dst, group of each node)."""
    rng = np.random.default_rng(seed)
    truth = np.repeat(np.arange(groups), size)
    n = groups * size
    src = np.repeat(np.arange(n), 4)
    dst = truth[src] * size + rng.integers(0, size, src.size)
    bridges = rng.choice(n, n // 50, replace=False)
    return np.concatenate([src, bridges]), np.concatenate([dst, rng.integers(0, n, bridges.size)]), truth


# ------------------------------------------------------------------------------------------ layout

def test_layout_puts_each_community_on_its_own_island():
    src, dst, truth = _planted_partition(groups=12, size=150)
    pos = community_layout(truth.size, src, dst, truth, seed=3)
    assert pos.shape == (truth.size, 2) and np.isfinite(pos).all()
    centres = np.array([pos[truth == c].mean(axis=0) for c in range(12)])
    nearest = np.linalg.norm(pos[:, None, :] - centres[None], axis=2).argmin(axis=1)
    assert (nearest == truth).mean() > 0.99  # a node lies nearest to its own community's centre
    # not a grid: positions take many distinct values, and neighbours are at many different distances
    assert len(np.unique(pos[:, 0].round(3))) > 0.9 * truth.size
    gaps = np.sort(np.linalg.norm(pos[:, None, :] - pos[None, :300, :], axis=2), axis=0)[1]
    assert gaps.std() > 0.1 * gaps.mean()
    # the same seed gives the same picture
    assert np.allclose(pos, community_layout(truth.size, src, dst, truth, seed=3))


def test_nodes_without_edges_go_in_rows_under_the_picture():
    src, dst = np.array([0, 1, 2, 3]), np.array([1, 2, 0, 4])
    pos = community_layout(8, src, dst, np.array([0, 0, 0, 1, 1, 2, 3, 4]))
    assert pos[5:, 1].max() < pos[:5, 1].min()  # nodes 5-7 have no edge
    assert len({tuple(p) for p in pos[5:].round(6)}) == 3


def test_push_apart_removes_every_overlap():
    rng = np.random.default_rng(0)
    centres, radii = rng.normal(size=(60, 2)), rng.uniform(0.5, 3.0, 60)
    moved = push_apart(centres, radii, gap=0.5, iterations=500)
    i, j = np.triu_indices(60, 1)
    assert (np.linalg.norm(moved[i] - moved[j], axis=1) >= radii[i] + radii[j] + 0.5 - 1e-3).all()


def test_bad_membership_is_a_clear_error():
    with pytest.raises(ValueError, match="one community per node"):
        community_layout(3, [0], [1], [0, 0])


# ------------------------------------------------------------------------------------------ the page

@pytest.fixture(scope="module")
def page(graph_index, tmp_path_factory):
    out = tmp_path_factory.mktemp("export") / "graph.html"
    g = write_export(graph_index, out, "html")
    return g, out, out.read_text(encoding="utf-8")


def test_page_is_self_contained_with_the_vendored_libraries(page):
    g, _, text = page
    for library in ("graphology.umd.min.js", "sigma.min.js"):
        assert (ASSETS / library).read_text(encoding="utf-8")[:2000] in text
        assert (ASSETS / library.replace(".umd.min.js", ".LICENSE.txt").replace(".min.js", ".LICENSE.txt")).exists()
    assert "<script src" not in text and "http://" not in text.split("<script", 1)[0]
    assert f"{g.number_of_nodes():,} nodes" in text


def test_page_data_has_a_spread_layout_communities_and_search_labels(page, graph_index):
    g, _, text = page
    data = _page_data(text)
    nodes = data["nodes"]
    assert nodes["id"] == list(g.nodes) and len(data["edges"]["s"]) == g.number_of_edges()
    x, y = np.array(nodes["x"]), np.array(nodes["y"])
    assert len(set(zip(x.round(2), y.round(2)))) == len(x)  # no two nodes on one spot
    assert len(np.unique(x.round(2))) > 0.8 * len(x) and len(np.unique(y.round(2))) > 0.8 * len(y)  # not a grid
    communities = data["communities"]
    assert len(communities) >= 2 and sum(c["size"] for c in communities) == sum(c >= 0 for c in nodes["community"])
    colour = {c["id"]: c["color"] for c in communities}
    assert all(nodes["color"][i] == colour[c] for i, c in enumerate(nodes["community"]) if c >= 0)
    assert len(set(colour.values())) == len(colour)  # a colour per community
    # search data: every entity's surface form, every passage with its (cut) text
    surfaces = {e.surface for e in graph_index.entities.values()}
    assert surfaces <= set(nodes["label"])
    chunk_rows = [i for i, k in enumerate(nodes["kind"]) if k == "c"]
    assert len(chunk_rows) == len(graph_index.chunks) and all(nodes["text"][i] for i in chunk_rows)


def test_text_cannot_close_the_data_script():
    import networkx as nx

    g = nx.MultiDiGraph()
    g.add_node("a", kind="entity", label="</script><script>alert(1)</script>")
    g.add_node("b", kind="chunk", label="b", text="x </script> y")
    g.add_edge("b", "a", kind="contains")
    from llama_index_graphrag_suite.export import _html

    text = _html(g, "t")
    assert text.count("</script>") == 4 and "alert(1)</script>" not in text
    assert _page_data(text)["nodes"]["label"][0] == "</script><script>alert(1)</script>"


def test_empty_and_edgeless_graphs():
    import networkx as nx

    assert html_data(nx.MultiDiGraph())["nodes"]["id"] == []
    g = nx.MultiDiGraph()
    g.add_node("a", kind="entity", label="A")
    g.add_node("b", kind="entity", label="B")
    data = html_data(g)
    assert data["communities"] == [] and data["nodes"]["community"] == [-1, -1]


# ------------------------------------------------------------------------------------------ in a browser

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
CHROMEDRIVER = shutil.which("chromedriver") or "/usr/bin/chromedriver"


def test_page_draws_and_searches_in_headless_chromium(page, tmp_path):
    webdriver = pytest.importorskip("selenium.webdriver", reason="selenium is not installed")
    if not (Path(CHROMIUM).exists() and Path(CHROMEDRIVER).exists()):
        pytest.skip(f"no headless browser: need {CHROMIUM} and {CHROMEDRIVER} (apt-get install chromium chromium-driver)")
    from selenium.webdriver.chrome.service import Service
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import WebDriverWait

    g, out, _ = page
    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for arg in ("--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--window-size=1400,900",
                "--use-angle=swiftshader", "--enable-unsafe-swiftshader"):
        options.add_argument(arg)
    driver = webdriver.Chrome(service=Service(CHROMEDRIVER), options=options)
    try:
        driver.get(out.as_uri())
        WebDriverWait(driver, 30).until(lambda d: d.execute_script("return !!window.graphExport"))
        assert driver.execute_script("return window.graphExport.graph.order") == g.number_of_nodes()
        assert driver.find_elements(By.CSS_SELECTOR, "#graph canvas")  # sigma's WebGL layers
        assert "Communities" in driver.find_element(By.ID, "panel").text
        assert driver.execute_script("return window.graphExport.search('ada lorne')") >= 1
        driver.find_element(By.CSS_SELECTOR, "#results li").click()
        panel = driver.find_element(By.ID, "panel").text
        assert "Ada Lorne" in panel and "Links (" in panel
        driver.save_screenshot(str(tmp_path / "export.png"))
    finally:
        driver.quit()
