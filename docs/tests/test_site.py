"""The built site: internal links and anchors resolve, and it works in headless Chromium.

The site is the HTML build in ``$PARL_DOCS_HTML`` (``nox -s docs`` builds it with ``sphinx-build -W`` first);
without that variable it is built here into a temporary directory. The browser is Debian's ``chromium`` driven
by selenium through ``chromedriver``, as in the monitor's tests
(``packages/parl-monitor/tests/install_chromium.sh`` installs them); missing, the browser tests fail.
"""

from __future__ import annotations

import functools
import html.parser
import http.server
import os
import pathlib
import shutil
import subprocess
import sys
import threading
import urllib.parse

import pytest

DOCS = pathlib.Path(__file__).resolve().parents[1]


@pytest.fixture(scope="session")
def site(tmp_path_factory) -> pathlib.Path:
    built = os.environ.get("PARL_DOCS_HTML")
    if built:
        path = pathlib.Path(built)
        assert (path / "index.html").is_file(), f"PARL_DOCS_HTML={built} holds no built site"
        return path
    out = tmp_path_factory.mktemp("html")
    subprocess.run([sys.executable, "-m", "sphinx", "-W", "--keep-going", "-q", "-b", "html", str(DOCS), str(out)],
                   check=True)
    return out


class _Links(html.parser.HTMLParser):
    """The ids and the link / image targets of one HTML page."""

    def __init__(self) -> None:
        super().__init__()
        self.ids: set[str] = set()
        self.targets: list[str] = []

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        if attrs.get("id"):
            self.ids.add(attrs["id"])
        if tag == "a" and attrs.get("name"):
            self.ids.add(attrs["name"])
        if tag == "a" and attrs.get("href"):
            self.targets.append(attrs["href"])
        if tag == "img" and attrs.get("src"):
            self.targets.append(attrs["src"])


@functools.cache
def _parse(path: pathlib.Path) -> _Links:
    parser = _Links()
    parser.feed(path.read_text(encoding="utf-8"))
    return parser


def broken_links(root: pathlib.Path) -> list[str]:
    """``page -> target`` for every internal link or image whose file or anchor does not exist."""
    broken = []
    for page in sorted(root.rglob("*.html")):
        if "_modules" in page.relative_to(root).parts:  # highlighted sources, if sphinx.ext.viewcode is enabled
            continue
        for target in _parse(page).targets:
            parts = urllib.parse.urlsplit(target)
            if parts.scheme or parts.netloc or target.startswith(("mailto:", "javascript:")):
                continue
            dest = page if not parts.path else (page.parent / urllib.parse.unquote(parts.path)).resolve()
            if dest.is_dir():
                dest = dest / "index.html"
            if not dest.exists():
                broken.append(f"{page.relative_to(root)} -> {target} (no file)")
            elif parts.fragment and dest.suffix == ".html" and parts.fragment not in _parse(dest).ids:
                broken.append(f"{page.relative_to(root)} -> {target} (no anchor)")
    return broken


def test_internal_links_and_anchors_resolve(site):
    pages = list(site.rglob("*.html"))
    assert len(pages) >= 40, f"only {len(pages)} pages built"
    assert broken_links(site) == []


def test_link_check_finds_a_broken_link(tmp_path):
    """The checker itself: a missing page and a missing anchor are reported, good links are not."""
    (tmp_path / "a.html").write_text('<p id="top"><a href="b.html#nope">x</a> <a href="a.html#top">y</a> '
                                     '<a href="c.html">z</a> <a href="https://example.org/">w</a></p>')
    (tmp_path / "b.html").write_text('<h1 id="yes">b</h1>')
    assert broken_links(tmp_path) == ["a.html -> b.html#nope (no anchor)", "a.html -> c.html (no file)"]


