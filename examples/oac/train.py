"""OAC on gymnasium Pendulum-v1 with parl.algorithms.OAC (Ciosek et al. 2019, "Better Exploration with
Optimistic Actor-Critic").

Algorithm box:

    for each env step:
        a = uniform random during the first `--learning-starts` steps, else
            OAC.get_optimistic_exploration_action(s): the policy mean shifted along the gradient of
            Q_UB = mean(Q1, Q2) + beta * |Q1 - Q2| / 2 by a step of KL size delta, then sampled
        store (s, a, r, s', terminated) in a ReplayMemory (truncation is not termination)
        OAC.learn(batch): SAC's twin-critic soft Bellman step, actor step, Polyak target update
        every `--eval-every` steps: evaluate 10 deterministic episodes (tanh of the Gaussian mean)
    stop as soon as the evaluation mean reaches --target-return

Usage::

    python examples/oac/train.py --seed 0 --logdir runs/oac/seed0

    # killed, pre-empted or stopped with Ctrl-C: continue exactly where the last checkpoint left off
    python examples/oac/train.py --seed 0 --logdir runs/oac/seed0 --resume runs/oac/seed0

Writes ``<logdir>/summary.json``, tensorboard scalars, ``<logdir>/curve.csv`` (a row per evaluation:
``env_steps``, ``wall_s``, ``eval_return_mean``, ``train_return_mean`` = mean of the last 10 training
episodes) and ``<logdir>/checkpoint.npz`` (every ``--checkpoint-every`` minutes, on SIGTERM / Ctrl-C and at
the end: docs/long_runs.md).
"""

from __future__ import annotations

import argparse
import json
import os

import gymnasium as gym
import numpy as np
import torch
import torch.nn as nn
from tqdm import tqdm

import parl
from parl.utils import Checkpointer, ReplayMemory, RunLog, add_run_args

# the networks below are torch.nn modules: pin the torch backend (with paddle also installed, PARL's
# default would be paddle)
parl.set_backend("torch")

GAMMA, TAU, LR, BATCH_SIZE, HIDDEN = 0.99, 0.005, 1e-3, 256, 64
EVAL_EPISODES = 10


class ActorCritic(parl.Model):
    """``policy(obs)`` -> (mean, log_std) float32 [B, act_dim]; ``value(obs, act)`` -> (Q1, Q2) [B, 1]."""

    def __init__(self, obs_dim: int, act_dim: int):
        super().__init__()

        def net(inp: int, out: int) -> nn.Sequential:
            return nn.Sequential(nn.Linear(inp, HIDDEN), nn.ReLU(), nn.Linear(HIDDEN, HIDDEN), nn.ReLU(),
                                 nn.Linear(HIDDEN, out))

        self.actor, self.q1, self.q2 = net(obs_dim, 2 * act_dim), net(obs_dim + act_dim, 1), net(obs_dim + act_dim, 1)

    def policy(self, obs):
        mean, log_std = self.actor(obs).chunk(2, dim=-1)
        return mean, log_std.clamp(-20.0, 2.0)

    def value(self, obs, action):
        obs_action = torch.cat([obs, action], dim=-1)
        return self.q1(obs_action), self.q2(obs_action)

    def get_actor_params(self):
        return list(self.actor.parameters())

    def get_critic_params(self):
        return list(self.q1.parameters()) + list(self.q2.parameters())


