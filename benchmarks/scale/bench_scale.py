"""xparl's master at scale: a real master process against simulated workers and clients (issue #24, S1-S6).

The master is the real one (``python -m parl_remote.server.master``, started by ``LocalCluster``); the workers and
clients are ``parl_remote.testing.sim`` groups: real sockets, signed messages, heartbeats, registrations and
grants, no user code. For each number of workers it measures:

  S1  registration of every worker; the master's CPU (% of one core) and RSS while idle (workers heartbeating)
  S2  actor grants: 50 clients asking at once (closed loop, 4 requests in flight each) -> grants per second; then
      an open loop at --rate grants per second -> latency p50 / p99 (ms) at that load
  S3  ``ClusterClient.status()`` and ``xparl status`` (a new process, as a user runs it) wall time; the monitor's
      overview page (Flask app, rendered in-process) wall time and size
  S5  1 % of the workers vanish at once: time until the master reports their actors not alive (ACTOR_INFO)
  S4  master killed (SIGKILL) and restarted on its port: time until every worker re-registered and every actor is
      alive again; refusals counted

Usage::

    python benchmarks/scale/bench_scale.py --workers 10 100 1000 --cpus 32 --actors 10000

Prints one table per size and a JSON line per size (``--json-out`` appends them to a file).
"""

from __future__ import annotations

import argparse
import json
import os
import pathlib
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time

import psutil

import parl_remote
from parl_remote import ClusterClient, config
from parl_remote.cluster import LocalCluster, new_token
from parl_remote.testing.sim import ClientGroup, WorkerGroup

WORKERS_PER_PROCESS = 500
REAL_CPUS = 2


@parl_remote.remote_class
class Ping:
    """A real actor on the real worker that stays in the mix."""

    def ping(self, x):
        return x


def wait_for(predicate, timeout_s: float, what: str, interval_s: float = 0.05):
    """Polls ``predicate`` until it returns a truthy value; returns ``(value, seconds)``.

    Raises:
        TimeoutError: the deadline passed.
    """
    start = time.monotonic()
    last = None
    while time.monotonic() - start < timeout_s:
        last = predicate()
        if last:
            return last, time.monotonic() - start
        time.sleep(interval_s)
    raise TimeoutError(f"timed out after {timeout_s:g} s waiting for {what} (last: {last!r})")


def cpu_percent(proc: psutil.Process, seconds: float) -> float:
    """The process's CPU use over ``seconds`` as % of one core."""
    t0 = sum(proc.cpu_times()[:2])
    time.sleep(seconds)
    return 100.0 * (sum(proc.cpu_times()[:2]) - t0) / seconds


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q / 100 * len(ordered)))] if ordered else float("nan")


def counts(client: ClusterClient) -> tuple[int, int]:
    """(workers, alive actors) of the cluster."""
    st = client.status(summary=True)
    return st["counts"]["workers"], st["counts"]["actors_alive"]


def start_master(port: int, token: str, log_dir: pathlib.Path) -> LocalCluster:
    cluster = LocalCluster(port=port, token=token, log_dir=log_dir)
    cluster.start(start_worker=False)
    return cluster