def test_every_api_page_documents_its_package(site):
    for package in ("parl_core", "parl_algorithms", "parl_remote", "parl_monitor", "evokit"):
        text = (site / "api" / f"{package}.html").read_text(encoding="utf-8")
        assert f'id="module-{package}"' in text, package
    core = (site / "api" / "parl_core.html").read_text(encoding="utf-8")
    for cls, methods in (("Agent", ("learn", "predict", "sample", "save", "restore", "get_weights")),
                         ("Algorithm", ("learn", "predict", "sample", "get_weights", "get_all_weights"))):
        for method in methods:  # inherited from the framework-neutral base, shown on the class
            assert f'id="parl_core.{cls}.{method}"' in core, f"parl_core.{cls}.{method}"
    remote = (site / "api" / "parl_remote.html").read_text(encoding="utf-8")
    signature = remote.split('id="parl_remote.remote_class"')[1][:3000]  # the options, not (*args, **kwargs)
    assert "max_memory" in signature and "n_gpu" in signature
    for page in ("on_policy", "value_based", "off_policy", "offline", "multi_agent", "meta", "paddle"):
        assert (site / "api" / "algorithms" / f"{page}.html").is_file(), page
    assert 'id="parl_algorithms.PPO"' in (site / "api" / "algorithms" / "on_policy.html").read_text(encoding="utf-8")
    cli = (site / "api" / "cli.html").read_text(encoding="utf-8")
    for anchor in ("xparl-start", "xparl-connect", "xparl-status", "xparl-stop", "parl-monitor"):  # sphinx-click
        assert f'id="{anchor}"' in cli, anchor
    assert "--cpu-num" in cli


# -- the browser ---------------------------------------------------------------------------------------------

INSTALL_HINT = "run packages/parl-monitor/tests/install_chromium.sh (apt-get install chromium chromium-driver)"


@pytest.fixture(scope="module")
def browser(tmp_path_factory):
    chromium = os.environ.get("PARL_TEST_CHROMIUM") or shutil.which("chromium")
    driver_path = os.environ.get("PARL_TEST_CHROMEDRIVER") or shutil.which("chromedriver")
    if not chromium or not driver_path:
        pytest.fail(f"the site's browser tests need chromium and chromedriver: {INSTALL_HINT}")
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = chromium
    for flag in ("--headless=new", "--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-dev-shm-usage",
                 "--disable-background-networking", "--disable-component-update", "--disable-sync",
                 "--window-size=1400,1000", f"--user-data-dir={tmp_path_factory.mktemp('chromium-profile')}"):
        options.add_argument(flag)
    driver = webdriver.Chrome(service=Service(executable_path=driver_path), options=options)
    driver.set_page_load_timeout(60)
    try:
        yield driver
    finally:
        driver.quit()


@pytest.fixture(scope="module")
def served(site):
    """The site over HTTP on 127.0.0.1 (an ephemeral port), as a reader's browser would load it."""
    handler = functools.partial(_QuietHandler, directory=str(site))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


class _QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, format, *args):  # noqa: A002 (the base class's name)
        pass


def _wait(driver, condition, timeout_s=60):
    from selenium.webdriver.support.ui import WebDriverWait

    return WebDriverWait(driver, timeout_s, poll_frequency=0.2).until(condition)


def test_home_page_renders(browser, served):
    from selenium.webdriver.common.by import By

    browser.get(f"{served}/index.html")
    h1 = _wait(browser, lambda d: d.find_element(By.CSS_SELECTOR, "article h1"))
    assert h1.text.strip().rstrip("#¶").strip() == "PARL"
    nav = browser.find_element(By.CSS_SELECTOR, ".sidebar-tree").text
    for title in ("Installation", "Getting started", "Algorithms", "API reference"):
        assert title in nav, f"{title!r} not in the navigation: {nav!r}"


def test_search_finds_remote_class(browser, served):
    from selenium.webdriver.common.by import By

    browser.get(f"{served}/search.html?q=remote_class")

    def results(d):
        links = [a.get_attribute("href") for a in d.find_elements(By.CSS_SELECTOR, "ul.search li a")]
        return links if any("api/parl_remote.html" in link for link in links) else False

    links = _wait(browser, results)
    assert any(link.endswith("#parl_remote.remote_class") for link in links), links


def test_api_page_shows_a_signature(browser, served):
    from selenium.webdriver.common.by import By

    browser.get(f"{served}/api/parl_remote.html")
    sig = _wait(browser, lambda d: d.find_element(By.ID, "parl_remote.connect"))
    assert sig.is_displayed()
    text = " ".join(sig.text.split())
    assert text.startswith("parl_remote.connect(") and "address" in text, text
