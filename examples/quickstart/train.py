"""PARL QuickStart: train a Policy Gradient (REINFORCE) agent on gymnasium's CartPole-v1.

The three PARL roles, as in the original tutorial:

- ``CartpoleModel(parl.Model)``: the policy network, observation -> action probabilities (torch.nn or
  paddle.nn layers, by ``--backend``; the rest of the program is the same on both).
- ``parl.algorithms.PolicyGradient``: the loss ``mean(-log pi(a|s) * G)`` and its Adam optimizer.
- ``CartpoleAgent(parl.Agent)``: the numpy bridge to the environment (sample / predict / learn).

Each update uses ``--episodes-per-update`` complete episodes; their discounted returns G_t are
normalised over the batch (mean 0, std 1: a baseline that reduces the gradient's variance). Every
``--eval-every`` updates the greedy policy (argmax action) plays 10 episodes; training stops early once
their mean return reaches ``--target-return`` (475). The agent is then saved, restored into a fresh agent
and evaluated again on the same 10 episode seeds.

Usage::

    python examples/quickstart/train.py --seed 0 --logdir runs/quickstart/seed0
    python examples/quickstart/train.py --backend paddle --seed 0 --logdir runs/quickstart/paddle-seed0
    tensorboard --logdir runs/quickstart
    # killed, pre-empted or stopped with Ctrl-C: continue exactly where the last checkpoint left off
    python examples/quickstart/train.py --seed 0 --logdir runs/quickstart/seed0 --resume runs/quickstart/seed0

Writes ``<logdir>/summary.json``, ``<logdir>/agent.ckpt``, ``<logdir>/log.log``, tensorboard events and
``<logdir>/curve.csv`` (a row per evaluation: ``env_steps``, ``wall_s``, ``eval_return_mean``, ``train_return_mean`` =
mean of the last 10 training episodes), and ``<logdir>/checkpoint.npz`` (every ``--checkpoint-every`` minutes,
on SIGTERM / Ctrl-C and at the end, between two updates: docs/long_runs.md).
"""

from __future__ import annotations

import argparse
import functools
import importlib
import json
import os

import gymnasium as gym
import numpy as np
from tqdm import tqdm
from tqdm.contrib.logging import logging_redirect_tqdm

import parl
from parl.utils import Checkpointer, RunLog, add_run_args, calc_discount_sum_rewards, logger

GAMMA = 0.99
LEARNING_RATE = 4e-3
EVAL_EPISODES = 10


@functools.cache
def define_classes(backend: str = "torch") -> tuple[type, type]:
    """``(CartpoleModel, CartpoleAgent)`` on ``backend`` (``"torch"`` or ``"paddle"``), which it selects."""
    parl.set_backend(backend)
    nn = importlib.import_module(f"{backend}.nn")
    tanh = importlib.import_module(backend).tanh
    softmax = nn.functional.softmax

    class CartpoleModel(parl.Model):
        """Two fully connected layers: obs float32 [B, obs_dim] -> action probabilities float32 [B, act_dim]."""

        def __init__(self, obs_dim: int, act_dim: int, hid_size: int = 128):
            super().__init__()
            self.fc1 = nn.Linear(obs_dim, hid_size)
            self.fc2 = nn.Linear(hid_size, act_dim)

        def forward(self, obs):
            return softmax(self.fc2(tanh(self.fc1(obs))), -1)

    class CartpoleAgent(parl.Agent):
        """Samples actions for training, picks the greedy action for evaluation, and learns from episodes.

        ``parl.Agent``'s ``predict`` / ``learn`` convert numpy to the backend's tensors and back.

        Args:
            algorithm: a ``parl.algorithms.PolicyGradient``.
            obs_dim: the observation length (4 for CartPole).
            act_dim: the number of discrete actions (2 for CartPole).
            seed: seed of the generator used to sample actions.
        """

        def __init__(self, algorithm, obs_dim: int, act_dim: int, seed: int | None = None):
            super().__init__(algorithm)
            self.obs_dim = obs_dim
            self.act_dim = act_dim
            self.rng = np.random.default_rng(seed)

        def _obs(self, obs) -> np.ndarray:
            """Validate observations (float [obs_dim] or [N, obs_dim]); float32 numpy."""
            obs = np.asarray(obs)
            if not np.issubdtype(obs.dtype, np.number):
                raise TypeError(f"CartpoleAgent expects numeric observations, got dtype {obs.dtype}; pass the "
                                "observation returned by env.reset() / env.step() (np.float32)")
            if obs.ndim not in (1, 2) or obs.shape[-1] != self.obs_dim:
                raise ValueError(f"CartpoleAgent expects observations of shape [{self.obs_dim}] or "
                                 f"[N, {self.obs_dim}], got {obs.shape}; pass the observation returned by "
                                 "env.reset() / env.step() (stack several with np.stack)")
            return obs.astype(np.float32, copy=False)

        def sample(self, obs) -> int:
            """Sample an action from the policy for one observation float32 [obs_dim]."""
            prob = super().predict(self._obs(obs)).astype(np.float64)
            return int(self.rng.choice(self.act_dim, p=prob / prob.sum()))

        def predict(self, obs) -> np.ndarray | int:
            """Greedy action(s): int for one observation [obs_dim], int64 [N] for a batch [N, obs_dim]."""
            action = super().predict(self._obs(obs)).argmax(-1)
            return int(action) if np.ndim(action) == 0 else action

        def learn(self, obs, action, reward) -> float:
            """One update from obs float32 [T, obs_dim], action int64 [T], reward (the returns) float32 [T]."""
            return float(super().learn(self._obs(obs), np.asarray(action, dtype=np.int64),
                                       np.asarray(reward, dtype=np.float32)))

    return CartpoleModel, CartpoleAgent


