"""The page in headless Chromium, one test per feature: asking with cited answers and evidence graphs, the busy
indicator and readable errors, per-method settings, documents (list, upload, delete), the graph explorer, an
evidence graph of 150 nodes that stays readable, and a server with an API key that is read-only.

Skipped when selenium, ``/usr/bin/chromium`` or ``/usr/bin/chromedriver`` is missing (Debian:
``apt-get install chromium chromium-driver``; ``make test`` cannot install them, so CI skips these tests unless
the machine has them). With ``GRAPHRAG_SUITE_SCREENSHOTS=DIR`` the tests save the screenshots in ``docs/``
(serve-page.png, serve-documents.png, serve-explorer.png, serve-evidence-150.png) to DIR.
"""

from __future__ import annotations

import json
import os
import random
import shutil
import threading
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

from selenium.webdriver.common.by import By  # noqa: E402 - after the skip: selenium may be absent
from selenium.common.exceptions import StaleElementReferenceException  # noqa: E402
from selenium.webdriver.support.ui import Select, WebDriverWait  # noqa: E402

ANSWER = "The Lunmoor Opera House was designed by Cassia Dunmore-Reyes [1][2], as the records say [9]."


@pytest.fixture(scope="module")
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


def _wait(driver, condition, timeout: float = 30):
    return WebDriverWait(driver, timeout).until(lambda d: condition(d))


def _select(driver, value: str, element_id: str = "", css: str = "") -> None:
    """Choose ``value`` in a <select>, again if the page re-rendered its options meanwhile (it lists the methods
    again after a change of API key: a busy machine saw a stale option once)."""
    by, where = (By.ID, element_id) if element_id else (By.CSS_SELECTOR, css)

    def chosen(d) -> bool:
        Select(d.find_element(by, where)).select_by_value(value)
        return d.find_element(by, where).get_attribute("value") == value

    WebDriverWait(driver, 30, ignored_exceptions=(StaleElementReferenceException,)).until(chosen)


def _text(driver, css: str) -> str | None:
    """The text of the first element matching ``css`` now (read in one step: the page replaces elements)."""
    return driver.execute_script("const e = document.querySelector(arguments[0]); return e ? e.textContent : null", css)


def _wait_state(driver, state: str, timeout: float = 30) -> None:
    _wait(driver, lambda d: d.execute_script("return document.body.dataset.state") == state, timeout)


def _open(driver, url: str) -> None:
    driver.get(url + "/")
    _wait_state(driver, "ready")


def _screenshot(driver, tmp_path: Path, name: str) -> None:
    _wait(driver, lambda d: d.execute_script("return document.body.dataset.busy") != "true")
    driver.execute_script("window.scrollTo(0, 0)")
    driver.execute_script("return new Promise(r => setTimeout(() => requestAnimationFrame(() => requestAnimationFrame(r)), 200))")
    shot = tmp_path / name
    assert driver.save_screenshot(str(shot)) and shot.stat().st_size > 10_000
    if os.environ.get("GRAPHRAG_SUITE_SCREENSHOTS"):
        shutil.copy(shot, Path(os.environ["GRAPHRAG_SUITE_SCREENSHOTS"]) / name)


def _error(driver) -> str:
    box = driver.find_element(By.ID, "error")
    return "" if box.get_attribute("hidden") is not None else driver.find_element(By.ID, "error-text").text


def _ask(driver, question: str, method_a: str = "agrag", method_b: str = "") -> None:
    q = driver.find_element(By.ID, "question")
    q.clear()
    q.send_keys(question)
    _select(driver, method_a, "method-a")
    _select(driver, method_b, "method-b")
    driver.find_element(By.ID, "ask-button").click()
    _wait_state(driver, "done")


def _recording(app, seen: list):
    """The app, recording the JSON body of every POST /retrieve and /query (what the page sent)."""
    async def wrapped(scope, receive, send):
        if scope["type"] != "http" or scope["path"] not in ("/retrieve", "/query"):
            return await app(scope, receive, send)
        messages, body = [], b""
        while True:
            message = await receive()
            messages.append(message)
            body += message.get("body", b"")
            if not message.get("more_body"):
                break
        seen.append(json.loads(body))

        async def replay():
            return messages.pop(0) if messages else await receive()

        return await app(scope, replay, send)

    return wrapped


