"""Run the algorithm examples over seeds and print a markdown results table (steps, seconds, return).

Each run is a subprocess (``examples/<name>/train.py --seed S --logdir DIR``); the table is built from
the ``summary.json`` each writes, with the 1-minute load average sampled before each run (the CPU may
be shared: timings are only comparable at similar load).

Usage::

    python benchmarks/algorithms/examples_table.py                 # every example, seeds 0-4
    python benchmarks/algorithms/examples_table.py ppo dqn --seeds 0 1
    python benchmarks/algorithms/examples_table.py --out runs/examples_table.jsonl
    python benchmarks/algorithms/examples_table.py ppo dqn a2c sac td3 ddpg --backends torch paddle  # side by side
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

# name -> (example folder, extra args, target description)
RUNS = {
    "ppo": ("ppo", [], "CartPole-v1 eval >= 475"),
    "ppo-pendulum": ("ppo", ["--env", "Pendulum-v1"], "Pendulum-v1 eval >= -250"),
    "dqn": ("dqn", [], "CartPole-v1 eval >= 475"),
    "a2c": ("a2c", [], "CartPole-v1 eval >= 475"),
    "ddpg": ("ddpg", [], "Pendulum-v1 eval >= -200"),
    "td3": ("td3", [], "Pendulum-v1 eval >= -200"),
    "sac": ("sac", [], "Pendulum-v1 eval >= -200"),
    "cql": ("cql", [], "Pendulum-v1 eval >= dataset mean"),
    "oac": ("oac", [], "Pendulum-v1 eval >= -200"),
    "iql": ("iql", [], "Pendulum-v1 eval >= dataset mean"),
    "dt": ("dt", [], "Pendulum-v1 eval >= dataset mean"),
}
# the examples that take --backend torch|paddle (the others are torch-only)
TAKE_BACKEND = {"ppo", "dqn", "a2c", "ddpg", "td3", "sac", "cql"}


def loadavg() -> float:
    with open("/proc/loadavg") as f:
        return float(f.read().split()[0])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("names", nargs="*", help=f"examples to run (default: all of {', '.join(RUNS)})")
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2, 3, 4])
    parser.add_argument("--backends", nargs="+", choices=("torch", "paddle"), default=["torch"],
                        help="run each seed on each of these backends, back to back in this order")
    parser.add_argument("--out", default=None, help="append one JSON line per run to this file")
    args = parser.parse_args()
    unknown = [n for n in args.names if n not in RUNS]
    if unknown:
        parser.error(f"unknown example(s) {unknown}; choose from {list(RUNS)}")
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for name in args.names or list(RUNS):
            folder, extra, _ = RUNS[name]
            for seed in args.seeds:
                for backend in args.backends:
                    if folder not in TAKE_BACKEND and backend != "torch":
                        print(f"{name}: torch only (examples/{folder} takes no --backend); skipped on {backend}",
                              file=sys.stderr)
                        continue
                    backend_args = ["--backend", backend] if folder in TAKE_BACKEND else []
                    logdir = os.path.join(tmp, f"{name}-{seed}-{backend}")
                    load = loadavg()
                    cmd = [sys.executable, str(ROOT / "examples" / folder / "train.py"), "--seed", str(seed),
                           "--logdir", logdir, "--no-progress", *backend_args, *extra]
                    proc = subprocess.run(cmd, capture_output=True, text=True, cwd=str(ROOT))
                    if proc.returncode != 0:
                        print(f"{name} seed {seed} ({backend}) failed:\n{proc.stderr[-3000:]}", file=sys.stderr)
                        continue
                    with open(os.path.join(logdir, "summary.json")) as f:
                        result = json.load(f)
                    result.update(name=name, backend=backend, loadavg_before=load)
                    rows.append(result)
                    print(json.dumps(result), flush=True)
                    if args.out:
                        with open(args.out, "a") as f:
                            f.write(json.dumps(result) + "\n")
    print()
    print("| example | target | seed | backend | env steps | grad steps | wall s | eval return | reached | loadavg |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for r in rows:
        grad = r.get("gradient_steps", "")
        print(f"| {r['name']} | {RUNS[r['name']][2]} | {r['seed']} | {r['backend']} | {r['env_steps']} | {grad} | "
              f"{r['wall_s']:.1f} | {r['eval_return_mean']:.1f} | {'yes' if r['reached'] else 'no'} | "
              f"{r['loadavg_before']:.1f} |")


if __name__ == "__main__":
    main()
