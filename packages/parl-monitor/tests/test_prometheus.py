"""A real Prometheus scrapes the monitor of a real loopback cluster: Debian's ``prometheus``, started here on a free
loopback port with a generated configuration (scrape every 0.5 s), sees the actors, the grants and, after a
``kill -9`` of one actor, its death, through PromQL queries of its HTTP API (``/api/v1/query``).

Skipped only where the ``prometheus`` binary is missing (``tests/install_prometheus.sh`` installs it; the nox
session of parl-monitor runs that script)."""

from __future__ import annotations

import json
import os
import pathlib
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.parse
import urllib.request

import pytest
from browser_helpers import wait_for
from test_dashboard import dashboard_exprs

from parl_monitor import start_monitor_process, stop_monitor_process, wait_monitor_ready

pytestmark = pytest.mark.timeout(180)

HERE = pathlib.Path(__file__).parent
PROMETHEUS = shutil.which("prometheus")
FAST = {"XPARL_HEARTBEAT_INTERVAL_S": "0.2", "XPARL_HEARTBEAT_LIVENESS": "5",
        "XPARL_CLIENT_HEARTBEAT_INTERVAL_S": "0.3", "XPARL_RESOURCE_WAIT_S": "20"}


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def http_get(url: str, timeout_s: float = 2.0) -> tuple[int, str]:
    try:
        with urllib.request.urlopen(url, timeout=timeout_s) as response:
            return response.status, response.read().decode()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read().decode(errors="replace")


class Prometheus:
    """Debian's prometheus on ``127.0.0.1:<free port>``, scraping ``target`` every ``interval``; its files in
    ``root``."""

    def __init__(self, root: pathlib.Path, target: str, interval: str = "500ms") -> None:
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        config = root / "prometheus.yml"
        config.write_text(
            "global:\n"
            f"  scrape_interval: {interval}\n"
            f"  scrape_timeout: {interval}\n"
            "scrape_configs:\n"
            "  - job_name: parl\n"
            "    metrics_path: /metrics\n"
            "    static_configs:\n"
            f"      - targets: ['{target}']\n"
        )
        self.log = root / "prometheus.log"
        with open(self.log, "wb") as log:
            self.proc = subprocess.Popen(
                [PROMETHEUS, f"--config.file={config}", f"--storage.tsdb.path={root / 'data'}",
                 f"--web.listen-address=127.0.0.1:{self.port}"],
                stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT, cwd=root)

    def wait_ready(self, timeout_s: float = 60.0) -> None:
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"prometheus exited with {self.proc.returncode}: {self.log.read_text()[-3000:]}")
            try:
                if http_get(self.url + "/-/ready", 1.0)[0] == 200:
                    return
            except OSError:
                pass
            time.sleep(0.1)  # polling interval of a deadline-bounded wait
        raise TimeoutError(f"prometheus not ready within {timeout_s} s: {self.log.read_text()[-3000:]}")

    def query(self, promql: str) -> list[dict]:
        """The instant vector of ``promql`` (``[{"metric": {...}, "value": [t, "v"]}]``)."""
        status, body = http_get(f"{self.url}/api/v1/query?{urllib.parse.urlencode({'query': promql})}")
        reply = json.loads(body)
        assert status == 200 and reply["status"] == "success", (promql, status, body)
        return reply["data"]["result"]

    def scalar(self, promql: str) -> float | None:
        result = self.query(promql)
        return float(result[0]["value"][1]) if result else None

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(15)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(5)


@pytest.mark.skipif(PROMETHEUS is None, reason="Debian's prometheus is not installed (the `prometheus` binary is "
                    "missing): run packages/parl-monitor/tests/install_prometheus.sh")