def run_size(n_workers: int, args: argparse.Namespace, log_dir: pathlib.Path) -> dict:
    token = new_token()
    master = start_master(0, token, log_dir)
    address = master.address
    proc = psutil.Process(master.master.pid)
    out: dict = {"workers": n_workers, "cpus_per_worker": args.cpus}
    groups: list[WorkerGroup] = []
    clients = None
    real = None
    status_client = ClusterClient(address, token=token, timeout_s=30.0)
    try:
        # ---- a real worker (its jobs real processes) and two real actors, first, so that they land on it
        if args.real_worker:
            real = subprocess.Popen(
                [sys.executable, "-m", "parl_remote.server.worker", "--address", address, "--cpu-num",
                 str(REAL_CPUS), "--gpu", ""], env={**os.environ, "XPARL_TOKEN": token}, stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)  # fmt: skip
            wait_for(lambda: status_client.status(summary=True)["cpus"]["ready"] == REAL_CPUS, 60.0, "the real jobs")
            t = time.perf_counter()
            parl_remote.connect(address, token=token)
            real_actors = [Ping() for _ in range(REAL_CPUS)]
            if [a.ping(i) for i, a in enumerate(real_actors)] != list(range(REAL_CPUS)):
                raise RuntimeError("a real actor answered wrongly")
            out["real_connect_create_call_ms"] = round(1e3 * (time.perf_counter() - t), 1)
        n_real = 1 if real is not None else 0
        # ---- S1
        t0 = time.monotonic()
        for g in range(0, n_workers, WORKERS_PER_PROCESS):
            groups.append(WorkerGroup(address, token, min(WORKERS_PER_PROCESS, n_workers - g), args.cpus, seed=g))
        wait_for(lambda: counts(status_client)[0] == n_workers + n_real, 120.0, f"{n_workers} workers to register")
        out["s1_register_s"] = round(time.monotonic() - t0, 2)
        time.sleep(args.settle)
        out["s1_idle_cpu_pct"] = round(cpu_percent(proc, args.window), 2)
        heartbeats_per_s = n_workers / config.get("HEARTBEAT_INTERVAL_S")
        out["s6_master_us_per_heartbeat"] = round(out["s1_idle_cpu_pct"] / 100 / heartbeats_per_s * 1e6, 1)
        out["s1_rss_mib"] = round(proc.memory_info().rss / 2**20, 1)
        # ---- S2
        n_actors = min(args.actors, n_workers * args.cpus * 3 // 4)
        per_client = max(1, n_actors // args.clients)
        clients = ClientGroup(address, token, args.clients)
        closed_n = per_client // 2
        cpu0 = sum(proc.cpu_times()[:2])
        closed = clients.call("acquire", closed_n, None, args.in_flight, 300.0, timeout_s=330.0)
        busy_s = sum(proc.cpu_times()[:2]) - cpu0 - out["s1_idle_cpu_pct"] / 100 * closed["elapsed_s"]
        out["s6_master_ms_per_grant"] = round(1e3 * busy_s / max(1, closed["granted"]), 3)
        out["s2_grants_per_s"] = round(closed["granted"] / closed["elapsed_s"], 1)
        out["s2_closed_p50_ms"] = round(1e3 * percentile(closed["latencies_s"], 50), 2)
        out["s2_closed_p99_ms"] = round(1e3 * percentile(closed["latencies_s"], 99), 2)
        opened = clients.call("acquire", per_client - closed_n, args.rate, 1, 300.0, timeout_s=330.0)
        out["s2_open_rate"] = args.rate
        out["s2_open_achieved_per_s"] = round(opened["granted"] / opened["elapsed_s"], 1)
        out["s2_open_p50_ms"] = round(1e3 * percentile(opened["latencies_s"], 50), 2)
        out["s2_open_p99_ms"] = round(1e3 * percentile(opened["latencies_s"], 99), 2)
        out["actors"] = closed["granted"] + opened["granted"]
        out["s2_refused"] = {**closed["refused"], **opened["refused"]}
        try:
            wait_for(lambda: sum(g.call("stats")["busy"] for g in groups) == out["actors"], 30.0,
                     "every grant to reach its worker")  # fmt: skip
        except TimeoutError:
            out["s2_lost_assignments"] = [g.call("stats") for g in groups]
            print(json.dumps(out), flush=True)
            raise
        time.sleep(args.settle)
        out["s1_idle_cpu_pct_with_actors"] = round(cpu_percent(proc, args.window), 2)
        out["s1_rss_mib_with_actors"] = round(proc.memory_info().rss / 2**20, 1)
        if real is not None:  # a real actor's call while the master serves the simulated cluster
            times = []
            for i in range(200):
                t = time.perf_counter()
                real_actors[i % REAL_CPUS].ping(i)
                times.append(time.perf_counter() - t)
            out["real_call_p50_ms"] = round(1e3 * percentile(times, 50), 3)
        # ---- S3
        times = []
        for _ in range(5):
            t = time.perf_counter()
            status_client.status()
            times.append(time.perf_counter() - t)
        out["s3_status_full_ms"] = round(1e3 * statistics.median(times), 1)
        env = {**os.environ, "XPARL_TOKEN": token}
        times = []
        for _ in range(3):
            t = time.perf_counter()
            done = subprocess.run([sys.executable, "-m", "parl_remote.cli", "status", "--address", address],
                                  capture_output=True, text=True, env=env, timeout=60)  # fmt: skip
            times.append(time.perf_counter() - t)
            if done.returncode != 0:
                raise RuntimeError(f"xparl status failed: {done.stderr}")
        out["s3_xparl_status_ms"] = round(1e3 * statistics.median(times), 1)
        out["s3_xparl_status_line"] = done.stdout.strip().splitlines()[0][:200]
        t = time.perf_counter()
        subprocess.run([sys.executable, "-c", "import parl_remote.cli"], capture_output=True, env=env, timeout=60)
        out["s3_python_import_cli_ms"] = round(1e3 * (time.perf_counter() - t), 1)
        out.update(monitor_times(address, token))
        # ---- S5
        victims_n = max(1, n_workers // 100)
        killed = groups[0].call("kill", victims_n)
        victims = killed["actors"]
        t0 = time.monotonic()

        def gone() -> bool:
            return all((status_client.actor_info(a) or {}).get("state") != "alive" for a in victims)

        _, seconds = wait_for(gone, 60.0, "the killed workers' actors to be reported", interval_s=0.05)
        out["s5_killed_workers"] = victims_n
        out["s5_killed_actors"] = len(victims)
        out["s5_limit_s"] = config.get("HEARTBEAT_INTERVAL_S") * config.get("HEARTBEAT_LIVENESS") + 1.0
        out["s5_not_alive_s"] = round(seconds, 2)
        out["s5_states"] = sorted({(status_client.actor_info(a) or {}).get("state") for a in victims})
        if config.link_grace_s() <= 10:  # dead (ActorDiedError to their clients) once LINK_GRACE_S has passed

            def dead() -> bool:
                return all((status_client.actor_info(a) or {}).get("state") == "dead" for a in victims)

            _, _ = wait_for(dead, 30.0, "the killed workers' actors to end", interval_s=0.05)
            out["s5_dead_s"] = round(time.monotonic() - t0, 2)
            out["s5_link_grace_s"] = config.link_grace_s()
        n_alive_workers = n_workers - victims_n
        _, alive_actors = counts(status_client)
        out["s5_others_alive"] = alive_actors
        # ---- S4
        for g in groups:
            g.call("reset_counts")
        master_pid = master.master.pid
        port = int(address.rpartition(":")[2])
        os.kill(master_pid, signal.SIGKILL)
        master.master.wait(10)
        t0 = time.monotonic()
        master = start_master(port, token, log_dir)
        proc = psutil.Process(master.master.pid)
        status_client.close()
        status_client = ClusterClient(address, token=token, timeout_s=30.0)

        def back() -> bool:
            w, a = counts(status_client)
            return w == n_alive_workers + n_real and a >= alive_actors

        try:
            _, _ = wait_for(back, 60.0, "every worker and actor back after the restart", interval_s=0.1)
            out["s4_restart_s"] = round(time.monotonic() - t0, 2)
        except TimeoutError as exc:
            out["s4_restart_s"] = None
            out["s4_error"] = str(exc)
        out["s4_workers"], out["s4_actors_alive"] = counts(status_client)
        stats = [g.call("stats") for g in groups]
        out["s4_refused"] = sum(st.get("refused", 0) for st in stats)
        out["s4_reregistrations"] = sum(st.get("reregister", 0) for st in stats)
        out["s4_reconnects"] = sum(st.get("reconnects", 0) for st in stats)
        out["s4_master_cpu_s"] = round(sum(proc.cpu_times()[:2]), 2)
        if real is not None:  # the real actors went on through the restart
            answers = [a.ping(i) for i, a in enumerate(real_actors)]
            out["real_calls_after_restart_ok"] = answers == list(range(REAL_CPUS))
    finally:
        if real is not None:
            parl_remote.disconnect()
            os.killpg(real.pid, signal.SIGKILL)  # the real worker and its jobs (its own session)
            real.wait(10)
        status_client.close()
        if clients is not None:
            clients.close()
        for g in groups:
            g.close()
        master.stop()
    return out


def monitor_times(address: str, token: str) -> dict:
    """Wall time of the monitor's overview page (rendered by the Flask app in this process)."""
    try:
        from parl_monitor.app import create_app
    except ImportError:
        return {"s3_monitor": "parl-monitor not installed"}
    app = create_app({"ADDRESS": address, "TOKEN": token, "CACHE_TTL_S": 0.0, "CLIENT_TIMEOUT_S": 30.0})
    test = app.test_client()
    times, size = [], 0
    for _ in range(3):
        t = time.perf_counter()
        response = test.get("/")
        times.append(time.perf_counter() - t)
        if response.status_code != 200:
            raise RuntimeError(f"monitor overview answered {response.status_code}")
        size = len(response.data)
    app.extensions["parl_monitor"].close()  # its ClusterClient: a zmq context left to the garbage collector can hang
    return {"s3_monitor_overview_ms": round(1e3 * statistics.median(times), 1), "s3_monitor_overview_kib": size // 1024}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--workers", type=int, nargs="+", default=[10, 100, 1000])
    parser.add_argument("--cpus", type=int, default=32, help="CPUs each simulated worker declares")
    parser.add_argument("--actors", type=int, default=10000, help="actors to create (at most 3/4 of the CPUs)")
    parser.add_argument("--clients", type=int, default=50)
    parser.add_argument("--in-flight", type=int, default=4, help="requests in flight per client (closed loop)")
    parser.add_argument("--rate", type=float, default=1000.0, help="offered grants per second (open loop)")
    parser.add_argument("--window", type=float, default=10.0, help="seconds of the idle-CPU measurement")
    parser.add_argument("--settle", type=float, default=2.0)
    parser.add_argument("--json-out", type=pathlib.Path, default=None)
    parser.add_argument("--log-dir", type=pathlib.Path, default=None,
                        help="keep the masters' logs in this folder (default: a temporary folder, removed at the end "
                             "unless the run fails)")  # fmt: skip
    parser.add_argument("--no-real-worker", dest="real_worker", action="store_false",
                        help="leave out the real worker (2 CPUs, real job processes) and its two real actors")
    parser.add_argument("--link-grace", type=float, default=None,
                        help="XPARL_LINK_GRACE_S for the master (default 60: a silent worker's actors are listed "
                             "unreachable, and end after it); S5's dead-time is measured when it is <= 10")  # fmt: skip
    args = parser.parse_args()
    if args.link_grace is not None:
        if args.link_grace <= 0:
            parser.error("--link-grace must be > 0 seconds")
        os.environ["XPARL_LINK_GRACE_S"] = str(args.link_grace)
    for name in ("workers",):
        if any(n < 1 for n in getattr(args, name)):
            parser.error(f"--{name} must be >= 1")
    if args.log_dir is not None:
        args.log_dir.mkdir(parents=True, exist_ok=True)
    log_dir = args.log_dir or pathlib.Path(tempfile.mkdtemp(prefix="xparl-scale-"))
    print(f"# master logs: {log_dir}; {os.cpu_count()} cores; load {os.getloadavg()[0]:.2f}", flush=True)
    try:
        for n in args.workers:
            result = run_size(n, args, log_dir)
            result["date"] = time.strftime("%Y-%m-%d %H:%M")
            result["load1"] = round(os.getloadavg()[0], 2)
            for key, value in result.items():
                print(f"{key:32s} {value}")
            print(json.dumps(result), flush=True)
            if args.json_out:
                with open(args.json_out, "a") as fh:
                    fh.write(json.dumps(result) + "\n")
    except BaseException:
        print(f"# the masters' logs are kept in {log_dir}", file=sys.stderr, flush=True)
        raise
    if args.log_dir is None:
        shutil.rmtree(log_dir, ignore_errors=True)


if __name__ == "__main__":
    main()
