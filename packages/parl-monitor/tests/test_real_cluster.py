"""The monitor against a real loopback xparl cluster (parl_remote): 2 clients, 3 actors, one remote error.

Checks the JSON API and the pages (Flask test client, and the monitor as its own process in headless
Chromium) against ``xparl status --json``, then kills an actor with SIGKILL and waits for the new state.
"""

from __future__ import annotations

import json
import os
import pathlib
import signal
import socket
import subprocess
import sys

import pytest
from browser_helpers import check_overview, field, row_field, wait_for

from parl_monitor import create_app, start_monitor_process, stop_monitor_process, wait_monitor_ready

pytestmark = pytest.mark.timeout(120)

HERE = pathlib.Path(__file__).parent
FAST = {"XPARL_HEARTBEAT_INTERVAL_S": "0.2", "XPARL_HEARTBEAT_LIVENESS": "5",
        "XPARL_CLIENT_HEARTBEAT_INTERVAL_S": "0.3", "XPARL_RESOURCE_WAIT_S": "20"}


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    from parl_remote import ClusterClient
    from parl_remote.cluster import LocalCluster

    saved = {k: os.environ.get(k) for k in [*FAST, "XPARL_HOME"]}
    os.environ.update(FAST)
    os.environ["XPARL_HOME"] = str(tmp_path_factory.mktemp("xparl-home"))
    c = LocalCluster(cpu_num=4, parent_pid=os.getpid())
    c.start()
    try:
        with ClusterClient(c.address, token=c.token, timeout_s=3.0) as cc:
            wait_for(lambda: cc.status()["cpus"]["total"] == 4, timeout_s=30, what="the worker to register")
        yield c
    finally:
        c.stop()
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value


@pytest.fixture(scope="module")
def clients(cluster, tmp_path_factory):
    """Two client processes: A with 2 actors (the second raised ZeroDivisionError), B with 1 actor."""
    procs = []
    env = dict(os.environ, XPARL_TOKEN=cluster.token, PYTHONUNBUFFERED="1")
    for tag, n, do_raise in (("A", 2, "1"), ("B", 1, "0")):
        workdir = tmp_path_factory.mktemp(f"client-{tag}")
        script = workdir / "train.py"
        script.write_text((HERE / "cluster_client_script.py").read_text())
        proc = subprocess.Popen([sys.executable, str(script), cluster.address, tag, str(n), do_raise], cwd=workdir,
                                env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                text=True)
        procs.append(proc)
    try:
        for proc in procs:
            lines = []
            for line in proc.stdout:  # bounded by the module timeout; the client prints READY or exits
                lines.append(line)
                if line.strip() == "READY":
                    break
            else:
                pytest.fail(f"client exited with {proc.wait()}: {''.join(lines)}")
        yield procs
    finally:
        for proc in procs:
            if proc.poll() is None:
                proc.stdin.close()
        for proc in procs:
            try:
                proc.wait(20)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(10)


def xparl_status(cluster) -> dict:
    """What ``xparl status --json`` prints for this cluster."""
    out = subprocess.run([sys.executable, "-m", "parl_remote.cli", "status", "--address", cluster.address,
                          "--token", cluster.token, "--json"], capture_output=True, text=True, timeout=30,
                         check=True).stdout
    return json.loads(out)


def _mine(status: dict, procs) -> tuple[list[dict], list[dict]]:
    pids = {p.pid for p in procs}
    cl = [c for c in status["clients"] if c["pid"] in pids]
    ids = {c["id"] for c in cl}
    return cl, [a for a in status["actors"] if a["client_id"] in ids]