def run_train_episode(agent, env: gym.Env, seed: int | None = None):
    """Play one episode with sampled actions; returns the observations, actions and rewards."""
    obs_list, action_list, reward_list = [], [], []
    obs, _ = env.reset(seed=seed)
    while True:
        obs_list.append(obs)
        action = agent.sample(obs)
        action_list.append(action)
        obs, reward, terminated, truncated, _ = env.step(action)
        reward_list.append(reward)
        if terminated or truncated:
            break
    return obs_list, action_list, reward_list


def run_evaluate_episodes(agent, envs: list[gym.Env], seeds: list[int]) -> np.ndarray:
    """Play one episode per env with greedy actions, all envs in lockstep (one batched forward per step).

    Returns:
        float64 [len(envs)]: the return of each episode.
    """
    obs = np.stack([env.reset(seed=s)[0] for env, s in zip(envs, seeds, strict=True)])
    returns = np.zeros(len(envs))
    alive = np.ones(len(envs), dtype=bool)
    while alive.any():
        actions = agent.predict(obs)
        for i in np.flatnonzero(alive):
            obs[i], reward, terminated, truncated, _ = envs[i].step(int(actions[i]))
            returns[i] += reward
            alive[i] = not (terminated or truncated)
    return returns


def build_agent(obs_dim: int, act_dim: int, seed: int, lr: float = LEARNING_RATE, backend: str = "torch",
                device: str | None = None):
    """Model -> algorithm -> agent, as in every PARL program (on ``backend``: ``"torch"`` or ``"paddle"``;
    ``device`` is the torch device, default CUDA when available)."""
    CartpoleModel, CartpoleAgent = define_classes(backend)  # noqa: N806 (classes)
    model = CartpoleModel(obs_dim=obs_dim, act_dim=act_dim)
    alg = parl.algorithms.PolicyGradient(model, lr=lr, **({"device": device} if backend == "torch" else {}))
    return CartpoleAgent(alg, obs_dim=obs_dim, act_dim=act_dim, seed=seed)


def _loadavg() -> list[float] | None:
    """The 1, 5 and 15 minute load averages (wall times on a shared machine depend on them)."""
    try:
        return [round(x, 2) for x in os.getloadavg()]
    except (AttributeError, OSError):
        return None