def test_ask_two_methods_cited_answer_and_graphs(index, browser, tmp_path):
    llm = ScriptedLLM(responder=lambda prompt: ANSWER)
    with running_server(create_app(index, llm=llm)) as url:
        _open(browser, url)
        assert "LLM ready" in browser.find_element(By.ID, "status").text
        _ask(browser, QUESTION, "agrag", "pathrag")
        assert _error(browser) == ""
        counts = browser.execute_script(
            "const g = window.graphragGraphs; return [g.a.nodes().length, g.a.edges().length, g.b.nodes().length];")
        assert counts[0] > 0 and counts[1] > 0 and counts[2] > 0, counts
        columns = browser.find_elements(By.CSS_SELECTOR, ".column")
        assert [c.find_element(By.CSS_SELECTOR, "h2").text for c in columns] == ["agrag", "pathrag"]
        first = columns[0]
        answer = first.find_element(By.CSS_SELECTOR, ".answer")
        assert "Cassia Dunmore-Reyes" in answer.text
        chunk_ids = [li.get_attribute("data-chunk") for li in first.find_elements(By.CSS_SELECTOR, ".chunks li[data-chunk]")]
        assert len(chunk_ids) == 5
        links = answer.find_elements(By.CSS_SELECTOR, "a.cite")
        assert [a.text for a in links] == ["[1]", "[2]"]
        assert [a.get_attribute("data-chunk") for a in links] == chunk_ids[:2]  # passage n is the n-th chunk
        invalid = answer.find_elements(By.CSS_SELECTOR, ".cite.invalid")
        assert [s.text for s in invalid] == ["[9]"] and "not given" in invalid[0].get_attribute("title")
        assert "1 citation(s) name a passage that was not given" in answer.text
        cited = [li.get_attribute("data-chunk") for li in first.find_elements(By.CSS_SELECTOR, ".chunks li.cited")]
        assert cited == chunk_ids[:2]
        _screenshot(browser, tmp_path, "serve-page.png")
        links[1].click()  # a citation leads to its chunk: highlighted in the list, selected in the graph
        _wait(browser, lambda d: "flash" in first.find_elements(By.CSS_SELECTOR, ".chunks li[data-chunk]")[1].get_attribute("class"))
        assert browser.execute_script("return window.graphragGraphs.a.$(':selected').map(n => n.id())") == [chunk_ids[1]]
        # a click on an entity node shows its chunks
        browser.execute_script("window.graphragGraphs.a.nodes('.entity')[0].emit('tap')")
        info = first.find_element(By.CSS_SELECTOR, ".node-info")
        assert "(entity)" in info.text and info.find_elements(By.CSS_SELECTOR, ".chunk-text")


def test_busy_indicator_and_readable_errors(index, browser):
    release = threading.Event()

    def slow(prompt: str) -> str:
        release.wait(60)  # the LLM answers when the test has seen the indicator
        return "Cassia Dunmore-Reyes [1]."

    with running_server(create_app(index, llm=ScriptedLLM(responder=slow))) as url:
        _open(browser, url)
        busy = browser.find_element(By.ID, "busy")
        assert not busy.is_displayed()
        browser.find_element(By.ID, "question").send_keys(QUESTION)
        _select(browser, "hybrid", "method-b")
        browser.find_element(By.ID, "ask-button").click()
        _wait(browser, lambda d: busy.is_displayed())
        assert "asking agrag and hybrid" in busy.text and busy.text.endswith(" s")
        assert not browser.find_element(By.ID, "ask-button").is_enabled()
        release.set()
        _wait_state(browser, "done")
        _wait(browser, lambda d: not busy.is_displayed())
        assert browser.find_element(By.ID, "ask-button").is_enabled() and _error(browser) == ""

        # a question of spaces and a zero-width space: the server's reason, as a sentence
        _ask(browser, "   \u200b ", "hybrid")
        assert _error(browser) == "Could not answer. hybrid: question: the question is empty: send a non-empty 'question'"
        # a setting out of range: the method's own message
        _select(browser, "pathrag", "method-a")
        browser.find_element(By.CSS_SELECTOR, "#settings-a summary").click()
        theta = browser.find_element(By.CSS_SELECTOR, '#settings-a [data-setting="theta"]')
        theta.clear()
        theta.send_keys("-1")
        _ask(browser, QUESTION, "pathrag")
        text = _error(browser)
        assert text.startswith("Could not answer. pathrag: bad setting for pathrag: theta:"), text
        assert "{" not in text and "[" not in text  # no raw JSON
        browser.find_element(By.ID, "error-close").click()
        assert _error(browser) == ""


