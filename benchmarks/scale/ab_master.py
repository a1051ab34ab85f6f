"""Before / after A/B of the master at scale: idle CPU with N simulated workers heartbeating, and actor grants per
second (50 simulated clients, closed loop) with the master CPU each grant costs. One fresh process, master and
simulated cluster per sample, the versions alternated (A B, B A, ...), so both see the same machine.

The simulated peers (``parl_remote/testing/sim.py`` of this tree) are copied to a temporary folder as a standalone
module, so that they also run against a version of parl-remote that does not ship them (they use only its wire
protocol, transport and config)::

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
from parl_remote.cluster_client import ClusterClient
from simpeers import ClientGroup, WorkerGroup


def main(n_workers, window):
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
        c0 = sum(proc.cpu_times()[:2])
        time.sleep(window)
        idle = (sum(proc.cpu_times()[:2]) - c0) / window
        clients = ClientGroup(master.address, token, 50)
        c0 = sum(proc.cpu_times()[:2])
        result = clients.call("acquire", 100, None, 4, 120.0, timeout_s=150.0)
        busy = sum(proc.cpu_times()[:2]) - c0 - idle * result["elapsed_s"]
        clients.close()
        stats = [g.call("stats") for g in groups]
        print(json.dumps({"idle_cpu_pct": 100 * idle, "grants_per_s": result["granted"] / result["elapsed_s"],
                          "ms_per_grant": 1e3 * busy / max(1, result["granted"]),
                          "reconnects": sum(s.get("reconnects", 0) for s in stats)}))
    finally:
        client.close()
        for g in groups:
            g.close()
        master.stop()


if __name__ == "__main__":
    main(int(sys.argv[1]), float(sys.argv[2]))
"""


def sample(path: str, peers_dir: str, workers: int, window: float) -> dict:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in (path, peers_dir, os.environ.get("PYTHONPATH")) if p)}
    script = pathlib.Path(peers_dir) / "ab_child.py"
    done = subprocess.run([sys.executable, str(script), str(workers), str(window)], capture_output=True, text=True,
                          env=env, timeout=600)  # fmt: skip
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
    args = parser.parse_args()
    if args.workers < 1 or args.pairs < 1:
        parser.error("--workers and --pairs must be >= 1")
    peers_dir = tempfile.mkdtemp(prefix="xparl-ab-")
    shutil.copy(ROOT / "packages" / "parl-remote" / "src" / "parl_remote" / "testing" / "sim.py",
                pathlib.Path(peers_dir) / "simpeers.py")  # fmt: skip
    (pathlib.Path(peers_dir) / "ab_child.py").write_text(CHILD)
    results: dict[str, list[dict]] = {"before": [], "after": []}
    for i in range(args.pairs):
        order = ("before", "after") if i % 2 == 0 else ("after", "before")
        for name in order:
            path = args.before_path if name == "before" else args.after_path
            results[name].append(sample(path, peers_dir, args.workers, args.window))
            print(name, json.dumps(results[name][-1]), flush=True)
    print(f"# {args.workers} simulated workers x 32 CPUs, {args.pairs} pairs, load {os.getloadavg()[0]:.2f}")
    for key in ("idle_cpu_pct", "grants_per_s", "ms_per_grant", "reconnects"):
        before = statistics.median(r[key] for r in results["before"])
        after = statistics.median(r[key] for r in results["after"])
        ratio = after / before if before else float("nan")
        print(f"{key:14s} before {before:10.2f}  after {after:10.2f}  after/before {ratio:6.2f}")
    shutil.rmtree(peers_dir, ignore_errors=True)


if __name__ == "__main__":
    main()
