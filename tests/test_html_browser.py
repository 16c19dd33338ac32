"""The HTML pages in a real browser (issue 34): Debian's chromium, headless, driven through
chromium-driver with selenium. A page must log no console error and make no network request;
the sort and fold controls must work; the screenshot must not be blank; the DOM after the
scripts ran must hold the recommended layout's numbers.

`.ci/run` installs chromium and chromium-driver (apt) when they are missing and says so loudly
when it cannot; under CI a missing browser fails these tests instead of skipping them.
"""

import json
import os
import shutil
from pathlib import Path

import pytest

from html_support import PAGES

pytestmark = pytest.mark.xdist_group("html")  # test_html.py's pages (conftest.html_pages)

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
DRIVER = shutil.which("chromedriver")


def _need_browser():
    if CHROMIUM and DRIVER:
        return
    why = ("Debian's chromium and chromium-driver are not installed (apt-get install chromium "
           "chromium-driver); .ci/run installs them")
    if os.environ.get("CI"):
        pytest.fail(why)
    pytest.skip(why)


@pytest.fixture(scope="module")
def pages(html_pages):
    _need_browser()
    return html_pages


def _options(width: int, height: int):
    from selenium.webdriver.chrome.options import Options
    opts = Options()
    opts.binary_location = CHROMIUM
    for arg in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                "--hide-scrollbars", "--no-first-run", "--disable-extensions",
                "--disable-background-networking", "--disable-component-update",
                "--disable-default-apps", "--disable-sync",
                f"--window-size={width},{height}"):
        opts.add_argument(arg)
    opts.set_capability("goog:loggingPrefs", {"browser": "ALL", "performance": "ALL"})
    return opts


@pytest.fixture(scope="module")
def browser():
    """One browser for the module; a test that resizes it or emulates print puts it back."""
    _need_browser()
    os.environ.setdefault("SE_OFFLINE", "true")  # selenium's manager must not fetch a driver
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service
    driver = webdriver.Chrome(service=Service(DRIVER), options=_options(1280, 900))
    yield driver
    driver.quit()


def resize(driver, width: int, height: int) -> None:
    """The window at ``width`` x ``height``; the page sees the new width a moment later."""
    import time
    driver.set_window_size(width, height)
    for _ in range(100):
        if driver.execute_script("return window.innerWidth") == width:
            return
        time.sleep(0.05)
    raise AssertionError(f"the window did not take width {width}")


def open_page(driver, path: Path):
    """Load ``path``; (console errors, network requests other than the page itself)."""
    driver.get_log("browser")  # drop what earlier pages logged
    driver.get_log("performance")
    url = path.resolve().as_uri()
    driver.get(url)
    driver.execute_script("return document.readyState")
    errors = [e for e in driver.get_log("browser") if e["level"] in ("SEVERE", "ERROR")]
    requests = []
    for entry in driver.get_log("performance"):
        msg = json.loads(entry["message"])["message"]
        if msg["method"] == "Network.requestWillBeSent":
            req = msg["params"]["request"]["url"]
            if req != url and not req.startswith("data:"):
                requests.append(req)
    return errors, requests


# ---- the detectors can fail -----------------------------------------------------------------

def test_the_detectors_see_an_error_and_a_request(browser, tmp_path):
    bad = tmp_path / "bad.html"
    bad.write_text("<!DOCTYPE html><html><head><title>x</title></head><body>"
                   f"<img src='{(tmp_path / 'missing.png').as_uri()}' alt=''>"
                   "<script>undefinedFunction();</script></body></html>")
    errors, requests = open_page(browser, bad)
    assert any("undefinedFunction" in e["message"] for e in errors)
    assert any(r.endswith("missing.png") for r in requests)


# ---- every page: no error, no request, not blank --------------------------------------------

@pytest.mark.parametrize("name", list(PAGES))
def test_page_opens_clean(browser, pages, name, tmp_path):
    errors, requests = open_page(browser, pages[name][0])
    assert errors == [] and requests == [], (errors, requests)
    from PIL import Image, ImageStat
    shot = tmp_path / f"{name}.png"
    assert browser.save_screenshot(str(shot))
    stat = ImageStat.Stat(Image.open(shot).convert("L"))
    assert stat.stddev[0] > 20, "a blank or near-blank screenshot"  # white page: 0


def test_dump_dom_holds_the_recommended_numbers(browser, pages):
    # the DOM after the scripts ran, as `chromium --dump-dom` prints it, read from the module's
    # browser (a second chromium started for it cost ~1.5 s CPU)
    page, data = pages["plan"]
    open_page(browser, page)
    rec = data["recommended"]
    dom = browser.execute_script("return document.documentElement.outerHTML")
    for text in (f"{rec['step_time_s']:,.2f}", f"{rec['tokens_per_s']:,.0f}",
                 f"{rec['mfu']:.1%}", f"{rec['gpu_memory_bytes'] / 1e9:,.1f}",
                 f"TP {rec['tp']} · PP {rec['pp']} · DP {rec['dp']}"):
        assert text in dom, text