def test_method_settings_come_from_each_config_and_are_sent(index, browser):
    from llama_index_graphrag_suite.registry import method_info

    seen: list[dict] = []
    with running_server(_recording(create_app(index), seen)) as url:
        _open(browser, url)
        for method in ("pathrag", "a2rag", "hipporag"):
            _select(browser, method, "method-a")
            names = browser.execute_script(
                "return [...document.querySelectorAll('#settings-a [data-setting]')].map(e => e.dataset.setting)")
            # the method's own settings, then the guard's (every method here runs inside the guard)
            assert names == [f for c in method_info(method).settings_classes() for f in c.model_fields], method
            assert "guard_max_weight" in names
        _select(browser, "pathrag", "method-a")
        browser.find_element(By.CSS_SELECTOR, "#settings-a summary").click()
        num_paths = browser.find_element(By.CSS_SELECTOR, '#settings-a [data-setting="num_paths"]')
        assert num_paths.get_attribute("value") == "15" and num_paths.get_attribute("min") == "1"
        num_paths.clear()
        num_paths.send_keys("3")
        _select(browser, "paths_only", css='#settings-a [data-setting="chunk_ranking"]')
        browser.find_element(By.CSS_SELECTOR, '#settings-a .choices input[value="synonym"]').click()
        assert "(3 changed)" in browser.find_element(By.CSS_SELECTOR, "#settings-a summary").text
        _ask(browser, QUESTION, "pathrag")
        assert _error(browser) == ""
        assert seen[-1]["method"] == "pathrag"
        assert seen[-1]["settings"] == {"num_paths": 3, "chunk_ranking": "paths_only", "edge_kinds": ["relation", "synonym"]}
        # a setting whose default is None and whose values are true and false: three choices, "none" not sent
        best = browser.find_element(By.CSS_SELECTOR, '#settings-a [data-setting="guard_best_sentence"]')
        assert best.tag_name == "select" and best.get_attribute("value") == ""
        _select(browser, "false", css='#settings-a [data-setting="guard_best_sentence"]')
        _ask(browser, QUESTION, "pathrag")
        assert seen[-1]["settings"]["guard_best_sentence"] is False
        # a variant, and the defaults again
        _select(browser, "agrag", "method-a")
        assert browser.find_element(By.CSS_SELECTOR, "#settings-a").get_attribute("open") is not None  # stays open
        _select(browser, "no_mcmi", css="#settings-a select.variant")
        _ask(browser, QUESTION, "agrag")
        assert seen[-1]["method"] == "agrag:no_mcmi" and "settings" not in seen[-1]


def _rows(driver) -> list[str]:
    return [tr.get_attribute("data-doc") for tr in driver.find_elements(By.CSS_SELECTOR, "#doc-table tbody tr")]


def _documents_loaded(driver, since: str | None):
    _wait(driver, lambda d: d.execute_script("return document.body.dataset.documents || null") not in (None, since)
          and d.execute_script("return document.body.dataset.busy") == "false")


