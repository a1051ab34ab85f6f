"""8 clients x 2 actors x 2,000 calls, every reply checked, while the master is killed (kill -9) and restarted
once with `xparl start` (issue #16): no wrong or lost reply, and no call fails (calls go to the jobs directly; the
clients re-register with the restarted master)."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import textwrap
import time

import psutil
import pytest
from click.testing import CliRunner
from conftest import wait_until

from parl_remote import ClusterClient
from parl_remote.cli import main

pytestmark = pytest.mark.timeout(300)

CLIENTS, ACTORS, CALLS = 8, 2, 2000

CLIENT = textwrap.dedent("""
    import json, sys, time
    import parl_remote as xparl

    @xparl.remote_class
    class Echo:
        def echo(self, i, tag):
            return (i, tag)

    xparl.connect(sys.argv[1])
    actors = [Echo() for _ in range(%(actors)d)]
    print("ready", flush=True)
    sys.stdin.readline()  # go
    wrong, errors, t0 = 0, [], time.perf_counter()
    for i in range(%(calls)d):
        for k, actor in enumerate(actors):
            tag = f"{sys.argv[2]}-{k}"
            try:
                if actor.echo(i, tag) != (i, tag):
                    wrong += 1
            except Exception as exc:
                errors.append(f"{type(exc).__name__}: {exc}")
        if i == %(calls)d // 4:
            print("under way", flush=True)  # the test kills the master now
        if i %% 200 == 0:
            time.sleep(0.05)  # spread the calls over the master's restart
    print(json.dumps({"wrong": wrong, "errors": errors[:5], "n_errors": len(errors),
                      "calls": %(calls)d * len(actors), "s": time.perf_counter() - t0}), flush=True)
    xparl.disconnect()
""") % {"actors": ACTORS, "calls": CALLS}


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_calls_go_on_through_a_master_kill_and_restart(xparl_home, monkeypatch):
    monkeypatch.delenv("XPARL_TOKEN", raising=False)
    runner = CliRunner()
    port = _free_port()
    address = f"127.0.0.1:{port}"
    cdir = xparl_home / "clusters" / str(port)
    started = runner.invoke(main, ["start", "--port", str(port), "--cpu-num", str(CLIENTS * ACTORS), "--no-monitor"])
    assert started.exit_code == 0, started.output
    clients = []
    try:
        for c in range(CLIENTS):
            clients.append(subprocess.Popen([sys.executable, "-c", CLIENT, address, f"c{c}"], stdin=subprocess.PIPE,
                                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True))  # fmt: skip
        for proc in clients:
            assert proc.stdout.readline().strip() == "ready", proc.stderr.read()[-3000:]
        for proc in clients:
            proc.stdin.write("go\n")
            proc.stdin.flush()
        master = json.loads((cdir / "info.json").read_text())["pids"]["master"]
        for proc in clients:  # every client is a quarter through its calls: kill the master in the middle
            assert proc.stdout.readline().strip() == "under way", proc.stderr.read()[-3000:]
        os.kill(master, signal.SIGKILL)
        wait_until(lambda: not psutil.pid_exists(master) or psutil.Process(master).status() == psutil.STATUS_ZOMBIE,
                   message="the master to die")
        killed_at = time.monotonic()
        restart = runner.invoke(main, ["start", "--port", str(port), "--no-monitor"])
        assert restart.exit_code == 0, restart.output
        with ClusterClient(address, timeout_s=2.0) as client:
            wait_until(lambda: client.status()["workers"], 10.0, message="the worker to rejoin")
            back_s = time.monotonic() - killed_at
        results = []
        for proc in clients:
            out, err = proc.communicate(timeout=240)
            assert proc.returncode == 0, err[-3000:]
            results.append(json.loads(out.strip().splitlines()[-1]))
        assert sum(r["wrong"] for r in results) == 0
        assert sum(r["n_errors"] for r in results) == 0, [r["errors"] for r in results if r["errors"]]
        assert sum(r["calls"] for r in results) == CLIENTS * ACTORS * CALLS
        assert back_s < 5.0
        with ClusterClient(address, timeout_s=2.0) as client:  # every client re-registered with the new master
            status = client.status()
        assert len(status["workers"]) == 1
        print(f"\n{CLIENTS * ACTORS * CALLS} calls, master back with its worker {back_s:.2f} s after the kill, "
              f"slowest client {max(r['s'] for r in results):.1f} s")
    finally:
        for proc in clients:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
        runner.invoke(main, ["stop", "--port", str(port)])