def test_api_against_real_cluster(cluster, clients):
    app = create_app({"ADDRESS": cluster.address, "TOKEN": cluster.token, "CACHE_TTL_S": 0.0})
    c = app.test_client()
    status = xparl_status(cluster)
    mine_clients, mine_actors = _mine(status, clients)
    assert len(mine_clients) == 2 and len(mine_actors) == 3
    body = c.get("/api/overview").get_json()
    assert body["cpus"] == {"total": 4, "used": 3, "vacant": 1}
    assert body["counts"]["workers"] == 1 and body["counts"]["clients"] == 2
    assert body["counts"]["actors_alive"] == 3 and body["counts"]["errors"] == 1
    assert body["workers"][0]["cpus_used"] == 3 and body["workers"][0]["actors"] == 3
    # The client pages list their actors, with the script that runs them.
    by_pid = {cl["pid"]: cl for cl in c.get("/api/clients").get_json()["clients"]}
    a_client = by_pid[clients[0].pid]
    expected = next(cl for cl in mine_clients if cl["pid"] == clients[0].pid)
    assert a_client["script"].endswith("train.py") and a_client["host"] == expected["host"]
    assert a_client["started_at"] == expected["started_at"]
    page = c.get(f"/api/clients/{a_client['id']}").get_json()
    assert len(page["actors"]) == 2 and {a["class_name"] for a in page["actors"]} == {"Greeter"}
    html = c.get(f"/clients/{a_client['id']}").get_data(as_text=True)
    assert a_client["script"] in html and all(f'data-id="{a["id"]}"' in html for a in page["actors"])
    # Without the token (a loopback monitor not started with --public), the actors' own output is withheld:
    # the errors page and the logs answer 401, records keep only the error's type.
    assert c.get("/api/errors").status_code == 401 and c.get("/errors").status_code == 401
    assert all(c.get(f"/api/actors/{a['id']}/log").status_code == 401 for a in page["actors"])
    (hidden,) = [a for a in c.get("/api/actors").get_json()["actors"] if a["last_error"]]
    assert hidden["last_error"]["type"].endswith("ZeroDivisionError") and hidden["last_error"]["hidden"] is True
    assert hidden["last_error"]["message"] is None and hidden["last_error"]["traceback"] is None
    html = c.get(f"/actors/{hidden['id']}").get_data(as_text=True)
    assert "ZeroDivisionError" in html and "division by zero" not in html and "return 1 / x" not in html
    assert c.get(f"/?token={cluster.token}").status_code == 302  # the session cookie now grants them
    # The remote error, with its traceback, in one place and on the actor's page.
    (err,) = c.get("/api/errors").get_json()["errors"]
    assert err["type"].endswith("ZeroDivisionError") and "division by zero" in err["message"]
    assert "Traceback" in err["traceback"] and "divide" in err["traceback"]
    html = c.get(f"/actors/{err['actor_id']}").get_data(as_text=True)
    assert "division by zero" in html and "return 1 / x" in html
    # Each actor's log, read by actor id through the master.
    for actor in page["actors"]:
        log = wait_for(lambda a=actor: (b := c.get(f"/api/actors/{a['id']}/log").get_json())["data"] and b,
                       timeout_s=20, what="actor log data")
        assert "hello from A-" in log["data"]
        dl = c.get(f"/api/actors/{actor['id']}/log/download")
        assert dl.status_code == 200 and "hello from A-" in dl.get_data(as_text=True)
    assert c.get("/api/actors/a-does-not-exist/log").status_code == 404
    assert c.get("/api/actors/..%2F..%2Fetc%2Fpasswd/log").status_code == 404
    app.extensions["parl_monitor"].close()


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_browser_against_real_cluster(cluster, clients, browser, artifacts_dir):
    port = free_port()
    proc = start_monitor_process(cluster.address, port, token=cluster.token, parent_pid=os.getpid(),
                                 refresh_s=0.5, log_file=artifacts_dir / "real-monitor.log")
    url = f"http://127.0.0.1:{port}"
    try:
        wait_monitor_ready("127.0.0.1", port, timeout_s=30, proc=proc)
        browser.get(url + "/")
        check_overview(browser, xparl_status(cluster))
        assert field(browser, "cpus.used") == "3" and field(browser, "counts.actors_alive") == "3"
        browser.save_screenshot(str(artifacts_dir / "real-overview.png"))

        status = xparl_status(cluster)
        (worker,) = status["workers"]
        browser.get(f"{url}/workers/{worker['id']}")
        assert field(browser, "cpus_used") == str(worker["cpus_used"])
        assert field(browser, "cpus_total") == str(worker["cpus_total"])
        assert field(browser, "host") == worker["host"] and field(browser, "pid") == str(worker["pid"])
        wait_for(lambda: int(browser.execute_script(
            "var s = document.querySelector('#chart svg'); return s ? s.getAttribute('data-samples') : 0;")) >= 2,
            timeout_s=30, what="two load samples in the chart")
        browser.save_screenshot(str(artifacts_dir / "real-worker.png"))

        mine_clients, mine_actors = _mine(status, clients)
        a_client = next(cl for cl in mine_clients if cl["pid"] == clients[0].pid)
        browser.get(f"{url}/clients/{a_client['id']}")
        assert field(browser, "script") == a_client["script"] and field(browser, "actors") == "2"
        browser.save_screenshot(str(artifacts_dir / "real-client.png"))

        failing = next(a for a in mine_actors if a["last_error"])
        browser.get(f"{url}/actors/{failing['id']}")
        assert field(browser, "last_error.type") == failing["last_error"]["type"]
        assert "token" in field(browser, "last_error.hidden") and "token" in field(browser, "log.hidden")
        from selenium.webdriver.common.by import By

        browser.find_element(By.NAME, "token").send_keys(cluster.token)  # the page's own token form
        browser.find_element(By.NAME, "token").submit()
        wait_for(lambda: browser.find_elements(By.ID, "log"), timeout_s=10, what="the log after the token form")
        assert field(browser, "pid") == str(failing["pid"]) and field(browser, "state") == "alive"
        assert field(browser, "last_error.type") == failing["last_error"]["type"]
        assert "division by zero" in field(browser, "last_error.traceback")
        wait_for(lambda: "hello from A-1" in browser.execute_script("return document.getElementById('log').innerText"),
                 timeout_s=20, what="the actor's log in the page")
        browser.save_screenshot(str(artifacts_dir / "real-actor.png"))

        # kill -9 the actor of client B: the overview shows it dead and its CPU vacant, without a reload.
        victim = next(a for a in mine_actors if a["client_id"] != a_client["id"])
        browser.get(url + "/")
        os.kill(victim["pid"], signal.SIGKILL)
        wait_for(lambda: row_field(browser, "actors-table", victim["id"], "state") == "dead", timeout_s=15,
                 what="the killed actor shown dead")
        wait_for(lambda: field(browser, "cpus.used") == "2", timeout_s=15, what="its CPU shown vacant")
        after = xparl_status(cluster)
        check_overview(browser, after)
        assert field(browser, "counts.actors_alive") == "2" and field(browser, "cpus.vacant") == "2"
        browser.save_screenshot(str(artifacts_dir / "real-after-kill.png"))
    finally:
        assert stop_monitor_process(proc) is True
        assert proc.returncode is not None


