"""A master restart is transparent (issue #16): after kill -9 of the master, `xparl start` on the same port reuses
the cluster's token, the surviving worker rejoins within seconds, every actor still answers and the client goes on;
`xparl stop` then leaves no process of the cluster and no /dev/shm file of its processes."""

from __future__ import annotations

import json
import os
import signal
import socket
import time

import psutil
import pytest
from click.testing import CliRunner
from conftest import wait_until

import parl_remote as xparl
from parl_remote import ClusterClient
from parl_remote.cli import main
from parl_remote.wire import shm

pytestmark = pytest.mark.timeout(180)


@xparl.remote_class
class Counter:
    def __init__(self):
        self.n = 0

    def add(self, k):
        self.n += k
        return self.n

    def getpid(self):
        return os.getpid()


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _tree(pid: int) -> list[psutil.Process]:
    proc = psutil.Process(pid)
    return [proc, *proc.children(recursive=True)]


def test_kill_9_of_the_master_and_restart_keeps_workers_and_actors(xparl_home, monkeypatch):
    monkeypatch.delenv("XPARL_TOKEN", raising=False)
    runner = CliRunner()
    port = _free_port()
    address = f"127.0.0.1:{port}"
    cdir = xparl_home / "clusters" / str(port)
    assert runner.invoke(main, ["start", "--port", str(port), "--cpu-num", "3", "--no-monitor"]).exit_code == 0
    stopped = False
    try:
        token = (cdir / "token").read_text().strip()
        info = json.loads((cdir / "info.json").read_text())
        worker_pid = info["pids"]["worker"]
        xparl.connect(address)
        counters = [Counter(), Counter()]
        assert [c.add(1) for c in counters] == [1, 1]
        # the worker, its zygote and the two actors' jobs; not the whole tree: the pool's idle job serves
        # Counter().add(5) below and ends with that temporary actor
        processes = {worker_pid, *(p.pid for p in psutil.Process(worker_pid).children()),
                     *(c.getpid() for c in counters)}
        os.kill(info["pids"]["master"], signal.SIGKILL)
        wait_until(lambda: not psutil.pid_exists(info["pids"]["master"]) or
                   psutil.Process(info["pids"]["master"]).status() == psutil.STATUS_ZOMBIE, message="master gone")
        restart = runner.invoke(main, ["start", "--port", str(port), "--no-monitor"])
        assert restart.exit_code == 0, restart.output
        assert "rejoined" in restart.output
        t0 = time.monotonic()
        assert (cdir / "token").read_text().strip() == token  # the same token: no --new-token
        with ClusterClient(address, timeout_s=2.0) as client:
            wait_until(lambda: client.status()["workers"], 10.0, message="the worker to rejoin")
            rejoined_s = time.monotonic() - t0
            status = client.status()
        assert [w["pid"] for w in status["workers"]] == [worker_pid]  # no second local worker was started
        assert rejoined_s < 2.0, rejoined_s
        alive = [a for a in status["actors"] if a["state"] == "alive"]
        assert len(alive) == 2 and len({a["id"] for a in status["actors"]}) == len(status["actors"])
        assert [c.add(10) for c in counters] == [11, 11]  # the same actors, their state intact
        assert Counter().add(5) == 5  # and the client goes on creating actors
        assert all(psutil.pid_exists(p) for p in processes)
        xparl.disconnect()
        new_master = json.loads((cdir / "info.json").read_text())["pids"]["master"]
        everything = {p.pid for p in _tree(worker_pid)} | {new_master}
        result = runner.invoke(main, ["stop", "--port", str(port)])
        stopped = True
        assert result.exit_code == 0, result.output
        wait_until(lambda: not any(psutil.pid_exists(p) and psutil.Process(p).status() != psutil.STATUS_ZOMBIE
                                   for p in everything), 10.0, message="every process of the cluster to end")
        if shm.available():
            left = [f for f in shm.SHM_DIR.glob("xparl-*") if int(f.name.split("-")[1]) in everything]
            assert left == []
    finally:
        xparl.disconnect()
        if not stopped:
            runner.invoke(main, ["stop", "--port", str(port)])
