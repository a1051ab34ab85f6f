"""What a Prometheus scrape of the monitor's ``/metrics`` every second costs the master: its CPU with N simulated
workers (``parl_remote.testing.sim``) and A actors, idle for a window, then for a window while a monitor app (in this
process, ``CACHE_TTL_S`` 1 s as ``python -m parl_monitor`` runs it) answers ``GET /metrics`` once a second; the
windows alternated. Also prints a scrape's time and size::

    python benchmarks/scale/bench_metrics_scrape.py --workers 300 --actors 600 --window 20 --pairs 2
"""

from __future__ import annotations

import argparse
import json
import statistics
import time

import psutil

from parl_remote import ClusterClient
from parl_remote.cluster import LocalCluster, new_token
from parl_remote.testing.sim import ClientGroup, WorkerGroup


def cpu_over(proc: psutil.Process, window_s: float, during=None) -> float:
    """The master's CPU (% of one core) over ``window_s``, calling ``during()`` once a second meanwhile."""
    start_cpu, start = sum(proc.cpu_times()[:2]), time.monotonic()
    while time.monotonic() - start < window_s:
        tick = time.monotonic()
        if during is not None:
            during()
        time.sleep(max(0.0, 1.0 - (time.monotonic() - tick)))
    return 100.0 * (sum(proc.cpu_times()[:2]) - start_cpu) / (time.monotonic() - start)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workers", type=int, default=300)
    parser.add_argument("--actors", type=int, default=600)
    parser.add_argument("--window", type=float, default=20.0)
    parser.add_argument("--pairs", type=int, default=2)
    args = parser.parse_args()
    from parl_monitor import create_app

    token = new_token()
    master = LocalCluster(port=0, token=token)
    master.start(start_worker=False)
    groups = [WorkerGroup(master.address, token, min(500, args.workers - g), 32, seed=g)
              for g in range(0, args.workers, 500)]
    clients = ClientGroup(master.address, token, 10)
    status = ClusterClient(master.address, token=token, timeout_s=30)
    try:
        deadline = time.monotonic() + 120
        while status.status(summary=True)["counts"]["workers"] < args.workers:
            if time.monotonic() > deadline:
                raise TimeoutError("the simulated workers did not register")
            time.sleep(0.2)
        clients.call("acquire", args.actors // 10, None, 4, 60.0)
        app = create_app({"ADDRESS": master.address, "TOKEN": token, "CACHE_TTL_S": 1.0})
        scraper = app.test_client()
        scrapes: list[tuple[float, int]] = []

        def scrape() -> None:
            t = time.perf_counter()
            body = scraper.get("/metrics").data
            scrapes.append((time.perf_counter() - t, len(body)))

        scrape()
        proc = psutil.Process(master.master.pid)
        idle, scraped = [], []
        for _ in range(args.pairs):
            idle.append(cpu_over(proc, args.window))
            scraped.append(cpu_over(proc, args.window, scrape))
        counts = status.status(summary=True)
        print(json.dumps({
            "workers": args.workers, "actors_alive": counts["counts"]["actors_alive"],
            "master_cpu_pct_idle": [round(x, 2) for x in idle],
            "master_cpu_pct_scraped_every_1s": [round(x, 2) for x in scraped],
            "added_cpu_pct_median": round(statistics.median(s - i for s, i in zip(scraped, idle, strict=True)), 2),
            "scrape_ms_median": round(1000 * statistics.median(t for t, _ in scrapes), 1),
            "scrape_bytes": scrapes[-1][1],
        }))
    finally:
        status.close()
        clients.close()
        for group in groups:
            group.close()
        master.stop()


if __name__ == "__main__":
    main()