# ---- the controls work ----------------------------------------------------------------------

def _column(driver, key):
    return driver.execute_script(
        "return Array.from(document.querySelectorAll('#t0 tbody tr')).map("
        "r => r.querySelector('[data-key=\"' + arguments[0] + '\"]').getAttribute('data-sort')"
        " ?? r.querySelector('[data-key=\"' + arguments[0] + '\"]').textContent.trim())", key)


def test_sorting_the_layouts(browser, pages):
    from selenium.webdriver.common.by import By
    open_page(browser, pages["plan"][0])
    heads = browser.find_elements(By.CSS_SELECTOR, "#t0 thead th")
    names = [h.text.strip("↕▲▼ \u2009") for h in heads]
    step = heads[names.index("step s")]
    before = [float(v) for v in _column(browser, "step_time_s")]
    assert before == sorted(before)  # the planner's order: fastest first
    step.find_element(By.TAG_NAME, "button").click()
    assert step.get_attribute("aria-sort") == "ascending"
    step.find_element(By.TAG_NAME, "button").click()
    assert step.get_attribute("aria-sort") == "descending"
    assert [float(v) for v in _column(browser, "step_time_s")] == sorted(before, reverse=True)
    gpu = heads[names.index("GPU GB")]
    gpu.find_element(By.TAG_NAME, "button").click()
    mem = [float(v) for v in _column(browser, "gpu_GB")]
    assert mem == sorted(mem) and step.get_attribute("aria-sort") == "none"


def test_folding_the_equations(browser, pages):
    from selenium.webdriver.common.by import By
    open_page(browser, pages["plan"][0])
    folds = browser.find_elements(By.CSS_SELECTOR, "#equations details")
    assert len(folds) >= 5 and not any(f.get_property("open") for f in folds)
    first = folds[0]
    assert not first.find_element(By.TAG_NAME, "table").is_displayed()
    browser.execute_script("arguments[0].scrollIntoView()", first)
    first.find_element(By.TAG_NAME, "summary").click()
    assert first.get_property("open") and first.find_element(By.TAG_NAME, "table").is_displayed()
    browser.find_element(By.CSS_SELECTOR, "button[data-fold=open]").click()
    assert all(f.get_property("open") for f in folds)
    browser.find_element(By.CSS_SELECTOR, "button[data-fold=close]").click()
    assert not any(f.get_property("open") for f in folds)
    browser.execute_script("window.dispatchEvent(new Event('beforeprint'))")  # printing
    assert all(f.get_property("open") for f in folds)
    browser.execute_script("window.dispatchEvent(new Event('afterprint'))")
    assert not any(f.get_property("open") for f in folds)


def test_copy_selects_the_export(browser, pages):
    from selenium.webdriver.common.by import By
    errors, _ = open_page(browser, pages["plan"][0])
    btn = browser.find_element(By.CSS_SELECTOR, "#export button.copy")
    browser.execute_script("arguments[0].scrollIntoView()", btn)
    btn.click()
    selected = browser.execute_script("return window.getSelection().toString()")
    assert selected.strip() == browser.find_element(By.ID, "export-1").text.strip() != ""
    assert [e for e in browser.get_log("browser") if e["level"] == "SEVERE"] == []


@pytest.mark.parametrize("name", ["plan", "step"])
def test_readable_on_a_phone(browser, pages, name):
    """At 390 px the page never scrolls sideways (wide tables scroll in their own box)."""
    resize(browser, 390, 844)
    try:
        errors, requests = open_page(browser, pages[name][0])
        assert errors == [] and requests == []
        width = browser.execute_script("return document.documentElement.scrollWidth")
        inner = browser.execute_script("return window.innerWidth")
        assert width <= inner, (width, inner)
    finally:
        resize(browser, 1280, 900)


def test_printed_page(browser, pages):
    """Print media (the stylesheet asks for A4 landscape, about 1,030 CSS px of text): the
    navigation and buttons are gone, every fold opens, no table runs off the page."""
    resize(browser, 1030, 900)
    try:
        open_page(browser, pages["plan"][0])
        browser.execute_cdp_cmd("Emulation.setEmulatedMedia", {"media": "print"})
        browser.execute_script("window.dispatchEvent(new Event('beforeprint'))")
        hidden = browser.execute_script(
            "return ['header.top nav', '.foldall', 'button.copy'].map("
            "s => getComputedStyle(document.querySelector(s)).display)")
        assert hidden == ["none"] * 3
        assert browser.execute_script(
            "return Array.from(document.querySelectorAll('details')).every(d => d.open)")
        wide = browser.execute_script(
            "return Array.from(document.querySelectorAll('table')).filter("
            "t => t.getBoundingClientRect().right > innerWidth + 1).map(t => t.id)")
        assert wide == []
    finally:
        browser.execute_cdp_cmd("Emulation.setEmulatedMedia", {"media": ""})
        resize(browser, 1280, 900)
