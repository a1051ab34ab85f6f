"""The EvoKit online tutorial's loop on CartPole-v1: online sampling writes a log, an offline update reads it.

The tutorial's three programs, as subcommands of this file (each builds its agent from files only):

- ``init``: ``load_config``, ``load_inference_model``, ``init_solver``, ``save_inference_model`` and ``save_solver``
  into ``model_warehouse/model_dir_0``.
- ``sample``: load model and solver of round k, ``clone()`` sampling agents, ``add_noise()``, serve "traffic"
  (one CartPole episode per sample, the action from ``sampling_agent.predict(obs)``) and append
  ``(reward, SamplingInfo)`` records to the binary sampling log.
- ``update``: load model and solver of round k, read the log (a truncated last record is reported and skipped,
  the complete records are kept), ``update(sampling_infos, rewards)``, save model and solver as round k + 1.

``loop`` runs ``init`` then ``--rounds`` rounds of ``sample`` + ``update`` and evaluates each new model (greedy,
``--eval-episodes`` episodes); it stops at the first round whose model reaches 500. With ``--subprocess`` every
phase runs in a fresh Python process, as the tutorial's shell loop does; otherwise the phases run in this process
(still sharing nothing but the files). ``--stale-fraction 0.5`` makes half of each round's traffic come from
servers still running the previous model, as in EvoKit's async mode: their samples carry the older
``model_iter_id`` and the update applies them through the model warehouse kept in ``solver.npz``.

Usage::

    python examples/evokit/online_loop.py loop --seed 0 --logdir runs/evokit_online/seed0 --rounds 20

Writes ``<logdir>/summary.json`` (``eval_return_mean``, ``eval_episodes``, ``env_steps``, ``wall_s``,
``rounds_to_500``), ``<logdir>/model_warehouse/model_dir_<k>/`` and ``<logdir>/sampling_log_<k>``.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time

import gymnasium as gym
import numpy as np

from evokit import ESAgent, NumpyMLP, SamplingLogWriter, TruncatedLogError, read_sampling_log

HERE = os.path.dirname(os.path.abspath(__file__))
MAX_RETURN = 500.0


def model_dir(logdir: str, k: int) -> str:
    return os.path.join(logdir, "model_warehouse", f"model_dir_{k}")


def play(agent: ESAgent, env: gym.Env, seed: int) -> tuple[float, int]:
    """One CartPole episode with ``agent.predict`` choosing the greedy action; returns (return, steps)."""
    obs, _ = env.reset(seed=seed)
    total, steps, done = 0.0, 0, False
    while not done:
        action = int(np.argmax(agent.predict(obs[None, :])[0]))
        obs, reward, terminated, truncated, _ = env.step(action)
        total += float(reward)
        steps += 1
        done = terminated or truncated
    return total, steps


def init_solver(config: str, logdir: str, seed: int) -> None:
    """Round 0: the initial model (a random 4-8-2 MLP, as the tutorial's step 1) and a fresh solver."""
    init_model = os.path.join(logdir, "init_model")
    ESAgent(NumpyMLP([4, 8, 2], seed=seed)).save_inference_model(init_model)
    agent = ESAgent()
    agent.load_config(config)
    agent.load_inference_model(init_model)
    agent.init_solver()
    agent.save_inference_model(model_dir(logdir, 0))
    agent.save_solver(model_dir(logdir, 0))


def online_sampling(config: str, logdir: str, k: int, samples: int, seed: int, stale_fraction: float = 0.0) -> int:
    """Round k's online sampling into ``sampling_log_<k>``; returns the env steps served.

    With ``stale_fraction`` > 0 (and k > 0) that share of the samples is served by servers still running model
    k - 1 (their ``SamplingInfo`` says so); the offline update applies them through the model warehouse.
    """
    env = gym.make("CartPole-v1")
    steps = 0
    n_stale = 2 * round(samples * stale_fraction / 2) if k > 0 else 0
    with SamplingLogWriter(os.path.join(logdir, f"sampling_log_{k}"), "wb") as log:
        for model_k, n_samples in ((k - 1, n_stale), (k, samples - n_stale)):
            if n_samples <= 0:
                continue
            agent = ESAgent()
            agent.load_config(config)
            agent.load_inference_model(model_dir(logdir, model_k))
            agent.load_solver(model_dir(logdir, model_k))
            sampling_agents = [agent.clone(sampler_id=1000 * seed + 10 * (k - model_k) + i) for i in range(2)]
            for i in range(n_samples):
                sampling_agent = sampling_agents[(i // 2) % len(sampling_agents)]  # mirrored pairs from one clone
                sampling_info = sampling_agent.add_noise()
                reward, n = play(sampling_agent, env, seed=10**6 * seed + 1000 * k + 500 * (k - model_k) + i // 2)
                log.write(reward, sampling_info)
                steps += n
    env.close()
    return steps


def offline_update(config: str, logdir: str, k: int) -> dict:
    """Round k's offline update: reads ``sampling_log_<k>``, writes ``model_dir_<k+1>``."""
    agent = ESAgent()
    agent.load_config(config)
    agent.load_inference_model(model_dir(logdir, k))
    agent.load_solver(model_dir(logdir, k))
    try:
        sampling_infos, rewards = read_sampling_log(os.path.join(logdir, f"sampling_log_{k}"))
    except TruncatedLogError as exc:  # a sampler died mid-record: keep every complete record
        print(f"warning: {exc}", file=sys.stderr)
        sampling_infos, rewards = exc.sampling_infos, exc.rewards
    stats = agent.update(sampling_infos, rewards)
    agent.save_inference_model(model_dir(logdir, k + 1))
    agent.save_solver(model_dir(logdir, k + 1))
    return {"reward_mean": float(np.mean(rewards)), **stats}


def evaluate(logdir: str, k: int, episodes: int) -> tuple[float, int]:
    """Greedy mean return of round k's model (loaded from its directory alone)."""
    agent = ESAgent().load_inference_model(model_dir(logdir, k))
    env = gym.make("CartPole-v1")
    results = [play(agent, env, seed=2**20 + 100 * k + ep) for ep in range(episodes)]
    env.close()
    return float(np.mean([r for r, _ in results])), sum(n for _, n in results)


def run_phase(args: argparse.Namespace, *phase: str) -> None:
    """Run one phase in a fresh process (``--subprocess``), as the tutorial's shell loop does."""
    cmd = [sys.executable, os.path.abspath(__file__), *phase, "--config", args.config, "--logdir", args.logdir,
           "--seed", str(args.seed), "--samples", str(args.samples), "--stale-fraction", str(args.stale_fraction)]
    subprocess.run(cmd, check=True)


def loop(args: argparse.Namespace) -> dict:
    start = time.monotonic()
    os.makedirs(args.logdir, exist_ok=True)
    if args.subprocess:
        run_phase(args, "init")
    else:
        init_solver(args.config, args.logdir, args.seed)
    env_steps, eval_return, solved_round, rows = 0, float("nan"), None, []
    for k in range(args.rounds):
        if args.subprocess:
            run_phase(args, "sample", "--round", str(k))
            run_phase(args, "update", "--round", str(k))
            _, rewards = read_sampling_log(os.path.join(args.logdir, f"sampling_log_{k}"))
            steps = -1
        else:
            steps = online_sampling(args.config, args.logdir, k, args.samples, args.seed, args.stale_fraction)
            offline_update(args.config, args.logdir, k)
            _, rewards = read_sampling_log(os.path.join(args.logdir, f"sampling_log_{k}"))
        env_steps += steps if steps >= 0 else 0
        eval_return, _ = evaluate(args.logdir, k + 1, args.eval_episodes)
        rows.append({"round": k + 1, "reward_mean": float(rewards.mean()), "eval_return": eval_return})
        print(f"round {k + 1:2d}  online reward mean {rewards.mean():6.1f}  eval {eval_return:6.1f}", flush=True)
        if eval_return >= MAX_RETURN:
            solved_round = k + 1
            break
    summary = {
        "env": "CartPole-v1", "algorithm": "evokit BASIC_ES, online sampling / offline update",
        "seed": args.seed, "samples_per_round": args.samples, "stale_fraction": args.stale_fraction,
        "eval_return_mean": eval_return,
        "eval_episodes": args.eval_episodes, "env_steps": env_steps if not args.subprocess else None,
        "rounds": len(rows), "rounds_to_500": solved_round, "solved": solved_round is not None,
        "subprocess": args.subprocess, "wall_s": round(time.monotonic() - start, 3), "history": rows,
        "loadavg": open("/proc/loadavg").read().split()[:3],
    }
    with open(os.path.join(args.logdir, "summary.json"), "w") as f:
        json.dump(summary, f, indent=2)
    print(json.dumps({k: v for k, v in summary.items() if k != "history"}), flush=True)
    return summary


def main(argv: list[str] | None = None) -> dict | None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("phase", choices=["loop", "init", "sample", "update"])
    parser.add_argument("--config", default=os.path.join(HERE, "online_config.prototxt"))
    parser.add_argument("--logdir", default="runs/evokit_online")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--round", type=int, default=0, help="k, for sample and update")
    parser.add_argument("--rounds", type=int, default=20)
    parser.add_argument("--samples", type=int, default=100, help="online samples per round (mirrored pairs)")
    parser.add_argument("--eval-episodes", type=int, default=10)
    parser.add_argument("--subprocess", action="store_true", help="run each phase in a fresh process")
    parser.add_argument("--stale-fraction", type=float, default=0.0,
                        help="share of each round's samples served by the previous model (async servers)")
    args = parser.parse_args(argv)
    if args.phase == "loop":
        return loop(args)
    if args.phase == "init":
        init_solver(args.config, args.logdir, args.seed)
    elif args.phase == "sample":
        online_sampling(args.config, args.logdir, args.round, args.samples, args.seed, args.stale_fraction)
    else:
        offline_update(args.config, args.logdir, args.round)
    return None


if __name__ == "__main__":
    result = main()
    sys.exit(0 if result is None or result["solved"] else 1)
