"""CartPole-v1 time to solve: EvoKit (examples/evokit/cartpole_es.py) beside EvoTorch PGPE, same run, interleaved.

For each seed the runs alternate: EvoKit on 2 parl-remote actors, EvoKit in-process, EvoTorch in-process
(and EvoTorch on 2 Ray actors with ``--ray``). Every run is a fresh process; ``wall_s`` counts from its process
start to "solved" (greedy eval over 10 episodes == 500), start-up included; ``train_s`` excludes the start-up
(imports, cluster / actor start). Prints a markdown table, the medians and the ratios EvoTorch / EvoKit.

Usage::

    python benchmarks/evokit/bench_cartpole.py --seeds 0 1 2 3 4 [--ray]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
EXAMPLE = os.path.join(ROOT, "examples", "evokit", "cartpole_es.py")
PEER = os.path.join(ROOT, "benchmarks", "evokit", "evotorch_cartpole.py")


def loadavg() -> str:
    with open("/proc/loadavg") as f:
        return " ".join(f.read().split()[:3])


def run_evokit(seed: int, actors: int) -> dict:
    with tempfile.TemporaryDirectory() as logdir:
        proc = subprocess.run([sys.executable, EXAMPLE, "--seed", str(seed), "--actors", str(actors), "--logdir",
                               logdir, "--no-tensorboard"], capture_output=True, text=True, timeout=600)
        with open(os.path.join(logdir, "summary.json")) as f:
            summary = json.load(f)
    if proc.returncode not in (0, 1):
        raise RuntimeError(proc.stderr[-2000:])
    return summary


def run_evotorch(seed: int, actors: int) -> dict:
    proc = subprocess.run([sys.executable, PEER, "--seed", str(seed), "--actors", str(actors)], capture_output=True,
                          text=True, timeout=600)
    if proc.returncode != 0:
        raise RuntimeError(proc.stderr[-2000:])
    return json.loads(proc.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2, 3, 4])
    parser.add_argument("--ray", action="store_true", help="also run EvoTorch on 2 Ray actors (slow start-up)")
    args = parser.parse_args()
    print(f"loadavg before: {loadavg()}", flush=True)
    runs = {"evokit, 2 parl-remote actors": lambda s: run_evokit(s, 2),
            "evokit, in-process": lambda s: run_evokit(s, 0),
            "evotorch PGPE, in-process": lambda s: run_evotorch(s, 0)}
    if args.ray:
        runs["evotorch PGPE, 2 Ray actors"] = lambda s: run_evotorch(s, 2)
    results: dict[str, list[dict]] = {name: [] for name in runs}
    for seed in args.seeds:
        for name, fn in runs.items():
            r = fn(seed)
            r["train_s"] = r["wall_s"] - r["startup_s"]
            r["loadavg"] = loadavg()
            results[name].append(r)
            print(f"seed {seed}  {name:32s} solved={r['solved']} gens={r['generations']:3d} wall_s={r['wall_s']:6.2f} "
                  f"train_s={r['train_s']:6.2f}  load {r['loadavg']}", flush=True)
    print(f"loadavg after: {loadavg()}\n")
    print("| run | solved | generations (median) | wall_s per seed (start-up incl.) | median wall_s | median train_s |")
    print("|---|---|---|---|---|---|")
    medians = {}
    for name, rs in results.items():
        wall = [r["wall_s"] if r["solved"] else float("inf") for r in rs]
        train = [r["train_s"] if r["solved"] else float("inf") for r in rs]
        medians[name] = (statistics.median(wall), statistics.median(train))
        gens = statistics.median([r["generations"] for r in rs])
        print(f"| {name} | {sum(r['solved'] for r in rs)}/{len(rs)} | {gens} "
              f"| {' / '.join(f'{w:.2f}' for w in wall)} | {medians[name][0]:.2f} | {medians[name][1]:.2f} |")
    peer = medians["evotorch PGPE, in-process"]
    print()
    for name in ("evokit, 2 parl-remote actors", "evokit, in-process"):
        ours = medians[name]
        print(f"ratio evotorch in-process / {name}: wall {peer[0] / ours[0]:.2f}x, train {peer[1] / ours[1]:.2f}x")


if __name__ == "__main__":
    main()
