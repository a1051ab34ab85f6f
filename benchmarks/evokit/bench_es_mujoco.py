"""ES on MuJoCo, EvoKit against EvoTorch in the same run: env steps/s (and, with ``--target``, time to reach it).

Runs, one after the other on this machine:

1. ``examples/es_mujoco/train.py`` with 1 actor and with ``--actors`` actors (default 2): env steps/s, the
   fraction of linear scaling, and the actors' CPU split (env stepping, policy forward, noise / parameter
   building; the rest of the wall time is communication and waiting);
2. ``evotorch_mujoco.py``: EvoTorch's GymNE with PGPE / ClipUp on the same number of Ray actors, same policy size
   and population.

Prints a table and the ratios (ours / EvoTorch). With ``--target 3000 --max-env-steps 10000000`` both stop when
their centre policy's evaluation reaches the target, and the time to reach it is compared. The machine's load
average is printed beside every figure: timings on a shared machine are contended.

Usage::

    python benchmarks/evokit/bench_es_mujoco.py --env HalfCheetah-v5 --max-env-steps 200000
"""

from __future__ import annotations

import argparse
import json
import os
import pathlib
import subprocess
import sys
import tempfile

ROOT = pathlib.Path(__file__).resolve().parents[2]
OURS = ROOT / "examples" / "es_mujoco" / "train.py"
PEER = pathlib.Path(__file__).resolve().parent / "evotorch_mujoco.py"


def _run(cmd: list[str]) -> dict:
    """Run a benchmark subprocess; return the last JSON line it printed, with the load average at its end
    (``loadavg``: 1, 5 and 15 minutes, as text)."""
    proc = subprocess.run(cmd, capture_output=True, text=True)
    if proc.returncode:
        raise RuntimeError(proc.stderr[-3000:])
    for line in reversed(proc.stdout.strip().splitlines()):
        if line.startswith("{"):
            return {**json.loads(line), "loadavg": [f"{x:.2f}" for x in os.getloadavg()]}
    raise RuntimeError(f"no JSON result in the output:\n{proc.stdout[-2000:]}")


def run_ours(args: argparse.Namespace, actors: int) -> dict:
    with tempfile.TemporaryDirectory() as logdir:
        cmd = [sys.executable, str(OURS), "--env_name", args.env, "--actor_num", str(actors), "--seed",
               str(args.seed), "--max_env_steps", str(args.max_env_steps), "--min_episodes_per_batch",
               str(args.popsize), "--logdir", logdir, "--no-progress", "--eval_interval", str(args.eval_interval)]
        if args.target is not None:
            cmd += ["--target_return", str(args.target)]
        if args.noise_stdev is not None:
            cmd += ["--noise_stdev", str(args.noise_stdev)]
        return _run(cmd)


def run_peer(args: argparse.Namespace) -> dict:
    cmd = [sys.executable, str(PEER), "--env", args.env, "--actors", str(args.actors), "--seed", str(args.seed),
           "--max-env-steps", str(args.max_env_steps), "--popsize", str(args.popsize),
           "--eval-interval", str(args.eval_interval)]
    if args.target is not None:
        cmd += ["--target", str(args.target)]
    if args.peer_max_wall_s is not None:
        cmd += ["--max-wall-s", str(args.peer_max_wall_s)]
    return _run(cmd)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--env", default="HalfCheetah-v5")
    parser.add_argument("--actors", type=int, default=2)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--popsize", type=int, default=40)
    parser.add_argument("--max-env-steps", type=int, default=200_000)
    parser.add_argument("--eval-interval", type=int, default=200_000)
    parser.add_argument("--target", type=float, default=None)
    parser.add_argument("--skip-peer", action="store_true", help="only ours (EvoTorch not installed)")
    parser.add_argument("--peer-max-wall-s", type=float, default=None,
                        help="stop EvoTorch after this wall-clock (with --target: it did not reach it by then)")
    parser.add_argument("--noise-stdev", type=float, default=None, help="ours: --noise_stdev (default: the example's)")
    args = parser.parse_args()
    env = {"PYTHONHASHSEED": "0", **os.environ}
    os.environ.update(env)
    one = run_ours(args, 1)
    many = run_ours(args, args.actors)
    rows = [("evokit, 1 actor", one), (f"evokit, {args.actors} actors", many)]
    peer = None if args.skip_peer else run_peer(args)
    if peer is not None:
        rows.append((f"evotorch PGPE, {args.actors} Ray actors", peer))
    print(f"{'run':34s} {'params':>7s} {'env steps':>10s} {'steps/s':>9s} {'eval':>8s} {'to target s':>11s} load")
    for name, r in rows:
        reached = r.get("reached_target_s") if "reached_target_s" in r else (
            r["wall_s"] if args.target is not None and r["eval_return_mean"] >= args.target else None)
        ev = r.get("eval_return", r.get("eval_return_mean"))
        print(f"{name:34s} {r['num_params']:7d} {r['env_steps']:10d} {r['env_steps_per_s']:9.0f} {ev:8.1f} "
              f"{reached if reached is not None else '-':>11} {' '.join(r['loadavg'])}")
    split = many["actor_cpu_split_s"]
    busy = sum(split[k] for k in ("env", "policy", "noise"))
    print(f"evokit actors' time ({args.actors} actors, seconds summed over actors): "
          + ", ".join(f"{k} {v:.1f}" for k, v in split.items())
          + f"; env {100 * split['env'] / busy:.0f}% / policy {100 * split['policy'] / busy:.0f}% / "
          f"noise {100 * split['noise'] / busy:.0f}% of the actors' measured work")
    print(f"scaling 1 -> {args.actors} actors: {many['env_steps_per_s'] / one['env_steps_per_s']:.2f}x "
          f"({100 * many['env_steps_per_s'] / (args.actors * one['env_steps_per_s']):.0f}% of linear)")
    if peer is not None:
        print(f"ratio env steps/s, evokit / evotorch ({args.actors} actors each): "
              f"{many['env_steps_per_s'] / peer['env_steps_per_s']:.2f}x")


if __name__ == "__main__":
    main()
