"""DDPG on gymnasium Pendulum-v1 with parl.algorithms.DDPG.

Algorithm box (Lillicrap et al. 2016, "Continuous control with deep reinforcement learning"):

    for each env step:
        a = clip(pi(s) + N(0, expl_noise), -1, 1) (uniform random during the first `--learning-starts` steps)
        store (s, a, r, s', terminated) in a ReplayMemory (truncation is not termination)
        DDPG.learn(batch): critic step on r + gamma * Q'(s', pi'(s')), actor step, Polyak target update
        every `--eval-every` steps: evaluate 10 deterministic episodes
    stop as soon as the evaluation mean reaches --target-return

Usage::

    python examples/ddpg/train.py --seed 0 --logdir runs/ddpg/seed0
    python examples/ddpg/train.py --backend paddle --seed 0 --logdir runs/ddpg/paddle-seed0

    # killed, pre-empted or stopped with Ctrl-C: continue exactly where the last checkpoint left off
    python examples/ddpg/train.py --seed 0 --logdir runs/ddpg/seed0 --resume runs/ddpg/seed0

Writes ``<logdir>/summary.json``, tensorboard scalars, ``<logdir>/curve.csv`` (a row per evaluation:
``env_steps``, ``wall_s``, ``eval_return_mean``, ``train_return_mean`` = mean of the last 10 training
episodes) and ``<logdir>/checkpoint.npz`` (every ``--checkpoint-every`` minutes, on SIGTERM / Ctrl-C and at
the end: docs/long_runs.md).
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

import parl
from parl.utils import Checkpointer, ReplayMemory, RunLog, add_run_args

GAMMA = 0.98
TAU = 0.005
ACTOR_LR = 1e-3
CRITIC_LR = 1e-3
BATCH_SIZE = 256
MEMORY_SIZE = 200_000
HIDDEN = 64
EVAL_EPISODES = 10


@functools.cache
def define_model(backend: str = "torch") -> type:
    """``DDPGModel`` on ``backend`` (``"torch"`` or ``"paddle"``), which it selects (before parl.algorithms)."""
    parl.set_backend(backend)
    nets = importlib.import_module(f"parl_algorithms.{backend}.nets")
    ops = importlib.import_module(f"parl_algorithms.{backend}.ops")

    class DDPGModel(parl.Model):
        """Deterministic tanh actor and one Q critic (Linear-ReLU-Linear-ReLU-Linear MLPs).

        ``policy(obs)`` -> action float32 [B, act_dim] in [-1, 1]; ``value(obs, action)`` -> Q float32 [B, 1].
        """

        def __init__(self, obs_dim: int, act_dim: int):
            super().__init__()
            self.actor = nets.MLP([obs_dim, HIDDEN, HIDDEN, act_dim])
            self.critic = nets.MLP([obs_dim + act_dim, HIDDEN, HIDDEN, 1])

        def policy(self, obs):
            return self.actor(obs).tanh()

        def value(self, obs, action):
            return self.critic(ops.concat([obs, action]))

        def get_actor_params(self):
            return self.actor.parameters()

        def get_critic_params(self):
            return self.critic.parameters()

    return DDPGModel


def evaluate(alg, env_id: str, seed: int, action_scale: float, ops) -> float:
    """Mean return of EVAL_EPISODES deterministic episodes, played in parallel (one per env)."""
    envs = gym.make_vec(env_id, num_envs=EVAL_EPISODES, vectorization_mode="sync")
    obs, _ = envs.reset(seed=seed + 10_000)  # env i gets seed + 10000 + i
    returns, done = np.zeros(EVAL_EPISODES), np.zeros(EVAL_EPISODES, dtype=bool)
    with ops.no_grad():
        while not done.all():
            action = alg.predict(ops.tensor(obs, "float32")).cpu().numpy() * action_scale
            obs, reward, terminated, truncated, _ = envs.step(action)
            returns += reward * ~done
            done |= terminated | truncated
    envs.close()
    return float(returns.mean())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--backend", choices=("torch", "paddle"), default="torch", help="deep-learning framework")
    parser.add_argument("--env", default="Pendulum-v1")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--device", default=None,
                        help="device of the learner: cpu, cuda, cuda:1  [default: cuda when available]")
    parser.add_argument("--logdir", default=None, help="default: runs/ddpg/<env>-seed<seed>")
    parser.add_argument("--total-steps", type=int, default=20_000)
    parser.add_argument("--learning-starts", type=int, default=1_000)
    parser.add_argument("--eval-every", type=int, default=1_000)
    parser.add_argument("--target-return", type=float, default=-200.0)
    parser.add_argument("--expl-noise", type=float, default=0.1, help="Gaussian exploration std, in [-1, 1] units")
    parser.add_argument("--no-progress", action="store_true")
    add_run_args(parser)
    args = parser.parse_args()
    logdir = args.resume or args.logdir or os.path.join("runs", "ddpg", f"{args.env}-seed{args.seed}")
    run = RunLog(logdir)
    ops = importlib.import_module(f"parl_algorithms.{args.backend}.ops")
    ops.seed(args.seed)
    rng = np.random.default_rng(args.seed)

    env = gym.make(args.env)
    obs_dim, act_dim = env.observation_space.shape[0], env.action_space.shape[0]
    action_scale = float(env.action_space.high[0])
    model = define_model(args.backend)(obs_dim, act_dim)  # selects the backend first
    alg = parl.algorithms.DDPG(model, gamma=GAMMA, tau=TAU, actor_lr=ACTOR_LR,
                               critic_lr=CRITIC_LR, device=args.device)
    memory = ReplayMemory(MEMORY_SIZE, obs_dim, act_dim, seed=args.seed)

    ckpt = Checkpointer(run, every_min=args.checkpoint_every, resume=args.resume is not None, config=vars(args))
    ckpt.register(alg=alg, memory=memory, rng=rng, env=env)
    c = ckpt.track(obs=env.reset(seed=args.seed)[0], ep_return=0.0, eval_mean=float("-inf"), reached=False, step=0,
                   last10=[])
    ckpt.start()  # (a resumed run continues from its checkpoint: counters, env, memory, networks, RNGs)
    bar = tqdm(total=args.total_steps, initial=c.step - c.step % args.eval_every, disable=args.no_progress,
               unit="step")

    def evaluate_and_log() -> None:
        c.eval_mean = evaluate(alg, args.env, args.seed, action_scale, ops)
        run.scalar("eval/return_mean", c.eval_mean, c.step)
        run.row({"env_steps": c.step, "wall_s": round(run.elapsed(), 3), "eval_return_mean": round(c.eval_mean, 3),
                 "train_return_mean": round(float(np.mean(c.last10)), 3) if c.last10 else "nan"})
        c.reached = c.eval_mean >= args.target_return

    while c.step < args.total_steps and not c.reached:
        c.step += 1
        if c.step <= args.learning_starts:
            action = rng.uniform(-1.0, 1.0, act_dim).astype(np.float32)
        else:
            with ops.no_grad():
                action = alg.predict(ops.tensor(c.obs[None], "float32"))[0].cpu().numpy()
            action = np.clip(action + rng.normal(0.0, args.expl_noise, act_dim), -1.0, 1.0).astype(np.float32)
        next_obs, reward, terminated, truncated, _ = env.step(action * action_scale)
        memory.append(c.obs, action, reward, next_obs, terminated)
        c.ep_return += reward
        c.obs = next_obs
        if terminated or truncated:
            run.scalar("train/episode_return", c.ep_return, c.step)
            c.last10 = (c.last10 + [c.ep_return])[-10:]
            bar.set_postfix(train_return=f"{c.ep_return:.1f}", eval=f"{c.eval_mean:.1f}")
            c.obs, _ = env.reset()
            c.ep_return = 0.0
        if c.step > args.learning_starts:
            alg.learn(*(ops.tensor(a) for a in memory.sample_batch(BATCH_SIZE)))
        if c.step % args.eval_every == 0:
            bar.update(args.eval_every)
            for key, value in alg.last_info.items():
                run.scalar(key, value, c.step)
            if c.step > args.learning_starts:
                evaluate_and_log()
        ckpt.maybe_save(c.step)
    bar.close()
    if not c.reached:
        evaluate_and_log()
    run.close()
    result = run.write_summary({
        "device": str(alg.device), "env": args.env, "backend": args.backend, "seed": args.seed,
        "eval_return_mean": c.eval_mean, "eval_episodes": EVAL_EPISODES, "env_steps": c.step,
        "wall_s": round(run.elapsed(), 3), "target_return": args.target_return, "reached": c.reached})
    ckpt.finish(c.step)
    print(json.dumps(result))


if __name__ == "__main__":
    main()
