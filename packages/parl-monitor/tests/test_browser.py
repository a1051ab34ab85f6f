"""The monitor in a real headless Chromium (Debian's package, driven by Selenium) against a fake cluster.

Loads every page, checks the shown figures against the status data, follows the live refresh after a kill,
the live log tail and the load chart, and saves a screenshot of each page under the test-artifacts folder.
"""

from __future__ import annotations

from browser_helpers import check_overview, field, load_text, mb, row_field, row_ids, wait_for
from fake_cluster import FakeCluster
from selenium.webdriver.common.by import By

from parl_monitor import create_app
from parl_monitor.app import format_time


def _app(fake, **extra):
    config = {"CLIENT": fake, "CACHE_TTL_S": 0.0, "HISTORY_INTERVAL_S": 0.0, "REFRESH_S": 0.3, "PUBLIC": True}
    config.update(extra)
    return create_app(config)


def test_pages_in_chromium(browser, serve, artifacts_dir):
    fake = FakeCluster()
    site = serve(_app(fake))
    snap = fake.snapshot

    browser.get(site.url + "/")
    assert browser.title == "Cluster overview · xparl monitor"
    check_overview(browser, snap)
    assert field(browser, "memory.used_mb") == mb(3200)
    assert row_field(browser, "workers-table", "w-bbb", "load_avg") == load_text([1.25, 1.0, 0.75])
    browser.save_screenshot(str(artifacts_dir / "fake-overview.png"))

    # Navigate by clicking, as a user would: overview -> worker.
    browser.execute_script("document.querySelector('#workers-table a[href=\"/workers/w-aaa\"]').click();")
    wait_for(lambda: browser.title.startswith("Worker w-aaa"), what="the worker page")
    assert field(browser, "cpus_used") == "2" and field(browser, "cpus_total") == "4"
    assert field(browser, "memory_used_mb") == mb(1200) and field(browser, "memory_percent") == "5.0"
    assert field(browser, "load_avg") == load_text([0.5, 0.4, 0.3])
    assert sorted(row_ids(browser, "actors-table")) == ["a-1", "a-2"]
    # The chart fills in as the page polls the history (each poll samples the status: interval 0 here).
    wait_for(lambda: int(browser.find_element(By.CSS_SELECTOR, "#chart svg").get_attribute("data-samples")) >= 3,
             what="a chart with 3 samples")
    # read in one script: the chart is redrawn on every poll, so elements found earlier can go stale
    lines = browser.execute_script(
        "return Array.from(document.querySelectorAll('#chart svg polyline'), p => p.getAttribute('points'));")
    assert len(lines) == 3 and all(len(points.split()) >= 3 for points in lines)
    browser.save_screenshot(str(artifacts_dir / "fake-worker.png"))

    browser.get(site.url + "/clients/c-111")
    assert field(browser, "script") == "/home/u/train.py" and field(browser, "host") == "127.0.0.1"
    assert field(browser, "started_at") == format_time(snap["clients"][0]["started_at"])
    assert row_ids(browser, "actors-table") == ["a-1", "a-2"]
    browser.save_screenshot(str(artifacts_dir / "fake-client.png"))

    browser.get(site.url + "/actors/a-2")
    assert field(browser, "state") == "alive" and field(browser, "pid") == "301"
    assert field(browser, "last_error.type") == "ZeroDivisionError"
    assert "return 1 / 0" in field(browser, "last_error.traceback")
    log = browser.find_element(By.ID, "log")
    wait_for(lambda: log.text == "héllo wörld\n" * 3 or log.text == ("héllo wörld\n" * 3).strip(),
             what="the actor log")
    fake.append_log("a-2", b"tail line 1\n")  # live tail: the page polls the log API from its offset
    wait_for(lambda: log.text.endswith("tail line 1"), what="the new log line")
    href = browser.find_element(By.ID, "download").get_attribute("href")
    assert href == site.url + "/api/actors/a-2/log/download"
    size = len(fake.logs["a-2"])
    wait_for(lambda: field(browser, "log.bytes") == str(size), what="the log size")
    browser.save_screenshot(str(artifacts_dir / "fake-actor.png"))

    # a long log: the page opens on its last MiB (not its first), then follows it
    fake.append_log("a-1", b"".join(b"line %07d\n" % i for i in range(200_000)))  # 2.4 MB
    browser.get(site.url + "/actors/a-1")
    log = browser.find_element(By.ID, "log")
    wait_for(lambda: log.text.endswith("line 0199999"), what="the end of a long log")
    assert "line 0000000" not in log.text and "line 0150000" in log.text
    assert field(browser, "log.bytes") == str(len(fake.logs["a-1"]))
    first_read = next(call for call in fake.log_calls if call[0] == "a-1")
    assert first_read[1] < 0  # a tail read, not a read from byte 0

    browser.get(site.url + "/errors")
    assert field(browser, "errors.count") == "1"
    assert field(browser, "type", '[data-id="a-2"]') == "ZeroDivisionError"
    browser.save_screenshot(str(artifacts_dir / "fake-errors.png"))


def test_page_follows_a_kill_without_reload(browser, serve):
    fake = FakeCluster()
    site = serve(_app(fake))
    browser.get(site.url + "/")
    check_overview(browser, fake.snapshot)
    marker = browser.execute_script("window.__noReload = 1; return window.__noReload;")
    assert marker == 1
    fake.kill_actor("a-1")
    wait_for(lambda: field(browser, "cpus.used") == "1", what="the live refresh after a kill")
    check_overview(browser, fake.snapshot)
    assert browser.execute_script("return window.__noReload;") == 1  # updated in place, not reloaded
    assert row_field(browser, "actors-table", "a-1", "state") == "dead"

    browser.get(site.url + "/actors/a-1")
    fake.fail = ConnectionError("master gone")  # the cluster stops answering: the page says so
    wait_for(lambda: "did not answer" in browser.find_element(By.ID, "banner").text, what="the stale banner")
    assert "stale" in browser.find_element(By.ID, "updated").get_attribute("class")


def test_token_page_in_chromium(browser, serve, artifacts_dir):
    fake = FakeCluster()
    site = serve(_app(fake, HOST="0.0.0.0", TOKEN="tok-123"))
    browser.delete_all_cookies()
    browser.get(site.url + "/")
    assert field(browser, "error.code") == "401" and "w-aaa" not in browser.page_source
    browser.save_screenshot(str(artifacts_dir / "fake-401.png"))
    browser.find_element(By.NAME, "token").send_keys("tok-123")
    browser.find_element(By.CSS_SELECTOR, "form button").click()
    # The form sends /?token=...; the monitor sets the cookie and redirects to / (the URL of the 401 page too,
    # so wait for the overview's figures rather than for the URL).
    wait_for(lambda: browser.execute_script("return document.querySelector('[data-field=\"cpus.total\"]') !== null"),
             what="the overview after the token form")
    assert browser.current_url == site.url + "/"
    check_overview(browser, fake.snapshot)
    browser.get(site.url + "/actors/a-1")  # the session cookie keeps access
    assert field(browser, "pid") == "300"