def test_documents_list_upload_and_delete(fresh_index, fresh_index_dir, browser, tmp_path):
    from llama_index_graphrag_suite.index import GraphRAGIndex

    files = tmp_path / "upload"
    files.mkdir()
    (files / "Oren_Vask.md").write_text("# Oren Vask\n\nOren Vask was a glassblower born in Tallow Reach. "
                                        "Oren Vask built the great lantern of the Cawl lighthouse in 1890.\n")
    (files / "more.jsonl").write_text(
        json.dumps({"id": "mira", "title": "Mira Holt", "text": "Mira Holt charted the tides of Ostravel harbour.",
                    "year": 1902}) + "\n\n"
        + json.dumps({"title": "Ivo Brand", "text": "Ivo Brand ran the ferry over the Korvath River."}) + "\n")
    (files / "broken.jsonl").write_text('{"id": "a", "text": "fine"}\n{"id": "b", "text": \n')
    (files / "paper.pdf").write_bytes(b"%PDF-1.4 not text")  # read by the server, which says it is damaged
    (files / "sheet.odt").write_bytes(b"PK")  # refused by the page before anything is sent

    def stamp():
        return browser.execute_script("return document.body.dataset.documents || null")

    with running_server(create_app(fresh_index, persist_dir=fresh_index_dir)) as url:
        _open(browser, url)
        browser.find_element(By.CSS_SELECTOR, '#tabs [data-tab="documents"]').click()
        _documents_loaded(browser, None)
        assert len(_rows(browser)) == 40 and browser.find_element(By.ID, "doc-count").text == "40 documents"
        first = browser.find_element(By.CSS_SELECTOR, "#doc-table tbody tr")
        chunks = [c for c in fresh_index.chunks.values() if c.doc_id == "doc-01"]
        assert [td.text for td in first.find_elements(By.TAG_NAME, "td")][:5] == [
            "doc-01", chunks[0].title, "1", f"{len(chunks[0].text):,}", str(len(chunks[0].entities))]
        before = stamp()
        browser.find_element(By.ID, "doc-filter").send_keys("kestria")
        _documents_loaded(browser, before)
        assert _rows(browser) == ["doc-01", "doc-23"] and "2 documents matching" in browser.find_element(By.ID, "doc-count").text
        before = stamp()
        browser.find_element(By.ID, "doc-filter").clear()
        browser.execute_script("document.getElementById('doc-filter').dispatchEvent(new Event('input'))")
        _documents_loaded(browser, before)

        chooser = browser.find_element(By.ID, "doc-files")
        for bad, reason in [("broken.jsonl", "broken.jsonl line 2: not valid JSON"),
                            ("sheet.odt", "sheet.odt: not a format read here (.jsonl, .pdf, .docx"),
                            ("paper.pdf", "paper.pdf: not a readable PDF file (")]:
            before = stamp()
            chooser.send_keys(str(files / bad))
            browser.find_element(By.ID, "doc-upload").click()
            _documents_loaded(browser, before)
            assert _error(browser).startswith("Could not add the documents: " + reason), _error(browser)
            browser.execute_script("document.getElementById('doc-files').value = ''")
        assert len(_rows(browser)) == 40  # nothing of a refused upload was sent
        before = stamp()
        chooser.send_keys(str(files / "Oren_Vask.md") + "\n" + str(files / "more.jsonl"))
        browser.find_element(By.ID, "doc-upload").click()
        _documents_loaded(browser, before)
        assert _error(browser) == ""
        assert browser.find_element(By.ID, "doc-message").text == "added 3 documents (3 chunks)"
        assert _rows(browser)[-3:] == ["Oren_Vask.md", "mira", "more-3"]
        assert [c.title for c in fresh_index.chunks.values() if c.doc_id == "Oren_Vask.md"] == ["Oren Vask"]  # its heading
        mira = [c for c in fresh_index.chunks.values() if c.doc_id == "mira"]
        assert mira and mira[0].title == "Mira Holt"
        on_disk = GraphRAGIndex.load(fresh_index_dir, embed_model="hash")
        assert {"Oren_Vask.md", "mira", "more-3"} <= {c.doc_id for c in on_disk.chunks.values()}

        row = browser.find_element(By.CSS_SELECTOR, '#doc-table tr[data-doc="Oren_Vask.md"]')
        delete = row.find_element(By.CSS_SELECTOR, "button.delete")
        delete.click()  # arms
        assert delete.text == "click again to delete" and "Oren_Vask.md" in _rows(browser)
        before = stamp()
        delete.click()
        _documents_loaded(browser, before)
        assert browser.find_element(By.ID, "doc-message").text == "deleted Oren_Vask.md (1 chunk), saved"
        assert "Oren_Vask.md" not in _rows(browser) and len(_rows(browser)) == 42
        assert "Oren_Vask.md" not in {c.doc_id for c in fresh_index.chunks.values()}
        _screenshot(browser, tmp_path, "serve-documents.png")