def test_metrics_from_the_light_reply_equal_those_from_the_full_snapshot(cluster, clients):
    """``/metrics`` asks the master for its metrics reply (no client or actor lists); the figures it gives are those
    the full snapshot gives."""
    from prometheus_client.parser import text_string_to_metric_families

    from parl_monitor.metrics import _cluster_families
    from parl_remote import ClusterClient

    with ClusterClient(cluster.address, token=cluster.token, timeout_s=5.0) as cc:
        light, full = cc.status(metrics=True), cc.status()
    assert "actors" not in light and "clients" not in light and light["workers"] and light["process"]
    assert {w["id"] for w in light["workers"]} == {w["id"] for w in full["workers"]}

    def gauges(samples) -> dict:
        stable = ("parl_workers", "parl_clients", "parl_cpus", "parl_cpus_used", "parl_actors_alive",
                  "parl_worker_cpus", "parl_worker_cpus_used", "parl_worker_memory_total_bytes")
        return {(s.name, tuple(sorted(s.labels.items()))): s.value for s in samples if s.name in stable}

    from_full = gauges(s for f in _cluster_families(full) for s in f.samples)
    app = create_app({"ADDRESS": cluster.address, "TOKEN": cluster.token, "CACHE_TTL_S": 0.0})
    text = app.test_client().get("/metrics").get_data(as_text=True)
    from_light = gauges(s for f in text_string_to_metric_families(text) for s in f.samples)
    assert from_light == from_full and from_full[("parl_actors_alive", ())] >= 2  # (the browser test kills one)
    app.extensions["parl_monitor"].close()
