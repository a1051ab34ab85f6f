"""The peer for the EvoKit CartPole row: EvoTorch's PGPE (ClipUp) on CartPole-v1.

PGPE with population 40 (symmetric sampling), ClipUp, a ``Linear(4, 16) >> Tanh() >> Linear(16, 2)`` policy,
``GymNE`` evaluating one episode per solution, in-process (``--actors 0``) or on Ray actors. Solved means the
same as in ``examples/evokit/cartpole_es.py``: when a solution reached 500, the centre's greedy policy plays 10
episodes, and their mean is 500. Prints one JSON line (``wall_s`` counts from process start).
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


def evaluate(policy: torch.nn.Module, episodes: int, seed: int, env_name: str = "CartPole-v1") -> float:
    """Mean return of ``policy`` over ``episodes`` episodes: the argmax action on a discrete action space, the
    output clipped to the bounds on a Box one."""
    env = gym.make(env_name)
    box = isinstance(env.action_space, gym.spaces.Box)
    returns = []
    for ep in range(episodes):
        obs, _ = env.reset(seed=seed + ep)
        done, total = False, 0.0
        while not done:
            with torch.no_grad():
                out = policy(torch.as_tensor(obs, dtype=torch.float32))
            action = np.clip(out.numpy(), env.action_space.low, env.action_space.high) if box else int(out.argmax())
            obs, reward, terminated, truncated, _ = env.step(action)
            total += float(reward)
            done = terminated or truncated
        returns.append(total)
    return float(np.mean(returns))


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--actors", type=int, default=0)
    parser.add_argument("--max-generations", type=int, default=200)
    args = parser.parse_args()
    torch.set_num_threads(1)
    torch.manual_seed(args.seed)
    np.random.seed(args.seed)
    problem = GymNE("CartPole-v1", "Linear(obs_length, 16) >> Tanh() >> Linear(16, act_length)",
                    num_actors=args.actors if args.actors > 0 else None)
    searcher = PGPE(problem, popsize=40, center_learning_rate=0.075, stdev_learning_rate=0.1, radius_init=0.27,
                    optimizer="clipup", optimizer_config={"max_speed": 0.15})
    setup_s = time.time() - psutil.Process().create_time()
    eval_return, solved_gen, gen = float("nan"), None, 0
    for gen in range(args.max_generations):
        searcher.step()
        best = float(searcher.population.evals.max())
        if best >= 500:
            eval_return = evaluate(problem.to_policy(searcher.status["center"]), 10, seed=10**6 + gen)
            if eval_return >= 500:
                solved_gen = gen
                break
    wall_s = time.time() - psutil.Process().create_time()
    print(json.dumps({"peer": "evotorch PGPE", "seed": args.seed, "actors": args.actors,
                      "solved": solved_gen is not None,
                      "generations": gen + 1, "eval_return_mean": eval_return, "wall_s": round(wall_s, 3),
                      "startup_s": round(setup_s, 3)}))


if __name__ == "__main__":
    main()