def test_upload_a_pdf_and_a_cited_answer_names_its_page(fresh_index, fresh_index_dir, browser, tmp_path):
    """The page sends a PDF and a Word file to POST /documents/files; the PDF is read one document per page, and a
    cited answer's passage names the page (``report.pdf#page=3``) and the PDF's own title."""
    from document_files import write_docx, write_pdf

    files = tmp_path / "upload"
    files.mkdir()
    write_pdf(files / "report.pdf", ["The Marlow Gallery annual report opens with a letter from the board.", "",
                                     "Piers Vant founded the Marlow Gallery in 1880 beside the Esk River."],
              title="Marlow Annual Report")
    write_docx(files / "notes.docx", ["Brey Vant restored the Marlow Gallery roof in 1921."], title="Gallery notes")
    llm = ScriptedLLM(responder=lambda prompt: "Piers Vant founded the Marlow Gallery in 1880 [1].")
    with running_server(create_app(fresh_index, llm=llm, persist_dir=fresh_index_dir)) as url:
        _open(browser, url)
        browser.find_element(By.CSS_SELECTOR, '#tabs [data-tab="documents"]').click()
        _documents_loaded(browser, None)
        before = browser.execute_script("return document.body.dataset.documents || null")
        browser.find_element(By.ID, "doc-files").send_keys(str(files / "report.pdf") + "\n" + str(files / "notes.docx"))
        browser.find_element(By.ID, "doc-upload").click()
        _documents_loaded(browser, before)
        assert _error(browser) == ""
        message = browser.find_element(By.ID, "doc-message").text
        assert message.startswith("added 3 documents (3 chunks)") and "report.pdf: 1 of 3 pages have no text" in message
        assert _rows(browser)[-3:] == ["report.pdf#page=1", "report.pdf#page=3", "notes.docx"]
        _screenshot(browser, tmp_path, "serve-upload-pdf.png")

        browser.find_element(By.CSS_SELECTOR, '#tabs [data-tab="ask"]').click()
        _ask(browser, "Who founded the Marlow Gallery in 1880?", "bm25")
        assert _error(browser) == ""
        column = browser.find_element(By.CSS_SELECTOR, ".column")
        top = column.find_element(By.CSS_SELECTOR, ".chunks li[data-chunk]")
        assert top.get_attribute("data-chunk") == "report.pdf#page=3#0"
        assert "report.pdf#page=3 — Marlow Annual Report" in top.text
        link = column.find_element(By.CSS_SELECTOR, ".answer a.cite")
        assert link.text == "[1]" and link.get_attribute("data-chunk") == "report.pdf#page=3#0"
        assert "Marlow Annual Report" in link.get_attribute("title")
        _screenshot(browser, tmp_path, "serve-cited-pdf-page.png")


def test_graph_explorer_search_expand_open(index, browser, tmp_path):
    with running_server(create_app(index)) as url:
        _open(browser, url)
        browser.find_element(By.CSS_SELECTOR, '#tabs [data-tab="graph"]').click()
        browser.find_element(By.ID, "entity-search").send_keys("kov")
        _wait(browser, lambda d: d.find_elements(By.CSS_SELECTOR, "#entity-results .entity-result"))
        result = browser.find_element(By.CSS_SELECTOR, "#entity-results .entity-result")
        assert result.get_attribute("data-entity") == "kovalen" and "5 chunk(s)" in result.text
        result.click()
        _wait(browser, lambda d: d.execute_script("return !!window.graphragGraphs.explorer"))
        ids = set(browser.execute_script("return window.graphragGraphs.explorer.nodes().map(n => n.id())"))
        around = {"kovalen"} | set(index.entities["kovalen"].chunks)
        assert around <= ids
        assert browser.execute_script("return window.graphragGraphs.explorer.$('#kovalen').hasClass('focus')")
        info = browser.find_element(By.ID, "explorer-info")
        assert info.find_element(By.TAG_NAME, "h3").text == "Kovalen"
        listed = [a.get_attribute("data-chunk") for a in info.find_elements(By.CSS_SELECTOR, ".entity-chunks a")]
        assert set(listed) == set(index.entities["kovalen"].chunks)

        # expand a neighbour: the graph grows by what is around it, nothing is drawn twice
        neighbour = next(e for e in ids - around if e in index.entities
                         and set(index.entities[e].chunks) - ids)
        browser.execute_script(f"window.graphragGraphs.explorer.getElementById({json.dumps(neighbour)}).emit('tap')")
        _wait(browser, lambda d: _text(d, "#explorer-info h3") == index.entities[neighbour].surface)
        info.find_element(By.CSS_SELECTOR, "button.expand").click()
        _wait(browser, lambda d: "node(s) added" in (_text(d, "#explorer-info .expand-result") or ""))
        grown = browser.execute_script("return window.graphragGraphs.explorer.nodes().map(n => n.id())")
        assert len(grown) == len(set(grown)) > len(ids) and set(index.entities[neighbour].chunks) <= set(grown)

        # open a chunk: its whole text and its entities, which lead on
        link = info.find_element(By.CSS_SELECTOR, ".entity-chunks a")
        chunk_id = link.get_attribute("data-chunk")
        link.click()
        _wait(browser, lambda d: d.find_elements(By.CSS_SELECTOR, "#explorer-info .open-chunk"))
        assert browser.find_element(By.CSS_SELECTOR, "#explorer-info .open-chunk").text == index.chunks[chunk_id].text.strip()
        entity_buttons = browser.find_elements(By.CSS_SELECTOR, "#explorer-info .entity-link")
        assert {b.text for b in entity_buttons} == {index.entities[k].surface for k in index.chunks[chunk_id].entities}
        _screenshot(browser, tmp_path, "serve-explorer.png")
        name = entity_buttons[0].text
        entity_buttons[0].click()
        _wait(browser, lambda d: _text(d, "#explorer-info h3") == name)

        browser.find_element(By.ID, "entity-search").clear()
        browser.find_element(By.ID, "entity-search").send_keys("zzzz")
        _wait(browser, lambda d: "no entity named like that" in (_text(d, "#entity-results") or ""))


