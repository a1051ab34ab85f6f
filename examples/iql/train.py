"""IQL on gymnasium Pendulum-v1 with parl.algorithms.IQL (Kostrikov et al. 2021, "Offline Reinforcement
Learning with Implicit Q-Learning"), from a dataset this script collects itself.

Algorithm box:

    collect: train SAC online for `--collect-steps` env steps (uniform random for the first
             `--learning-starts`), storing every transition: the dataset of a partly trained policy
             (its mean episode return is the reference)
    learn offline, for each gradient step on a minibatch of the dataset:
        V  <- expectile regression (tau) of min(Q1', Q2')(s, a) - V(s)
        Q  <- MSE to r + gamma * (1 - terminated) * V(s')
        pi <- advantage-weighted behaviour cloning: -exp(beta * (Q' - V)) * log pi(a | s)
        Q' <- Polyak average of Q
        every `--eval-every` steps: evaluate 10 deterministic episodes (the policy's mean)
    stop as soon as the evaluation mean reaches --target-return (default: the dataset's mean return)

Usage::

    python examples/iql/train.py --seed 0 --logdir runs/iql/seed0
    # killed, pre-empted or stopped with Ctrl-C: continue exactly where the last checkpoint left off
    python examples/iql/train.py --seed 0 --logdir runs/iql/seed0 --resume runs/iql/seed0

Writes ``<logdir>/summary.json`` (and ``dataset.npz``, the collected ``ReplayMemory``), tensorboard scalars and
``<logdir>/curve.csv`` (a row per evaluation: ``gradient_steps``, ``wall_s`` (collection included),
``eval_return_mean``, ``dataset_return_mean``), and ``<logdir>/checkpoint.npz`` during the offline phase (every
``--checkpoint-every`` minutes, on SIGTERM / Ctrl-C and at the end: docs/long_runs.md; a run killed while it
collects has no checkpoint yet and starts again without ``--resume``).
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

GAMMA, LR, BATCH_SIZE, HIDDEN = 0.99, 3e-4, 256, 64
EVAL_EPISODES = 10


def net(inp: int, out: int) -> nn.Sequential:
    return nn.Sequential(nn.Linear(inp, HIDDEN), nn.ReLU(), nn.Linear(HIDDEN, HIDDEN), nn.ReLU(),
                         nn.Linear(HIDDEN, out))


class IQLModel(parl.Model):
    """Gaussian policy with a state-independent std, twin critics ``qvalue`` and a state value ``value``.

    ``policy(obs)`` -> (mean in [-1, 1], log_std), each float32 [B, act_dim]; ``qvalue(obs, act)`` ->
    (Q1, Q2), each [B, 1]; ``value(obs)`` -> [B, 1].
    """

    def __init__(self, obs_dim: int, act_dim: int):
        super().__init__()
        self.actor, self.log_std = net(obs_dim, act_dim), nn.Parameter(torch.zeros(act_dim))
        self.q1, self.q2, self.v = net(obs_dim + act_dim, 1), net(obs_dim + act_dim, 1), net(obs_dim, 1)

    def policy(self, obs):
        mean = torch.tanh(self.actor(obs))
        return mean, self.log_std.clamp(-5.0, 0.0).expand_as(mean)

    def qvalue(self, obs, action):
        obs_action = torch.cat([obs, action], dim=-1)
        return self.q1(obs_action), self.q2(obs_action)

    def value(self, obs):
        return self.v(obs)

    def get_actor_params(self):
        return list(self.actor.parameters()) + [self.log_std]

    def get_critic_params(self):
        return list(self.q1.parameters()) + list(self.q2.parameters())

    def get_value_params(self):
        return list(self.v.parameters())


class SACModel(parl.Model):
    """The data collector's actor-critic (SAC's contract)."""

    def __init__(self, obs_dim: int, act_dim: int):
        super().__init__()
        self.actor, self.q1, self.q2 = net(obs_dim, 2 * act_dim), net(obs_dim + act_dim, 1), net(obs_dim + act_dim, 1)

    def policy(self, obs):
        mean, log_std = self.actor(obs).chunk(2, dim=-1)
        return mean, log_std.clamp(-20.0, 2.0)

    def value(self, obs, action):
        return IQLModel.qvalue(self, obs, action)

    def get_actor_params(self):
        return list(self.actor.parameters())

    def get_critic_params(self):
        return list(self.q1.parameters()) + list(self.q2.parameters())


def collect(env_id: str, seed: int, steps: int, learning_starts: int) -> tuple[ReplayMemory, float]:
    """Every transition of an online SAC run of ``steps`` env steps, and its mean episode return."""
    env = gym.make(env_id)
    obs_dim, act_dim = env.observation_space.shape[0], env.action_space.shape[0]
    scale = float(env.action_space.high[0])
    sac = parl.algorithms.SAC(SACModel(obs_dim, act_dim), gamma=GAMMA, tau=0.005, actor_lr=1e-3, critic_lr=1e-3,
                              with_automatic_entropy_tuning=True)
    memory, rng = ReplayMemory(steps, obs_dim, act_dim, seed=seed), np.random.default_rng(seed)
    obs, _ = env.reset(seed=seed)
    episode_return, returns = 0.0, []
    for step in tqdm(range(1, steps + 1), desc="collect (SAC)", disable=None, leave=False):
        if step <= learning_starts:
            act = rng.uniform(-1.0, 1.0, act_dim).astype(np.float32)
        else:
            with torch.no_grad():
                act = sac.sample(torch.as_tensor(obs, dtype=torch.float32))[0].cpu().numpy()
        next_obs, rew, term, trunc, _ = env.step(act * scale)
        memory.append(obs, act, rew, next_obs, term)
        episode_return, obs = episode_return + rew, next_obs
        if term or trunc:
            returns.append(episode_return)
            (obs, _), episode_return = env.reset(), 0.0
        if step > learning_starts:
            sac.learn(*(torch.from_numpy(x) for x in memory.sample_batch(BATCH_SIZE)))
    return memory, float(np.mean(returns))


def evaluate(alg: parl.Algorithm, env_id: str, seed: int) -> float:
    """Mean return of EVAL_EPISODES deterministic episodes (env i seeded seed + 10000 + i)."""
    envs = gym.make_vec(env_id, num_envs=EVAL_EPISODES, vectorization_mode="sync")
    scale = float(envs.single_action_space.high[0])
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
    parser.add_argument("--logdir", default=None, help="default: runs/iql/<env>-seed<seed>")
    parser.add_argument("--collect-steps", type=int, default=6_000, help="env steps of the SAC data collector")
    parser.add_argument("--learning-starts", type=int, default=1_000)
    parser.add_argument("--gradient-steps", type=int, default=20_000)
    parser.add_argument("--eval-every", type=int, default=1_000)
    parser.add_argument("--expectile", type=float, default=0.7, help="IQL's tau")
    parser.add_argument("--beta", type=float, default=3.0, help="inverse temperature of the advantage weights")
    parser.add_argument("--target-return", type=float, default=None, help="default: the dataset's mean return")
    parser.add_argument("--no-progress", action="store_true")
    add_run_args(parser)
    args = parser.parse_args()
    logdir = args.resume or args.logdir or os.path.join("runs", "iql", f"{args.env}-seed{args.seed}")
    run = RunLog(logdir)
    torch.set_num_threads(1)
    torch.manual_seed(args.seed)

    if args.resume:  # (the collected memory, the networks and the counters come from the checkpoint)
        spaces = gym.make(args.env)
        memory = ReplayMemory(args.collect_steps, spaces.observation_space.shape[0], spaces.action_space.shape[0],
                              seed=args.seed)
        spaces.close()
        dataset_return = None
    else:
        memory, dataset_return = collect(args.env, args.seed, args.collect_steps, args.learning_starts)
        memory.save(os.path.join(logdir, "dataset.npz"))
        run.scalar("dataset/return_mean", dataset_return, 0)
    collect_s = run.elapsed()

    iql = parl.algorithms.IQL(IQLModel(memory.obs_dim, memory.act_dim), max_steps=args.gradient_steps, lr=LR,
                              tau=args.expectile, beta=args.beta, discount=GAMMA, device=args.device)
    ckpt = Checkpointer(run, every_min=args.checkpoint_every, resume=args.resume is not None, config=vars(args))
    ckpt.register(alg=iql, memory=memory)
    c = ckpt.track(step=0, eval_mean=float("-inf"), reached=False, evals=[], dataset_return=dataset_return,
                   collect_s=collect_s)
    ckpt.start()  # (a resumed run continues from its checkpoint: counters, networks, optimizers, sampling, RNGs)
    target = c.dataset_return if args.target_return is None else args.target_return
    progress = tqdm(total=args.gradient_steps, initial=c.step, disable=args.no_progress, unit="grad")
    while c.step < args.gradient_steps and not c.reached:
        c.step += 1
        iql.learn(*(torch.from_numpy(x) for x in memory.sample_batch(BATCH_SIZE)))
        progress.update(1)
        if c.step % args.eval_every == 0 or c.step == args.gradient_steps:
            for key, value in iql.last_info.items():
                run.scalar(key, value, c.step)
            c.eval_mean = evaluate(iql, args.env, args.seed)
            run.scalar("eval/return_mean", c.eval_mean, c.step)
            run.row({"gradient_steps": c.step, "wall_s": round(run.elapsed(), 3),
                     "eval_return_mean": round(c.eval_mean, 3), "dataset_return_mean": round(c.dataset_return, 3)})
            c.evals.append([c.step, c.eval_mean])
            progress.set_postfix(eval=f"{c.eval_mean:.1f}", dataset=f"{c.dataset_return:.1f}")
            c.reached = c.eval_mean >= target
        ckpt.maybe_save(c.step)
    progress.close()
    run.close()
    result = run.write_summary({
        "device": str(iql.device), "env": args.env, "seed": args.seed, "eval_return_mean": c.eval_mean,
        "eval_episodes": EVAL_EPISODES, "env_steps": args.collect_steps, "gradient_steps": c.step,
        "dataset_size": memory.size(), "dataset_return_mean": c.dataset_return, "target_return": target,
        "collect_s": round(c.collect_s, 3), "wall_s": round(run.elapsed(), 3), "reached": c.reached,
        "evals": c.evals})
    ckpt.finish(c.step)
    print(json.dumps(result))


if __name__ == "__main__":
    main()