def test_prometheus_scrapes_actors_grants_and_a_death(tmp_path):
    from parl_remote import ClusterClient
    from parl_remote.cluster import LocalCluster

    saved = {k: os.environ.get(k) for k in [*FAST, "XPARL_HOME"]}
    os.environ.update(FAST)
    os.environ["XPARL_HOME"] = str(tmp_path / "xparl-home")
    cluster = LocalCluster(cpu_num=4, parent_pid=os.getpid())
    monitor = prometheus = client = None
    try:
        cluster.start()
        with ClusterClient(cluster.address, token=cluster.token, timeout_s=3.0) as cc:
            wait_for(lambda: cc.status()["cpus"]["total"] == 4, timeout_s=30, what="the worker to register")
        monitor_port = free_port()
        monitor = start_monitor_process(cluster.address, monitor_port, token=cluster.token, parent_pid=os.getpid(),
                                        log_file=tmp_path / "monitor.log")
        wait_monitor_ready("127.0.0.1", monitor_port, timeout_s=30, proc=monitor)
        prometheus = Prometheus(tmp_path, f"127.0.0.1:{monitor_port}")
        prometheus.wait_ready()

        script = tmp_path / "train.py"
        script.write_text((HERE / "cluster_client_script.py").read_text())
        client = subprocess.Popen([sys.executable, str(script), cluster.address, "P", "3", "0"], cwd=tmp_path,
                                  env=dict(os.environ, XPARL_TOKEN=cluster.token, PYTHONUNBUFFERED="1"),
                                  stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        lines = []
        for line in client.stdout:  # bounded by the test's timeout; the client prints READY or exits
            lines.append(line)
            if line.strip() == "READY":
                break
        else:
            pytest.fail(f"the client exited with {client.wait()}: {''.join(lines)}")

        wait_for(lambda: prometheus.scalar('up{job="parl"}') == 1, timeout_s=30, what="a successful scrape")
        wait_for(lambda: prometheus.scalar("parl_actors_alive") == 3, timeout_s=30, what="3 actors in prometheus")
        assert prometheus.scalar("parl_actor_grants_total") == 3
        assert prometheus.scalar("parl_cpus") == 4 and prometheus.scalar("parl_clients") == 1
        assert prometheus.scalar("parl_master_up") == 1
        assert prometheus.scalar('sum(parl_actor_deaths_total{cause="killed"})') == 0
        (worker,) = prometheus.query("parl_worker_cpus_used")
        assert worker["metric"]["worker"].startswith("w-") and float(worker["value"][1]) == 3

        with ClusterClient(cluster.address, token=cluster.token, timeout_s=3.0) as cc:
            victim = next(a for a in cc.status()["actors"] if a["state"] == "alive")
        os.kill(victim["pid"], signal.SIGKILL)  # an actor of the cluster this test started
        wait_for(lambda: prometheus.scalar('parl_actor_deaths_total{cause="killed"}') == 1, timeout_s=30,
                 what="the death in prometheus")
        wait_for(lambda: prometheus.scalar("parl_actors_alive") == 2, timeout_s=30, what="2 actors alive")
        assert prometheus.scalar("parl_actor_grants_total") == 3
        assert prometheus.scalar('increase(parl_actor_deaths_total{cause="killed"}[1m])') > 0
        assert prometheus.scalar("histogram_quantile(0.9, sum by (le) (parl_actor_grant_latency_seconds_bucket))") \
            is not None
        # every expression of the shipped Grafana dashboard runs in Prometheus and finds series
        for expr in dashboard_exprs():
            promql = expr.replace("$__rate_interval", "1m")
            assert prometheus.query(promql), f"the dashboard's {promql!r} found no series"
    finally:
        if client is not None:
            if client.poll() is None:
                client.stdin.close()
            try:
                client.wait(20)
            except subprocess.TimeoutExpired:
                client.kill()
                client.wait(10)
            client.stdout.close()
        if prometheus is not None:
            prometheus.stop()
        if monitor is not None:
            stop_monitor_process(monitor)
        cluster.stop()
        for key, old in saved.items():
            if old is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = old