def _evidence_graph(n_nodes: int = 150, seed: int = 7) -> dict:
    """An evidence graph the size of the server's limit: chunks, entities, communities, relation and contains edges."""
    rng = random.Random(seed)
    words = ["Ostravel", "Korvath", "Lunmoor", "Haldmere", "Dunmore", "Vellin", "Cawl", "Sevrin", "Marrow", "Orrin",
             "Glass", "Salt", "Crown", "Lantern", "Ferry", "Prize", "Harbour", "Society", "Opera", "Bridge"]
    nodes, edges = [], []
    for i in range(n_nodes):
        kind = "chunk" if i < 25 else "community" if i < 35 else "entity"
        label = " ".join(rng.sample(words, rng.choice([1, 2, 2, 3])))
        nodes.append({"id": f"n{i}", "kind": kind, "label": label if kind != "chunk" else f"{label} (doc-{i})",
                      "evidence": kind != "chunk" or i < 5, "retrieved": i < 10, "score": rng.random() if i < 60 else None,
                      "chunks": []})
    for i in range(35, n_nodes):  # entities: a tree of relations plus some cross links, each in a chunk or two
        if i > 35:
            edges.append(("relation", f"n{i}", f"n{rng.randrange(35, i)}"))
        edges.append(("contains", f"n{rng.randrange(0, 25)}", f"n{i}"))
    for _ in range(40):
        a, b = rng.sample(range(35, n_nodes), 2)
        edges.append(("relation", f"n{a}", f"n{b}"))
    for c in range(25, 35):
        for m in rng.sample(range(35, n_nodes), 4):
            edges.append(("member", f"n{c}", f"n{m}"))
    unique = list(dict.fromkeys(edges))
    return {"nodes": nodes, "edges": [{"id": f"e{i}", "source": s, "target": t, "label": k, "kind": k}
                                      for i, (k, s, t) in enumerate(unique)], "chunks": {}, "truncated": True}


