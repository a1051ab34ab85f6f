"""Before / after A/B of the master at scale: idle CPU with N simulated workers heartbeating, and actor grants per
second (50 simulated clients, closed loop) with the master CPU each grant costs. One fresh process, master and
simulated cluster per sample, the versions alternated (A B, B A, ...), so both see the same machine.

The simulated peers are copied to a temporary folder as a standalone module: each version's own
(``parl_remote/testing/sim.py`` under its path: its workers speak that version's liveness protocol), or this tree's
for a version that does not ship them (they use only its wire protocol, transport and config). ``--idle-only``
measures the idle master alone (CPU, RSS) and the simulated workers' CPU, no grants::

    git archive a5a811e packages/parl-remote/src | tar -x -C /tmp/before
    python benchmarks/scale/ab_master.py --before-path /tmp/before/packages/parl-remote/src \
        --after-path packages/parl-remote/src --workers 1000 --pairs 3
"""

from __future__ import annotations

import argparse
import json
import os
import pathlib
import shutil
import statistics
import subprocess
import sys
import tempfile

ROOT = pathlib.Path(__file__).resolve().parents[2]

CHILD = r"""
import json, sys, time
import psutil
from parl_remote.cluster import LocalCluster, new_token
from parl_remote import ClusterClient
from simpeers import ClientGroup, WorkerGroup


def main(n_workers, window, idle_only):
    token = new_token()
    master = LocalCluster(port=0, token=token)
    master.start(start_worker=False)
    groups = [WorkerGroup(master.address, token, min(500, n_workers - g), 32, seed=g) for g in range(0, n_workers, 500)]
    client = ClusterClient(master.address, token=token, timeout_s=30)
    try:
        deadline = time.monotonic() + 120
        while len(client.status()["workers"]) < n_workers:
            if time.monotonic() > deadline:
                raise TimeoutError("workers did not register")
            time.sleep(0.2)
        time.sleep(2.0)
        proc = psutil.Process(master.master.pid)
        sims = [psutil.Process(g.process.pid) for g in groups]
        c0 = sum(proc.cpu_times()[:2])
        s0 = sum(sum(p.cpu_times()[:2]) for p in sims)
        time.sleep(window)
        idle = (sum(proc.cpu_times()[:2]) - c0) / window
        sim_cpu = (sum(sum(p.cpu_times()[:2]) for p in sims) - s0) / window
        rss = proc.memory_info().rss / 2**20
        if idle_only:
            stats = [g.call("stats") for g in groups]
            print(json.dumps({"idle_cpu_pct": 100 * idle, "rss_mib": rss, "sim_cpu_pct": 100 * sim_cpu,
                              "reconnects": sum(s.get("reconnects", 0) for s in stats)}))
            return
        clients = ClientGroup(master.address, token, 50)
        c0 = sum(proc.cpu_times()[:2])
        result = clients.call("acquire", 100, None, 4, 120.0, timeout_s=150.0)
        busy = sum(proc.cpu_times()[:2]) - c0 - idle * result["elapsed_s"]
        clients.close()
        stats = [g.call("stats") for g in groups]
        print(json.dumps({"idle_cpu_pct": 100 * idle, "rss_mib": rss, "sim_cpu_pct": 100 * sim_cpu,
                          "grants_per_s": result["granted"] / result["elapsed_s"],
                          "ms_per_grant": 1e3 * busy / max(1, result["granted"]),
                          "reconnects": sum(s.get("reconnects", 0) for s in stats)}))
    finally:
        client.close()
        for g in groups:
            g.close()
        master.stop()


if __name__ == "__main__":
    main(int(sys.argv[1]), float(sys.argv[2]), sys.argv[3] == "1")
"""


def sample(path: str, peers_dir: str, workers: int, window: float, idle_only: bool) -> dict:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in (path, peers_dir, os.environ.get("PYTHONPATH")) if p)}
    script = pathlib.Path(peers_dir) / "ab_child.py"
    done = subprocess.run([sys.executable, str(script), str(workers), str(window), str(int(idle_only))],
                          capture_output=True, text=True, env=env, timeout=600)  # fmt: skip
    if done.returncode != 0:
        raise RuntimeError(f"a sample failed:\n{done.stderr[-3000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--before-path", required=True, help="parl-remote source tree of the version before")
    parser.add_argument("--after-path", default=str(ROOT / "packages" / "parl-remote" / "src"))
    parser.add_argument("--workers", type=int, default=1000)
    parser.add_argument("--window", type=float, default=10.0, help="seconds of the idle-CPU measurement")
    parser.add_argument("--pairs", type=int, default=3)
    parser.add_argument("--idle-only", action="store_true", help="measure the idle master only (no grants)")
    parser.add_argument("--first", choices=("before", "after"), default="before", help="the version of the first pair")
    args = parser.parse_args()
    if args.workers < 1 or args.pairs < 1:
        parser.error("--workers and --pairs must be >= 1")
    this_sim = ROOT / "packages" / "parl-remote" / "src" / "parl_remote" / "testing" / "sim.py"
    peers_dirs = {}
    for name, path in (("before", args.before_path), ("after", args.after_path)):
        own = pathlib.Path(path) / "parl_remote" / "testing" / "sim.py"
        peers_dirs[name] = tempfile.mkdtemp(prefix=f"xparl-ab-{name}-")
        shutil.copy(own if own.exists() else this_sim, pathlib.Path(peers_dirs[name]) / "simpeers.py")
        (pathlib.Path(peers_dirs[name]) / "ab_child.py").write_text(CHILD)
    results: dict[str, list[dict]] = {"before": [], "after": []}
    first_pair = ("before", "after") if args.first == "before" else ("after", "before")
    for i in range(args.pairs):
        order = first_pair if i % 2 == 0 else first_pair[::-1]
        for name in order:
            path = args.before_path if name == "before" else args.after_path
            results[name].append(sample(path, peers_dirs[name], args.workers, args.window, args.idle_only))
            print(name, json.dumps(results[name][-1]), flush=True)
    print(f"# {args.workers} simulated workers x 32 CPUs, {args.pairs} pairs, load {os.getloadavg()[0]:.2f}")
    keys = ("idle_cpu_pct", "rss_mib", "sim_cpu_pct", "reconnects")
    for key in keys if args.idle_only else (*keys, "grants_per_s", "ms_per_grant"):
        before = statistics.median(r[key] for r in results["before"])
        after = statistics.median(r[key] for r in results["after"])
        ratio = after / before if before else float("nan")
        print(f"{key:14s} before {before:10.2f}  after {after:10.2f}  after/before {ratio:6.2f}")
    for peers_dir in peers_dirs.values():
        shutil.rmtree(peers_dir, ignore_errors=True)


if __name__ == "__main__":
    main()
