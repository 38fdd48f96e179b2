"""The page in headless Chromium: ask a demo question with two methods side by side, see the graphs drawn.

Skipped when selenium, ``/usr/bin/chromium`` or ``/usr/bin/chromedriver`` is missing (Debian:
``apt-get install chromium chromium-driver``). Writes a screenshot to the test's folder, and to the
path in ``GRAPHRAG_SUITE_SCREENSHOT`` when set (``docs/serve-page.png`` was made that way).
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from llama_index_graphrag_suite.llm import ScriptedLLM
from llama_index_graphrag_suite.serve import create_app

from .conftest import QUESTION, running_server

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
CHROMEDRIVER = shutil.which("chromedriver") or "/usr/bin/chromedriver"

webdriver = pytest.importorskip("selenium.webdriver", reason="selenium is not installed (pip install selenium)")
if not (Path(CHROMIUM).exists() and Path(CHROMEDRIVER).exists()):
    pytest.skip(f"no headless browser: need {CHROMIUM} and {CHROMEDRIVER} (apt-get install chromium chromium-driver)",
                allow_module_level=True)


@pytest.fixture
def browser():
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for arg in ("--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--disable-gpu", "--window-size=1500,1000"):
        options.add_argument(arg)
    driver = webdriver.Chrome(service=Service(CHROMEDRIVER), options=options)
    driver.set_page_load_timeout(30)
    try:
        yield driver
    finally:
        driver.quit()


def _wait_state(driver, state: str, timeout: float = 30) -> None:
    from selenium.webdriver.support.ui import WebDriverWait

    WebDriverWait(driver, timeout).until(lambda d: d.execute_script("return document.body.dataset.state") == state)


def test_page_asks_and_draws_the_evidence_graph(index, browser, tmp_path):
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import Select

    llm = ScriptedLLM(responder=lambda prompt: "The Lunmoor Opera House was designed by Cassia Dunmore-Reyes.")
    with running_server(create_app(index, llm=llm)) as url:
        browser.get(url + "/")
        _wait_state(browser, "ready")
        assert "LLM ready" in browser.find_element(By.ID, "status").text
        browser.find_element(By.ID, "question").send_keys(QUESTION)
        Select(browser.find_element(By.ID, "method-a")).select_by_value("agrag")
        Select(browser.find_element(By.ID, "method-b")).select_by_value("pathrag")
        browser.find_element(By.CSS_SELECTOR, "#ask button").click()
        _wait_state(browser, "done")
        assert browser.find_element(By.ID, "error").get_attribute("hidden") is not None, browser.find_element(By.ID, "error").text
        counts = browser.execute_script(
            "const g = window.graphragGraphs; return [g.a.nodes().length, g.a.edges().length, g.b.nodes().length];")
        assert counts[0] > 0 and counts[1] > 0 and counts[2] > 0, counts
        columns = browser.find_elements(By.CSS_SELECTOR, ".column")
        assert [c.find_element(By.CSS_SELECTOR, "h2").text for c in columns] == ["agrag", "pathrag"]
        assert "Cassia Dunmore-Reyes" in columns[0].find_element(By.CSS_SELECTOR, ".answer").text
        assert len(columns[0].find_elements(By.CSS_SELECTOR, ".chunks li")) >= 5
        # a click on an entity node shows its chunks
        browser.execute_script("window.graphragGraphs.a.nodes('.entity')[0].emit('tap')")
        info = columns[0].find_element(By.CSS_SELECTOR, ".node-info")
        assert "(entity)" in info.text and info.find_elements(By.CSS_SELECTOR, ".chunk-text")
        shot = tmp_path / "serve-page.png"
        assert browser.save_screenshot(str(shot)) and shot.stat().st_size > 10_000
        if os.environ.get("GRAPHRAG_SUITE_SCREENSHOT"):
            shutil.copy(shot, os.environ["GRAPHRAG_SUITE_SCREENSHOT"])