def parse_args(argv=None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--backend", choices=("torch", "paddle"), default="torch", help="deep-learning framework")
    parser.add_argument("--seed", type=int, default=0, help="seed of the framework, the env and action sampling")
    parser.add_argument("--device", default=None,
                        help="torch device: cpu, cuda, cuda:1  [default: cuda when available]")
    parser.add_argument("--logdir", default=None, help="output directory (default: runs/quickstart/seed{SEED})")
    parser.add_argument("--max-episodes", type=int, default=300, help="training episodes at most")
    parser.add_argument("--lr", type=float, default=LEARNING_RATE, help="Adam learning rate")
    parser.add_argument("--episodes-per-update", type=int, default=2, help="episodes per gradient step")
    parser.add_argument("--eval-every", type=int, default=3, help="evaluate every N updates")
    parser.add_argument("--target-return", type=float, default=475.0, help="stop once the mean eval return reaches it")
    parser.add_argument("--no-progress", action="store_true", help="hide the progress bar")
    add_run_args(parser)
    args = parser.parse_args(argv)
    if args.resume is not None:
        args.logdir = args.resume
    if args.logdir is None:
        args.logdir = os.path.join("runs", "quickstart", f"seed{args.seed}")
    for name in ("max_episodes", "episodes_per_update", "eval_every"):
        if getattr(args, name) < 1:
            parser.error(f"--{name.replace('_', '-')} must be >= 1")
    return args


def main(argv=None) -> dict:
    args = parse_args(argv)
    framework = importlib.import_module(args.backend)
    if args.backend == "torch":
        framework.set_num_threads(1)  # small networks: one thread is 2-4x faster than the default
        framework.manual_seed(args.seed)
    else:
        framework.seed(args.seed)
    logger.set_dir(args.logdir)
    run = RunLog(args.logdir)

    env = gym.make("CartPole-v1")
    eval_envs = [gym.make("CartPole-v1") for _ in range(EVAL_EPISODES)]
    eval_seeds = [10_000 + 100 * args.seed + i for i in range(EVAL_EPISODES)]
    obs_dim = env.observation_space.shape[0]
    act_dim = env.action_space.n
    agent = build_agent(obs_dim, act_dim, seed=args.seed, lr=args.lr, backend=args.backend, device=args.device)

    ckpt = Checkpointer(run, every_min=args.checkpoint_every, resume=args.resume is not None, config=vars(args))
    ckpt.register(alg=agent.alg, agent_rng=agent.rng, env=env)
    c = ckpt.track(episodes=0, updates=0, env_steps=0, eval_mean=float("nan"), reached=False, last10=[])
    ckpt.start()  # (a resumed run continues from its checkpoint: counters, env, network, optimizer, RNGs)
    progress = tqdm(total=args.max_episodes, initial=c.episodes, desc=f"CartPole seed {args.seed}", unit="ep",
                    disable=args.no_progress)
    with logging_redirect_tqdm(loggers=[logger.get_logger()]):  # log lines print above the bar
        while c.episodes < args.max_episodes and not c.reached:
            batch_obs, batch_action, batch_return = [], [], []
            for _ in range(min(args.episodes_per_update, args.max_episodes - c.episodes)):
                obs_list, action_list, reward_list = run_train_episode(
                    agent, env, seed=args.seed if c.episodes == 0 else None)
                c.episodes += 1
                c.env_steps += len(reward_list)
                run.scalar("train/episode_return", sum(reward_list), c.env_steps)
                c.last10 = (c.last10 + [sum(reward_list)])[-10:]
                batch_obs += obs_list
                batch_action += action_list
                batch_return.append(calc_discount_sum_rewards(reward_list, GAMMA))
                progress.update(1)
                progress.set_postfix(ret=sum(reward_list), eval=c.eval_mean)
            batch_return = np.concatenate(batch_return)
            batch_return = (batch_return - batch_return.mean()) / (batch_return.std() + 1e-8)
            loss = agent.learn(np.array(batch_obs), np.array(batch_action), batch_return)
            c.updates += 1
            run.scalar("train/loss", loss, c.env_steps)

            if c.updates % args.eval_every == 0 or c.episodes >= args.max_episodes:
                c.eval_mean = float(run_evaluate_episodes(agent, eval_envs, eval_seeds).mean())
                run.scalar("eval/return_mean", c.eval_mean, c.env_steps)
                run.row({"env_steps": c.env_steps, "wall_s": round(run.elapsed(), 3),
                         "eval_return_mean": round(c.eval_mean, 3),
                         "train_return_mean": round(float(np.mean(c.last10)), 3)})
                logger.info("episode %d, env steps %d: eval return %.1f", c.episodes, c.env_steps, c.eval_mean)
                progress.set_postfix(ret=sum(reward_list), eval=c.eval_mean)
                c.reached = c.eval_mean >= args.target_return
            ckpt.maybe_save(c.env_steps)
    progress.close()
    run.close()
    train_wall_s = run.elapsed()

    # Save, restore into a fresh agent, evaluate again on the same episodes.
    checkpoint = os.path.join(args.logdir, "agent.ckpt")
    agent.save(checkpoint)
    restored = build_agent(obs_dim, act_dim, seed=args.seed + 1, lr=args.lr, backend=args.backend,
                           device=args.device)
    restored.restore(checkpoint)
    restored_mean = float(run_evaluate_episodes(restored, eval_envs, eval_seeds).mean())
    logger.info("restored agent: eval return %.1f (before saving: %.1f)", restored_mean, c.eval_mean)

    result = run.write_summary({
        "eval_return_mean": c.eval_mean,
        "eval_episodes": EVAL_EPISODES,
        "env_steps": c.env_steps,
        "wall_s": round(run.elapsed(), 3),
        "train_wall_s": round(train_wall_s, 3),
        "episodes": c.episodes,
        "updates": c.updates,
        "seed": args.seed,
        "backend": args.backend,
        "lr": args.lr,
        "target_return": args.target_return,
        "reached_threshold": c.reached,
        "restored_eval_return_mean": restored_mean,
        "checkpoint": checkpoint,
        "loadavg": _loadavg(),
    })
    ckpt.finish(c.env_steps)
    for e in [env, *eval_envs]:
        e.close()
    logger.info("summary: %s", json.dumps(result))
    return result


if __name__ == "__main__":
    main()
