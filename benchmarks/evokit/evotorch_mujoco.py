"""The peer for the ES-on-MuJoCo row: EvoTorch's PGPE with ClipUp on a gymnasium MuJoCo env, GymNE on Ray actors.

PGPE / ClipUp with the settings of EvoTorch's MuJoCo example (``center_learning_rate=0.01125``,
``stdev_learning_rate=0.1``, ``optimizer_config={"max_speed": 0.015}``, ``radius_init=0.27``), symmetric sampling,
observation normalisation, the same ``obs -> 32 -> 32 -> act`` tanh MLP as ``examples/es_mujoco/train.py`` and the
same population (``--popsize``, default 40 = that example's ``min_episodes_per_batch``). Runs until
``--max-env-steps`` or until the centre's mean return over ``--eval-episodes`` (every ``--eval-interval`` steps)
reaches ``--target``. Prints one JSON line: ``env_steps``, ``env_steps_per_s`` (sampling time only), ``wall_s``
(from process start), ``eval_return``, ``reached_target_s``.
"""

from __future__ import annotations

import argparse
import json
import time

import gymnasium as gym
import numpy as np
import psutil
import torch
from evotorch.algorithms import PGPE
from evotorch.neuroevolution import GymNE


def evaluate(problem: GymNE, center: torch.Tensor, env_name: str, episodes: int, seed: int) -> float:
    """Mean return of the centre solution (the problem's observation normalisation applied, not updated)."""
    policy = problem.to_policy(center)
    env = gym.make(env_name)
    returns = []
    for ep in range(episodes):
        obs, _ = env.reset(seed=seed + ep)
        done, total = False, 0.0
        while not done:
            with torch.no_grad():
                action = policy(torch.as_tensor(obs, dtype=torch.float32)).numpy()
            obs, reward, terminated, truncated, _ = env.step(np.clip(action, env.action_space.low,
                                                                     env.action_space.high))
            total += float(reward)
            done = terminated or truncated
        returns.append(total)
    return float(np.mean(returns))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--env", default="HalfCheetah-v5")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--actors", type=int, default=2)
    parser.add_argument("--popsize", type=int, default=40)
    parser.add_argument("--hidden", type=int, default=32)
    parser.add_argument("--max-env-steps", type=int, default=200_000)
    parser.add_argument("--target", type=float, default=None)
    parser.add_argument("--eval-interval", type=int, default=200_000)
    parser.add_argument("--eval-episodes", type=int, default=5)
    args = parser.parse_args()
    torch.set_num_threads(1)
    torch.manual_seed(args.seed)
    h = args.hidden
    problem = GymNE(args.env, f"Linear(obs_length, {h}) >> Tanh() >> Linear({h}, {h}) >> Tanh() >> "
                    "Linear({h}, act_length)".replace("{h}", str(h)),
                    observation_normalization=True, num_actors=args.actors)
    searcher = PGPE(problem, popsize=args.popsize, center_learning_rate=0.01125, stdev_learning_rate=0.1,
                    optimizer="clipup", optimizer_config={"max_speed": 0.015}, radius_init=0.27,
                    symmetric=True)
    sampling_s, next_eval, eval_return, reached = 0.0, args.eval_interval, float("nan"), None
    steps = 0
    while steps < args.max_env_steps:
        t0 = time.time()
        searcher.step()
        sampling_s += time.time() - t0
        steps = int(searcher.status["total_interaction_count"])
        if steps >= next_eval or steps >= args.max_env_steps:
            next_eval += args.eval_interval
            eval_return = evaluate(problem, searcher.status["center"], args.env, args.eval_episodes, 10**7)
            print(f"steps {steps}  eval {eval_return:.1f}  steps/s {steps / sampling_s:.0f}", flush=True)
            if args.target is not None and eval_return >= args.target:
                reached = time.time() - psutil.Process().create_time()
                break
    print(json.dumps({"peer": "evotorch PGPE/ClipUp GymNE", "env": args.env, "actors": args.actors,
                      "popsize": args.popsize, "num_params": int(problem.solution_length), "env_steps": steps,
                      "env_steps_per_s": steps / sampling_s, "eval_return": eval_return,
                      "reached_target_s": reached, "wall_s": time.time() - psutil.Process().create_time(),
                      "loadavg": open("/proc/loadavg").read().split()[:3]}), flush=True)


if __name__ == "__main__":
    main()
