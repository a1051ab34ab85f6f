"""The cluster's event log (``parl_remote.server.events``) and ``xparl events``: under a master restart (kill -9,
``xparl start`` again) and a killed worker every event is written once, in order, one valid JSON object per line;
``xparl events`` prints them and ``-f`` follows the log across its rotation."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time

import psutil
import pytest
from click.testing import CliRunner
from conftest import wait_until

import parl_remote as xparl
from parl_remote import ClusterClient
from parl_remote.cli import main
from parl_remote.server.events import EVENT_KINDS, EventLog, read_events

pytestmark = pytest.mark.timeout(180)


@xparl.remote_class
class Counter:
    def __init__(self):
        self.n = 0

    def add(self, k):
        self.n += k
        return self.n


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _gone(pid: int) -> bool:
    return not psutil.pid_exists(pid) or psutil.Process(pid).status() == psutil.STATUS_ZOMBIE


def test_event_log_under_a_master_restart_and_a_killed_worker(xparl_home, monkeypatch):
    monkeypatch.delenv("XPARL_TOKEN", raising=False)
    monkeypatch.setenv("XPARL_LINK_GRACE_S", "2")  # the killed worker's actors end 2 s after its connection drops
    runner = CliRunner()
    port = _free_port()
    address = f"127.0.0.1:{port}"
    cdir = xparl_home / "clusters" / str(port)
    log = cdir / f"events-{port}.jsonl"
    started = runner.invoke(main, ["start", "--port", str(port), "--cpu-num", "2", "--no-monitor"])
    assert started.exit_code == 0, started.output
    try:
        info = json.loads((cdir / "info.json").read_text())
        xparl.connect(address)
        counters = [Counter(), Counter()]
        assert [c.add(1) for c in counters] == [1, 1]
        os.kill(info["pids"]["master"], signal.SIGKILL)
        wait_until(lambda: _gone(info["pids"]["master"]), message="the master gone")
        restart = runner.invoke(main, ["start", "--port", str(port), "--no-monitor"])
        assert restart.exit_code == 0, restart.output
        new_master = json.loads((cdir / "info.json").read_text())["pids"]["master"]
        with ClusterClient(address, timeout_s=2.0) as client:
            wait_until(lambda: client.status()["workers"], 10.0, message="the worker to rejoin")
        assert [c.add(1) for c in counters] == [2, 2]  # the actors lived through the restart
        os.kill(info["pids"]["worker"], signal.SIGKILL)  # the worker this test started
        wait_until(lambda: sum(e["event"] == "actor_died" for e in read_events(log)) == 2, 30.0,
                   message="both actors of the killed worker to die in the log")
        xparl.disconnect()
    finally:
        xparl.disconnect()
        assert runner.invoke(main, ["stop", "--port", str(port)]).exit_code == 0
    wait_until(lambda: _gone(new_master), message="the restarted master to stop")

    lines = log.read_text().splitlines()
    events = [json.loads(line) for line in lines]  # every line is one valid JSON object
    assert all(isinstance(e, dict) and e["event"] in EVENT_KINDS for e in events)
    # two runs, each a contiguous block whose seq counts 1, 2, 3 ...; times never go back
    runs = [info["pids"]["master"], new_master]
    assert [e["master_pid"] for e in events] == sorted((e["master_pid"] for e in events), key=runs.index)
    for pid in runs:
        assert [e["seq"] for e in events if e["master_pid"] == pid] == list(range(1, 1 + sum(
            e["master_pid"] == pid for e in events)))
    assert [e["time"] for e in events] == sorted(e["time"] for e in events)
    kinds = [e["event"] for e in events]
    first = [e for e in events if e["master_pid"] == runs[0]]
    second = [e for e in events if e["master_pid"] == runs[1]]
    assert first[0]["event"] == "master_started" and first[0]["restarted"] is False
    assert second[0]["event"] == "master_started" and second[0]["restarted"] is True
    assert "master_stopped" not in [e["event"] for e in first]  # kill -9 says nothing
    assert second[-1]["event"] == "master_stopped"
    # every actor granted once (by the first master) and died once (by the second: its worker was lost)
    granted = [e["actor_id"] for e in events if e["event"] == "actor_granted"]
    died = [e for e in events if e["event"] == "actor_died"]
    assert len(granted) == len(set(granted)) == 2 and [e["master_pid"] for e in events
                                                       if e["event"] == "actor_granted"] == [runs[0]] * 2
    assert sorted(e["actor_id"] for e in died) == sorted(granted)
    assert {e["cause_kind"] for e in died} == {"worker_lost"} and all("its worker" in e["cause"] for e in died)
    (rejoin,) = [e for e in second if e["event"] == "worker_joined"]
    assert rejoin["rejoined"] is True and sorted(rejoin["actors"]) == sorted(granted)
    assert kinds.count("worker_unreachable") == 1 and kinds.count("worker_lost") == 1
    order = [e["event"] for e in second if e["event"] in ("worker_unreachable", "worker_lost", "actor_died")]
    assert order == ["worker_unreachable", "worker_lost", "actor_died", "actor_died"]
    assert kinds.count("actor_ended") == 0 and kinds.count("client_gone") == 1

    # xparl events prints them: --json as the log holds them, and one line each for people
    printed = runner.invoke(main, ["events", "--port", str(port), "-n", "1000", "--json"])
    assert printed.exit_code == 0, printed.output
    assert [json.loads(line) for line in printed.output.splitlines()] == events
    last3 = runner.invoke(main, ["events", "--port", str(port), "-n", "3"])
    assert len(last3.output.splitlines()) == 3 and "master_stopped" in last3.output.splitlines()[-1]


def test_xparl_events_follows_across_rotation(tmp_path):
    path = tmp_path / "events-1.jsonl"
    log = EventLog(path, max_bytes=600, backups=2)
    log.write("master_started", address="127.0.0.1:1", restarted=False)
    out = tmp_path / "out.txt"
    with open(out, "wb") as sink:
        proc = subprocess.Popen([sys.executable, "-m", "parl_remote.cli", "events", "--file", str(path), "-f", "--json",
                                 "-n", "5"], stdout=sink, stderr=subprocess.STDOUT)
    try:
        wait_until(lambda: "master_started" in out.read_text(), 20.0, message="the first event printed")
        for i in range(12):  # rotates the 600-byte log a few times while it is followed
            log.write("actor_granted", actor_id=f"a-{i}", class_name="Counter")
            time.sleep(0.05)  # spaced writes, so that the follower sees rotations between them
        wait_until(lambda: "a-11" in out.read_text(), 20.0, message="the last event printed")
        seen = [json.loads(line) for line in out.read_text().splitlines()]
        assert [e["seq"] for e in seen] == list(range(1, 14))  # each once, in order, none lost at a rotation
        assert len(list(tmp_path.glob("events-1.jsonl.*"))) == 2
    finally:
        proc.terminate()
        proc.wait(10)
        log.close()


def test_xparl_events_names_the_fix(tmp_path, xparl_home):
    runner = CliRunner()
    missing = runner.invoke(main, ["events", "--file", str(tmp_path / "none.jsonl")])
    assert missing.exit_code != 0 and "no event log" in missing.output
    assert runner.invoke(main, ["events", "-n", "-1", "--file", str(tmp_path / "x")]).exit_code == 2


def test_event_log_arguments_are_checked(tmp_path):
    with pytest.raises(ValueError, match="max_bytes"):
        EventLog(tmp_path / "e.jsonl", max_bytes=0)
    with pytest.raises(ValueError, match="last"):
        EventLog(tmp_path / "f.jsonl").close() or read_events(tmp_path / "f.jsonl", 0)
