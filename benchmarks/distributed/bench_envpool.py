"""Atari actor throughput: examples/impala's and examples/a2c_distributed's actors on EnvPool (``--envpool``)
against the gymnasium path.

One actor of examples/impala (``--example impala``, the default) or examples/a2c_distributed (``--example
a2c``), its class in this process with one torch thread (what one actor process does), plays
``--envs-per-actor`` games in unrolls of ``--unroll-length`` steps with its conv policy, on ``wrap_deepmind``
envs stepped in Python (IMPALA: a loop over E envs, 42x42 frames; A2C: a gymnasium sync vector env, 84x84
frames) and on ``parl.env.EnvPoolAtari`` (one EnvPool thread), in alternating rounds of ``--window-s``
seconds (the order of the two paths flips every round) after one warm-up unroll. Also measured: the envs
alone (random actions, no policy). Frames = 4 x agent steps. Prints ``/proc/loadavg``, one JSON line per
measurement and the EnvPool / gymnasium ratios (median over rounds).

``--impala``: instead, whole IMPALA runs (bench_impala.py's learner loop, ``--actors`` actor processes on an
embedded cluster) with and without ``--envpool``, alternating, each in a fresh process: learner frames/s
over a window after a warm-up.

Usage::

    python benchmarks/distributed/bench_envpool.py --games PongNoFrameskip-v4 BreakoutNoFrameskip-v4 --rounds 3
    python benchmarks/distributed/bench_envpool.py --example a2c --rounds 3 --window-s 10
    python benchmarks/distributed/bench_envpool.py --impala --games PongNoFrameskip-v4 --rounds 2 --window-s 60
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import torch
from bench_impala import ROOT, loadavg
from bench_impala import load_example as load_impala

FRAME_SKIP = 4


def load_example(name: str):
    """examples/<name>/train.py as a module (``impala`` or ``a2c_distributed``)."""
    if name == "impala":
        return load_impala()
    spec = importlib.util.spec_from_file_location(f"{name}_train", ROOT / "examples" / name / "train.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[f"{name}_train"] = module
    spec.loader.exec_module(module)
    return module


def actor_fps(ex, env_id: str, use_envpool: bool, args: argparse.Namespace, seed: int) -> float:
    """Frames/s of one actor's ``sample`` calls (examples/impala's or examples/a2c_distributed's) over
    ``args.window_s`` seconds."""
    cfg = dict(ex.CONFIGS["atari"])
    actor = ex.Actor._original(env_id, args.envs_per_actor, args.unroll_length, cfg, seed, use_envpool)
    a2c = args.example == "a2c"
    weights = actor.alg.model.get_weights() if a2c else None  # A2C's actor loads the weights of every call
    actor.sample(weights)  # warm-up
    steps, start = 0, time.perf_counter()
    while time.perf_counter() - start < args.window_s:
        steps += actor.sample(weights)["actions"].size
    elapsed = time.perf_counter() - start
    if a2c:
        actor.envs.close()
    elif actor.pool is not None:
        actor.pool.close()
    return FRAME_SKIP * steps / elapsed


def env_fps(ex, env_id: str, use_envpool: bool, args: argparse.Namespace, seed: int) -> float:
    """Frames/s of the envs alone (uniform random actions, same-step resets), over ``args.window_s`` s."""
    from parl.env import EnvPoolAtari

    E, dim = args.envs_per_actor, ex.CONFIGS["atari"]["dim"]
    rng = np.random.default_rng(seed)
    if args.example == "a2c":  # the actor's vector env: gymnasium's sync one (next-step resets) or EnvPoolAtari
        envs = ex.make_envs(env_id, E, ex.CONFIGS["atari"], use_envpool=use_envpool, seed=seed)
        envs.reset(seed=None if use_envpool else seed)
        n = envs.single_action_space.n
        steps, start = 0, time.perf_counter()
        while time.perf_counter() - start < args.window_s:
            envs.step(rng.integers(n, size=E))
            steps += E
        elapsed = time.perf_counter() - start
        envs.close()
        return FRAME_SKIP * steps / elapsed
    if use_envpool:
        pool = EnvPoolAtari(env_id, E, dim=dim, seed=seed)
        pool.reset()
        n = pool.single_action_space.n
        steps, start = 0, time.perf_counter()
        while time.perf_counter() - start < args.window_s:
            pool.step(rng.integers(n, size=E))
            steps += E
        pool.close()
    else:
        envs = [ex.make_env(env_id, dim) for _ in range(E)]
        for i, env in enumerate(envs):
            env.reset(seed=seed + i)
        n = envs[0].action_space.n
        steps, start = 0, time.perf_counter()
        while time.perf_counter() - start < args.window_s:
            for env, action in zip(envs, rng.integers(n, size=E), strict=True):
                _, _, terminated, truncated, _ = env.step(int(action))
                if terminated or truncated:
                    env.reset()
            steps += E
    return FRAME_SKIP * steps / (time.perf_counter() - start)


def impala_runs(args: argparse.Namespace) -> None:
    """Learner frames/s of bench_impala.py's IMPALA loop, gymnasium vs EnvPool actors, alternating rounds."""
    script = Path(__file__).with_name("bench_impala.py")
    for game in args.games:
        fps: dict[str, list[float]] = {"gymnasium": [], "envpool": []}
        for r in range(args.rounds):
            for path in ("gymnasium", "envpool") if r % 2 == 0 else ("envpool", "gymnasium"):
                cmd = [
                    sys.executable,
                    str(script),
                    "--only",
                    "parl",
                    "--env",
                    game,
                    "--actors",
                    str(args.actors),
                    "--envs-per-actor",
                    str(args.envs_per_actor),
                    "--unroll-length",
                    str(args.unroll_length),
                    "--warmup-s",
                    "20",
                    "--window-s",
                    str(args.window_s),
                ] + (["--envpool"] * (path == "envpool"))
                proc = subprocess.run(
                    cmd,
                    capture_output=True,
                    text=True,
                    timeout=args.window_s + 600,
                    env=dict(os.environ, PARL_BACKEND="torch"),
                )  # the example's torch model
                if proc.returncode != 0:
                    print(json.dumps({"game": game, "path": path, "error": proc.stderr[-3000:]}), flush=True)
                    continue
                out = json.loads(proc.stdout.strip().splitlines()[-1])
                fps[path].append(out["learner_frames_per_s"])
                print(json.dumps(dict(out, game=game, round=r, path=path)), flush=True)
        if fps["gymnasium"] and fps["envpool"]:
            ratio = statistics.median(fps["envpool"]) / statistics.median(fps["gymnasium"])
            print(
                json.dumps(
                    {
                        "game": game,
                        "learner_frames_per_s": fps,
                        "ratio_median": round(ratio, 2),
                        "loadavg_end": loadavg(),
                    }
                ),
                flush=True,
            )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--games", nargs="+", default=["PongNoFrameskip-v4", "BreakoutNoFrameskip-v4"])
    parser.add_argument("--example", choices=("impala", "a2c"), default="impala",
                        help="whose actor: examples/impala (42x42) or examples/a2c_distributed (84x84)")
    parser.add_argument("--envs-per-actor", type=int, default=None,
                        help="E (default: the example's Atari setting: IMPALA 8, A2C 5)")
    parser.add_argument("--unroll-length", type=int, default=None,
                        help="T (default: the example's Atari setting: IMPALA 50, A2C 20)")
    parser.add_argument("--window-s", type=float, default=20.0)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--impala", action="store_true", help="whole IMPALA runs (learner frames/s) instead")
    parser.add_argument("--actors", type=int, default=2, help="--impala: actor processes")
    args = parser.parse_args()
    if args.impala and args.example != "impala":
        parser.error("--impala runs whole IMPALA runs; leave --example at impala")
    defaults = {"impala": (8, 50), "a2c": (5, 20)}[args.example]
    args.envs_per_actor = args.envs_per_actor or defaults[0]
    args.unroll_length = args.unroll_length or defaults[1]
    torch.set_num_threads(1)
    print(
        json.dumps(
            {
                "example": args.example,
                "loadavg": loadavg(),
                "envs_per_actor": args.envs_per_actor,
                "unroll_length": args.unroll_length,
                "window_s": args.window_s,
            }
        ),
        flush=True,
    )
    if args.impala:
        impala_runs(args)
        return
    ex = load_example("impala" if args.example == "impala" else "a2c_distributed")
    results: dict[tuple[str, str, str], list[float]] = {}
    for game in args.games:
        for r in range(args.rounds):
            for what, measure in (("actor", actor_fps), ("envs", env_fps)):
                for path in ("gymnasium", "envpool") if r % 2 == 0 else ("envpool", "gymnasium"):
                    fps = measure(ex, game, path == "envpool", args, seed=100 * r)
                    results.setdefault((game, what, path), []).append(fps)
                    print(
                        json.dumps(
                            {
                                "game": game,
                                "round": r,
                                "measure": what,
                                "path": path,
                                "frames_per_s": round(fps, 1),
                                "loadavg": loadavg(),
                            }
                        ),
                        flush=True,
                    )
    print(f"\n{'game':<24}{'measure':<8}{'gymnasium f/s':>15}{'envpool f/s':>13}{'ratio':>8}")
    for game in args.games:
        for what in ("actor", "envs"):
            gym_fps = statistics.median(results[(game, what, "gymnasium")])
            pool_fps = statistics.median(results[(game, what, "envpool")])
            print(f"{game:<24}{what:<8}{gym_fps:>15.0f}{pool_fps:>13.0f}{pool_fps / gym_fps:>8.2f}")
    print(json.dumps({"loadavg_end": loadavg()}))


if __name__ == "__main__":
    main()
