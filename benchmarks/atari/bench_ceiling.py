"""The ceiling of Atari training on this machine: EnvPool alone stepping a game with uniform random actions (no
model, no learner), frames/s, and a training run's agent steps/s as a fraction of it.

``parl.env.EnvPoolAtari`` (the IMPALA actors' preprocessing: 42x42 grey frames, frame skip 4, 4-frame stack)
with ``--threads`` EnvPool worker threads (default: every CPU) steps ``--envs`` games for ``--window-s`` seconds
after a warm-up, ``--rounds`` times. Prints ``/proc/loadavg`` first and one JSON line per round, then the median;
with ``--against summary.json`` (what an example wrote: ``env_steps`` and ``wall_s``, or ``env_steps_per_s``),
the run's agent steps/s as a fraction of the ceiling's. Run it in the same sitting as the training run it is
compared with (before and after it), on the same machine state.

Usage::

    python benchmarks/atari/bench_ceiling.py --game PongNoFrameskip-v4 --rounds 3 \\
        --against examples/impala/results/pong/seed0/summary.json
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time

import numpy as np

FRAME_SKIP = 4


def ceiling_steps_per_s(game: str, envs: int, threads: int, window_s: float, seed: int, dim: int = 42) -> float:
    """Agent steps/s of ``envs`` EnvPool games stepped with uniform random actions over ``window_s`` seconds."""
    from parl_core.env.envpool_atari import EnvPoolAtari

    pool = EnvPoolAtari(game, envs, dim=dim, num_threads=threads, seed=seed)
    rng = np.random.default_rng(seed)
    n = pool.single_action_space.n
    pool.reset()
    for _ in range(50):  # warm-up
        pool.step(rng.integers(0, n, envs))
    steps, start = 0, time.perf_counter()
    while (elapsed := time.perf_counter() - start) < window_s:
        pool.step(rng.integers(0, n, envs))
        steps += envs
    pool.close()
    return steps / elapsed


def run_steps_per_s(path: str) -> float:
    """Agent steps/s of a training run from its summary.json.

    Raises:
        SystemExit: the file is missing or has neither ``env_steps_per_s`` nor ``env_steps`` and ``wall_s``.
    """
    try:
        with open(path) as f:
            summary = json.load(f)
    except (OSError, json.JSONDecodeError) as err:
        raise SystemExit(f"--against: cannot read {path} ({err}); give the summary.json a training run wrote") from None
    if "env_steps_per_s" in summary:
        return float(summary["env_steps_per_s"])
    if "env_steps" in summary and summary.get("wall_s"):
        return summary["env_steps"] / summary["wall_s"]
    raise SystemExit(f"--against: {path} has neither env_steps_per_s nor env_steps and wall_s")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--game", default="PongNoFrameskip-v4")
    parser.add_argument("--envs", type=int, default=16, help="games in the pool (the IMPALA run's 2 actors x 8)")
    parser.add_argument("--threads", type=int, default=os.cpu_count(), help="EnvPool worker threads")
    parser.add_argument("--window-s", type=float, default=20.0)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--against", default=None, metavar="SUMMARY_JSON",
                        help="a training run's summary.json: print its agent steps/s as a fraction of the ceiling")
    args = parser.parse_args()
    if args.envs < 1 or args.threads < 1 or args.window_s <= 0 or args.rounds < 1:
        parser.error("--envs, --threads and --rounds must be >= 1 and --window-s > 0")
    run = run_steps_per_s(args.against) if args.against else None  # a bad file fails before the measurement
    print(json.dumps({"loadavg": os.getloadavg(), "cpus": os.cpu_count()}))
    rates = []
    for r in range(args.rounds):
        rate = ceiling_steps_per_s(args.game, args.envs, args.threads, args.window_s, args.seed + r)
        rates.append(rate)
        print(json.dumps({"round": r, "agent_steps_per_s": round(rate, 1),
                          "frames_per_s": round(rate * FRAME_SKIP, 1)}))
    median = statistics.median(rates)
    out = {"game": args.game, "envs": args.envs, "threads": args.threads, "ceiling_agent_steps_per_s": round(median, 1),
           "ceiling_frames_per_s": round(median * FRAME_SKIP, 1), "loadavg_after": os.getloadavg()}
    if run is not None:
        out.update(run_agent_steps_per_s=round(run, 1), fraction_of_ceiling=round(run / median, 3))
    print(json.dumps(out))
    sys.stdout.flush()


if __name__ == "__main__":
    main()