def test_evidence_graph_of_150_nodes_is_readable(index, browser, tmp_path, monkeypatch):
    """Two methods side by side (the narrow case), each drawing a 150-node evidence graph: every node inside the
    box, no two nodes overlapping, many labels shown, no shown label covering another label or a node, the font
    at least 10 px on screen, and more labels after zooming in."""
    import llama_index_graphrag_suite.serve.routes_query as routes_query

    graph = _evidence_graph()
    monkeypatch.setattr(routes_query, "evidence_graph", lambda index, result: graph)
    with running_server(create_app(index)) as url:
        _open(browser, url)
        _ask(browser, QUESTION, "hybrid", "bm25")
        assert _error(browser) == ""
        browser.execute_script("return new Promise(r => requestAnimationFrame(() => requestAnimationFrame(r)))")
        for key in ("a", "b"):
            report = browser.execute_script("""
                const cy = window.graphragGraphs[arguments[0]], w = cy.width(), h = cy.height();
                const over = (a, b) => a.x1 < b.x2 - 0.5 && b.x1 < a.x2 - 0.5 && a.y1 < b.y2 - 0.5 && b.y1 < a.y2 - 0.5;
                const boxes = cy.nodes().map(n => n.renderedBoundingBox({includeLabels: false, includeOverlays: false}));
                const labelled = cy.nodes('.labelled');
                const labels = labelled.map(n => window.GraphView.labelBox(n));
                const drawn = labelled.map(n => n.renderedBoundingBox({includeNodes: false, includeEdges: false, includeLabels: true}));
                let nodePairs = 0, labelPairs = 0, labelOnNode = 0;
                for (let i = 0; i < boxes.length; i++) for (let j = i + 1; j < boxes.length; j++) nodePairs += over(boxes[i], boxes[j]);
                for (let i = 0; i < labels.length; i++) for (let j = i + 1; j < labels.length; j++) labelPairs += over(labels[i], labels[j]) || over(drawn[i], drawn[j]);
                const ids = labelled.map(n => n.id());
                cy.nodes().forEach((n, k) => { labels.forEach((l, i) => { if (ids[i] !== n.id() && over(l, boxes[k])) labelOnNode++; }); });
                const outside = boxes.filter(b => b.x1 < 0 || b.y1 < 0 || b.x2 > w || b.y2 > h).length;
                const widthError = Math.max(...labels.map((l, i) => Math.abs((drawn[i].x2 - drawn[i].x1) - (l.x2 - l.x1))));
                const fontPx = parseFloat(cy.nodes()[0].style('font-size')) * cy.zoom();
                return {nodes: cy.nodes().length, w, h, nodePairs, labelPairs, labelOnNode, outside,
                        labelled: labelled.length, fontPx, widthError, drawnWidth: Math.min(...drawn.map(d => d.x2 - d.x1))};
            """, key)
            assert report["nodes"] == 150 and report["outside"] == 0, report
            assert report["nodePairs"] == 0 and report["labelPairs"] == 0 and report["labelOnNode"] == 0, report
            assert report["labelled"] >= 40, report
            assert report["fontPx"] >= 10, report
            assert report["drawnWidth"] > 0 and report["widthError"] < 12, report  # our label boxes are Cytoscape's
        more = browser.execute_script("""
            const cy = window.graphragGraphs.a, before = cy.nodes('.labelled').length;
            cy.zoom({level: cy.zoom() * 2, renderedPosition: {x: cy.width() / 2, y: cy.height() / 2}});
            window.GraphView.placeLabels(cy);
            const inView = cy.nodes().filter(n => { const b = n.renderedBoundingBox();
                return b.x1 >= 0 && b.y1 >= 0 && b.x2 <= cy.width() && b.y2 <= cy.height(); }).length;
            return [before, cy.nodes('.labelled').length, inView, parseFloat(cy.nodes()[0].style('font-size')) * cy.zoom()];
        """)
        assert more[3] >= 10 and more[1] >= min(more[2], more[0]) * 0.9, more  # zoomed in: most nodes in view named
        browser.execute_script("const cy = window.graphragGraphs.a; cy.zoom(cy.zoom() / 2); cy.center(); window.GraphView.placeLabels(cy);")
        _screenshot(browser, tmp_path, "serve-evidence-150.png")


def test_api_key_and_read_only_server(index, browser):
    with running_server(create_app(index, api_key="s3cret", read_only=True)) as url:
        _open(browser, url)
        assert browser.find_element(By.ID, "key-row").is_displayed()
        assert "read-only" in browser.find_element(By.ID, "status").text
        assert _error(browser) == "Could not list the methods: this server wants an API key: enter it above"
        key = browser.find_element(By.ID, "api-key")
        key.send_keys("s3cret")
        browser.execute_script("arguments[0].dispatchEvent(new Event('change'))", key)
        _wait(browser, lambda d: len(Select(d.find_element(By.ID, "method-a")).options) > 3)
        assert _error(browser) == ""
        _ask(browser, QUESTION, "bm25")
        assert _error(browser) == "" and browser.find_elements(By.CSS_SELECTOR, ".column .chunks li")
        browser.find_element(By.CSS_SELECTOR, '#tabs [data-tab="documents"]').click()
        _documents_loaded(browser, None)
        assert len(_rows(browser)) == 40
        assert not browser.find_element(By.ID, "upload-box").is_displayed()
        assert browser.find_elements(By.CSS_SELECTOR, "#doc-table button.delete") == []