def evaluate(alg: parl.Algorithm, env_id: str, seed: int, scale: float) -> float:
    """Mean return of EVAL_EPISODES deterministic episodes (env i seeded seed + 10000 + i)."""
    envs = gym.make_vec(env_id, num_envs=EVAL_EPISODES, vectorization_mode="sync")
    obs, _ = envs.reset(seed=seed + 10_000)
    total, finished = np.zeros(EVAL_EPISODES), np.zeros(EVAL_EPISODES, dtype=bool)
    while not finished.all():
        with torch.no_grad():
            act = alg.predict(torch.as_tensor(obs, dtype=torch.float32)).cpu().numpy()
        obs, rew, term, trunc, _ = envs.step(act * scale)
        total += rew * ~finished
        finished |= term | trunc
    envs.close()
    return float(total.mean())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--env", default="Pendulum-v1")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--device", default=None,
                        help="torch device of the learner: cpu, cuda, cuda:1  [default: cuda when available]")
    parser.add_argument("--logdir", default=None, help="default: runs/oac/<env>-seed<seed>")
    parser.add_argument("--total-steps", type=int, default=20_000)
    parser.add_argument("--learning-starts", type=int, default=1_000)
    parser.add_argument("--eval-every", type=int, default=1_000)
    parser.add_argument("--target-return", type=float, default=-200.0)
    parser.add_argument("--alpha", type=float, default=0.2, help="entropy temperature (fixed, as PARL's OAC)")
    parser.add_argument("--beta", type=float, default=4.66, help="optimism (the paper's beta_UB)")
    parser.add_argument("--delta", type=float, default=23.53, help="KL size of the exploration shift")
    parser.add_argument("--no-progress", action="store_true")
    add_run_args(parser)
    args = parser.parse_args()
    logdir = args.resume or args.logdir or os.path.join("runs", "oac", f"{args.env}-seed{args.seed}")
    run = RunLog(logdir)
    torch.set_num_threads(1)
    torch.manual_seed(args.seed)
    rng = np.random.default_rng(args.seed)

    env = gym.make(args.env)
    obs_dim, act_dim = env.observation_space.shape[0], env.action_space.shape[0]
    scale = float(env.action_space.high[0])
    alg = parl.algorithms.OAC(ActorCritic(obs_dim, act_dim), gamma=GAMMA, tau=TAU, alpha=args.alpha, beta=args.beta,
                              delta=args.delta, actor_lr=LR, critic_lr=LR, device=args.device)
    memory = ReplayMemory(args.total_steps, obs_dim, act_dim, seed=args.seed)

    ckpt = Checkpointer(run, every_min=args.checkpoint_every, resume=args.resume is not None, config=vars(args))
    ckpt.register(alg=alg, memory=memory, rng=rng, env=env)
    c = ckpt.track(obs=env.reset(seed=args.seed)[0], episode_return=0.0, eval_mean=float("-inf"), reached=False,
                   evals=[], last10=[], step=0)
    ckpt.start()  # (a resumed run continues from its checkpoint: counters, env, memory, networks, RNGs)
    progress = tqdm(total=args.total_steps, initial=c.step, disable=args.no_progress, unit="step")

    while c.step < args.total_steps and not c.reached:
        c.step += 1
        step = c.step
        if step <= args.learning_starts:
            act = rng.uniform(-1.0, 1.0, act_dim).astype(np.float32)
        else:
            act = alg.get_optimistic_exploration_action(torch.as_tensor(c.obs, dtype=torch.float32)).cpu().numpy()
        next_obs, rew, term, trunc, _ = env.step(act * scale)
        memory.append(c.obs, act, rew, next_obs, term)
        c.episode_return += rew
        c.obs = next_obs
        if term or trunc:
            run.scalar("train/episode_return", c.episode_return, step)
            c.last10 = (c.last10 + [c.episode_return])[-10:]
            c.obs, _ = env.reset()
            c.episode_return = 0.0
        if step > args.learning_starts:
            critic_loss, actor_loss = alg.learn(*(torch.from_numpy(x) for x in memory.sample_batch(BATCH_SIZE)))
        progress.update(1)
        if step % args.eval_every == 0 or step == args.total_steps:
            if step > args.learning_starts:
                run.scalar("train/critic_loss", critic_loss.item(), step)
                run.scalar("train/actor_loss", actor_loss.item(), step)
            c.eval_mean = evaluate(alg, args.env, args.seed, scale)
            run.scalar("eval/return_mean", c.eval_mean, step)
            run.row({"env_steps": step, "wall_s": round(run.elapsed(), 3), "eval_return_mean": round(c.eval_mean, 3),
                     "train_return_mean": round(float(np.mean(c.last10)), 3) if c.last10 else "nan"})
            c.evals.append([step, c.eval_mean])
            progress.set_postfix(eval=f"{c.eval_mean:.1f}")
            c.reached = step > args.learning_starts and c.eval_mean >= args.target_return
        ckpt.maybe_save(step)
    progress.close()
    run.close()
    result = run.write_summary({
        "device": str(alg.device), "env": args.env, "seed": args.seed, "eval_return_mean": c.eval_mean,
        "eval_episodes": EVAL_EPISODES, "env_steps": c.step, "wall_s": round(run.elapsed(), 3),
        "target_return": args.target_return, "reached": c.reached, "beta": args.beta, "delta": args.delta,
        "evals": c.evals})
    ckpt.finish(c.step)
    print(json.dumps(result))


if __name__ == "__main__":
    main()
