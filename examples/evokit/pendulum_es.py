"""EvoKit on Pendulum-v1: OpenAI-style ES on a numpy MLP (config in TOML form), in one process.

The algorithm box:

1. ``agent = ESAgent(NumpyMLP([3, 16, 1], output tanh))``, ``load_config(pendulum_config.toml)``,
   ``init_solver()``; the action is ``2 * tanh(output)`` (the torque range [-2, 2]).
2. Each generation a sampling clone draws ``--pop`` perturbations (mirrored pairs). Every perturbed policy plays
   the same ``--starts`` start states (common random numbers: the rewards of one generation differ by the
   policy, not by the luck of the start), all ``pop x starts`` episodes at once in ``PendulumBatch``, a numpy
   replica of gymnasium's Pendulum-v1 dynamics and reward (checked against gymnasium in the tests).
3. ``agent.update(sampling_infos, mean returns)`` (rank-centred fitness, Adam).
4. Every ``--eval-every`` generations the master's policy plays ``--eval-episodes`` episodes of the real
   ``gymnasium.make("Pendulum-v1")``; the run stops when their mean return is >= ``--target`` (-200).

Usage::

    python examples/evokit/pendulum_es.py --seed 0 --logdir runs/evokit_pendulum/seed0

Writes ``<logdir>/summary.json`` (``eval_return_mean``, ``eval_episodes``, ``env_steps``, ``wall_s`` from process
start), ``<logdir>/model/`` and, unless ``--no-tensorboard``, tensorboard scalars.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time

import gymnasium as gym
import numpy as np
import psutil

from evokit import ESAgent, NumpyMLP, load_config

HERE = os.path.dirname(os.path.abspath(__file__))
EPISODE_STEPS = 200  # Pendulum-v1's TimeLimit


class PendulumBatch:
    """N independent Pendulum-v1 systems stepped at once (gymnasium's equations, g = 10).

    ``reset(rng) -> obs float32 [N, 3]`` with ``th ~ U(-pi, pi)``, ``thdot ~ U(-1, 1)``;
    ``step(u float [N]) -> (obs float32 [N, 3], reward float [N])``, reward
    ``-(angle_normalize(th)^2 + 0.1 thdot^2 + 0.001 u^2)``.
    """

    g, m, length, dt, max_speed, max_torque = 10.0, 1.0, 1.0, 0.05, 8.0, 2.0

    def __init__(self, n: int) -> None:
        self.th = np.zeros(n)
        self.thdot = np.zeros(n)

    def set_state(self, th: np.ndarray, thdot: np.ndarray) -> np.ndarray:
        self.th, self.thdot = np.asarray(th, dtype=np.float64).copy(), np.asarray(thdot, dtype=np.float64).copy()
        return self.obs()

    def obs(self) -> np.ndarray:
        return np.stack([np.cos(self.th), np.sin(self.th), self.thdot], axis=-1).astype(np.float32)

    def step(self, u: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        u = np.clip(np.asarray(u, dtype=np.float64), -self.max_torque, self.max_torque)
        angle = ((self.th + np.pi) % (2 * np.pi)) - np.pi
        costs = angle**2 + 0.1 * self.thdot**2 + 0.001 * u**2
        accel = 3 * self.g / (2 * self.length) * np.sin(self.th) + 3.0 / (self.m * self.length**2) * u
        thdot = self.thdot + accel * self.dt
        self.thdot = np.clip(thdot, -self.max_speed, self.max_speed)
        self.th = self.th + self.thdot * self.dt
        return self.obs(), -costs


def policy_action(output: np.ndarray) -> np.ndarray:
    """Map the network's tanh output in [-1, 1] to a torque in [-2, 2]."""
    return 2.0 * output[..., 0]


def play_population(mlp: NumpyMLP, params: np.ndarray, th0: np.ndarray, thdot0: np.ndarray) -> tuple[np.ndarray, int]:
    """Mean return of each of P policies over the same K start states.

    Args:
        mlp: the network (its own weights are not used).
        params: float32 [P, num_params].
        th0, thdot0: float [K] start angles and angular velocities.

    Returns:
        ``(returns float64 [P], env_steps)``.
    """
    pop, starts = params.shape[0], th0.shape[0]
    env = PendulumBatch(pop * starts)
    obs = env.set_state(np.tile(th0, pop), np.tile(thdot0, pop))
    total = np.zeros(pop * starts)
    for _ in range(EPISODE_STEPS):
        out = mlp.forward_population(params, obs.reshape(pop, starts, 3))
        obs, reward = env.step(policy_action(out).reshape(-1))
        total += reward
    return total.reshape(pop, starts).mean(axis=1), pop * starts * EPISODE_STEPS


def evaluate(agent: ESAgent, episodes: int, seed: int) -> tuple[float, int]:
    """Mean return of the master's policy on the real gymnasium Pendulum-v1."""
    env = gym.make("Pendulum-v1")
    returns = []
    for ep in range(episodes):
        obs, _ = env.reset(seed=seed + ep)
        done, ret = False, 0.0
        while not done:
            action = policy_action(agent.predict(obs[None, :]))
            obs, reward, terminated, truncated, _ = env.step(action.astype(np.float32))
            ret += float(reward)
            done = terminated or truncated
        returns.append(ret)
    env.close()
    return float(np.mean(returns)), episodes * EPISODE_STEPS


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--logdir", default="runs/evokit_pendulum")
    parser.add_argument("--config", default=os.path.join(HERE, "pendulum_config.toml"))
    parser.add_argument("--pop", type=int, default=40, help="samples per generation (even: mirrored pairs)")
    parser.add_argument("--starts", type=int, default=6, help="start states each sample plays")
    parser.add_argument("--max-generations", type=int, default=1000)
    parser.add_argument("--eval-every", type=int, default=10)
    parser.add_argument("--eval-episodes", type=int, default=10)
    parser.add_argument("--target", type=float, default=-200.0)
    parser.add_argument("--no-tensorboard", action="store_true")
    args = parser.parse_args(argv)

    config = load_config(args.config)
    config.solver.sampling.gaussian_sampling.seed += args.seed
    agent = ESAgent(NumpyMLP([3, 16, 1], output_activation="tanh", seed=args.seed), config=config)
    agent.init_solver()
    clone = agent.clone(sampler_id=args.seed)
    rng = np.random.default_rng(args.seed)

    history, env_steps, eval_return, solved_gen = [], 0, float("nan"), None
    for gen in range(args.max_generations):
        infos = []
        params = np.empty((args.pop, agent.num_params), dtype=np.float32)
        for i in range(args.pop):
            infos.append(clone.add_noise())
            params[i] = clone.params
        th0, thdot0 = rng.uniform(-np.pi, np.pi, args.starts), rng.uniform(-1, 1, args.starts)
        rewards, steps = play_population(agent.model, params, th0, thdot0)
        env_steps += steps
        agent.update(infos, rewards)
        row = {"generation": gen, "reward_mean": float(rewards.mean()), "reward_max": float(rewards.max()),
               "env_steps": env_steps}
        if (gen + 1) % args.eval_every == 0:
            eval_return, _ = evaluate(agent, args.eval_episodes, seed=10**6 + gen)
            row["eval_return"] = eval_return
            print(f"gen {gen:4d}  reward mean {row['reward_mean']:8.1f}  eval {eval_return:8.1f}  steps {env_steps}",
                  flush=True)
        history.append(row)
        if row.get("eval_return", -np.inf) >= args.target:
            solved_gen = gen
            break
    wall_s = time.time() - psutil.Process().create_time()

    os.makedirs(args.logdir, exist_ok=True)
    agent.save_inference_model(os.path.join(args.logdir, "model"))
    agent.save_solver(os.path.join(args.logdir, "model"))
    summary = {
        "env": "Pendulum-v1", "algorithm": "evokit BASIC_ES", "seed": args.seed, "pop": args.pop,
        "starts": args.starts, "eval_return_mean": eval_return, "eval_episodes": args.eval_episodes,
        "env_steps": env_steps, "generations": len(history), "solved": solved_gen is not None,
        "solved_generation": solved_gen, "target": args.target, "wall_s": round(wall_s, 3),
        "loadavg": open("/proc/loadavg").read().split()[:3],
    }
    with open(os.path.join(args.logdir, "summary.json"), "w") as f:
        json.dump(summary, f, indent=2)
    if not args.no_tensorboard:
        from tensorboardX import SummaryWriter

        with SummaryWriter(args.logdir) as writer:
            for row in history:
                for key in ("reward_mean", "reward_max", "eval_return"):
                    if key in row:
                        writer.add_scalar(f"train/{key}", row[key], row["env_steps"])
    print(json.dumps(summary), flush=True)
    return summary


if __name__ == "__main__":
    result = main()
    sys.exit(0 if result["solved"] else 1)
