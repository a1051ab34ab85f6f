"""Self-play games per second of examples/alphazero with N remote actors against 1 actor (the cluster's speed-up).

Each round starts an embedded cluster (``parl.connect(cpu_num=N)``), creates N ``Actor`` objects of
examples/alphazero/train.py, warms them up with one game each, then times one ``self_play`` call per actor
(``--games`` games split over the actors, played in lock-step inside each actor) and reports games and plies
per wall second and the actors' CPU seconds (``time.process_time`` in each actor). Rounds alternate N = 1 and
N = ``--actors`` in separate processes; the ratios of the medians (games/s and plies/s) are printed. On a
machine with fewer free cores than N the ratio is bounded by the free cores: read it with the load average
printed before each round.

Usage::

    python benchmarks/distributed/bench_alphazero.py --actors 2 --games 16 --rounds 3
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "examples" / "alphazero"


def loadavg() -> list[str]:
    with open("/proc/loadavg") as f:
        return f.read().split()[:3]


def measure(actors: int, games: int, simulations: int, channels: int, blocks: int) -> dict:
    """One measurement in this process (``--child``): games/s of ``actors`` actors."""
    sys.path.insert(0, str(EXAMPLE))
    import numpy as np
    import torch
    from train import Actor, PolicyValueNet, split

    import parl

    torch.set_num_threads(1)
    os.environ.setdefault("XPARL_PRELOAD", "torch,numpy,parl_core.torch")
    os.chdir(EXAMPLE)  # the actors import the example's modules: ship them at the top level of the job's folder
    parl.connect(distributed_files=["*.py"], cpu_num=actors)
    net_cfg = dict(channels=channels, blocks=blocks)
    weights = PolicyValueNet(**net_cfg).get_weights()
    cfg = dict(simulations=simulations, c_puct=1.5, dirichlet_alpha=1.0, noise_fraction=0.25, temp_moves=10)
    pool = [Actor(net_cfg, 1000 + i) for i in range(actors)]
    for f in [a.self_play(weights, 1, cfg) for a in pool]:  # warm-up: imports, first network calls
        f.result()
    start = time.perf_counter()
    out = [f.result() for f in [a.self_play(weights, n, cfg) for a, n in zip(pool, split(games, actors), strict=True)]]
    wall_s = time.perf_counter() - start
    plies = int(sum(len(o["z"]) for o in out))
    return {"actors": actors, "games": games, "wall_s": round(wall_s, 2), "games_per_s": round(games / wall_s, 3),
            "plies_per_s": round(plies / wall_s, 1), "actor_cpu_s": round(sum(o["cpu_s"] for o in out), 2),
            "cpu_s_per_game": round(sum(o["cpu_s"] for o in out) / games, 3),
            "mean_plies": float(np.mean(np.concatenate([o["plies"] for o in out])))}  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--actors", type=int, default=2, help="N, compared with 1 actor")
    parser.add_argument("--games", type=int, default=16, help="self-play games per measurement")
    parser.add_argument("--simulations", type=int, default=40)
    parser.add_argument("--channels", type=int, default=32)
    parser.add_argument("--blocks", type=int, default=2)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--child", type=int, default=None, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.actors < 2 or args.games < args.actors or args.rounds < 1:
        parser.error("need --actors >= 2, --games >= --actors and --rounds >= 1")
    common = ["--games", str(args.games), "--simulations", str(args.simulations), "--channels", str(args.channels),
              "--blocks", str(args.blocks)]  # fmt: skip
    if args.child is not None:
        print(json.dumps(measure(args.child, args.games, args.simulations, args.channels, args.blocks)))
        return
    results: dict[int, list[dict]] = {1: [], args.actors: []}
    for r in range(args.rounds):
        for n in (1, args.actors):
            before = loadavg()
            proc = subprocess.run([sys.executable, __file__, "--child", str(n), *common], capture_output=True,
                                  text=True, check=False)  # fmt: skip
            if proc.returncode != 0:
                raise SystemExit(f"the measurement with {n} actors failed:\n{proc.stderr[-3000:]}")
            row = json.loads(proc.stdout.strip().splitlines()[-1])
            row.update(round=r, loadavg_before=before)
            print(json.dumps(row), flush=True)
            results[n].append(row)
    for key in ("games_per_s", "plies_per_s"):  # games of an untrained network vary in length: plies/s too
        one = statistics.median(x[key] for x in results[1])
        many = statistics.median(x[key] for x in results[args.actors])
        print(f"self-play {key} (median of {args.rounds}): 1 actor {one:.3f}, {args.actors} actors {many:.3f}, "
              f"speed-up x{many / one:.2f}")  # fmt: skip
    print(f"loadavg now {' '.join(loadavg())}")


if __name__ == "__main__":
    main()
