"""Offline CQL on gymnasium Pendulum-v1 with parl.algorithms.CQL, from a dataset collected by a partly
trained SAC agent (parl.algorithms.SAC) and saved with parl.utils.ReplayMemory.

Algorithm box (Kumar et al. 2020, "Conservative Q-Learning for Offline Reinforcement Learning"):

    1. collect: SAC interacts with the env for `--collect-steps` steps (random actions for the first
       `--learning-starts`); every transition goes into a ReplayMemory saved to <logdir>/dataset.npz.
       The dataset's mean episode return is the bar to clear.
    2. offline: a fresh CQL agent loads the dataset (ReplayMemory.load) and never touches the env while
       learning: for each gradient step, CQL.learn(batch) = SAC losses + the CQL(H) penalty
       (behaviour cloning for the actor during the first `--policy-eval-start` steps)
       every `--eval-every` gradient steps: evaluate 10 deterministic episodes
    stop as soon as the evaluation mean reaches the dataset's mean return (or --target-return)

Usage::

    python examples/cql/train.py --seed 0 --logdir runs/cql/seed0
    python examples/cql/train.py --backend paddle --seed 0 --logdir runs/cql/paddle-seed0
    # killed, pre-empted or stopped with Ctrl-C: continue exactly where the last checkpoint left off
    python examples/cql/train.py --seed 0 --logdir runs/cql/seed0 --resume runs/cql/seed0

Writes ``<logdir>/dataset.npz``, ``<logdir>/summary.json`` (with ``dataset_return_mean``), tensorboard scalars and
``<logdir>/curve.csv`` (a row per evaluation: ``gradient_steps``, ``wall_s`` (collection included),
``eval_return_mean``, ``dataset_return_mean``), and ``<logdir>/checkpoint.npz`` during the offline phase (every
``--checkpoint-every`` minutes, on SIGTERM / Ctrl-C and at the end: docs/long_runs.md; a run killed while it
collects has no checkpoint yet and starts again without ``--resume``).
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

GAMMA = 0.99
TAU = 0.005
LR = 1e-3
BATCH_SIZE = 256
HIDDEN = 64
EVAL_EPISODES = 10


@functools.cache
def define_model(backend: str = "torch") -> type:
    """``ActorCriticModel`` on ``backend`` (``"torch"`` or ``"paddle"``), which it selects (before parl.algorithms)."""
    parl.set_backend(backend)
    nets = importlib.import_module(f"parl_algorithms.{backend}.nets")
    ops = importlib.import_module(f"parl_algorithms.{backend}.ops")

    class ActorCriticModel(parl.Model):
        """Gaussian actor and twin Q critics (the SAC / CQL contract; Linear-ReLU-Linear-ReLU-Linear MLPs).

        ``policy(obs)`` -> (mean, log_std), each float32 [B, act_dim]; ``value(obs, action)`` -> (Q1, Q2),
        each float32 [B, 1]; actions are in [-1, 1].
        """

        def __init__(self, obs_dim: int, act_dim: int):
            super().__init__()
            self.actor = nets.MLP([obs_dim, HIDDEN, HIDDEN, 2 * act_dim])
            self.q1 = nets.MLP([obs_dim + act_dim, HIDDEN, HIDDEN, 1])
            self.q2 = nets.MLP([obs_dim + act_dim, HIDDEN, HIDDEN, 1])

        def policy(self, obs):
            mean, log_std = self.actor(obs).chunk(2, -1)
            return mean, log_std.clip(-20.0, 2.0)

        def value(self, obs, action):
            x = ops.concat([obs, action])
            return self.q1(x), self.q2(x)

        def get_actor_params(self):
            return self.actor.parameters()

        def get_critic_params(self):
            return list(self.q1.parameters()) + list(self.q2.parameters())

    return ActorCriticModel


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


def collect(env_id: str, seed: int, steps: int, learning_starts: int, path: str, backend: str, ops) -> float:
    """Train SAC online for `steps` env steps, save every transition to `path`; return the mean episode return."""
    env = gym.make(env_id)
    obs_dim, act_dim = env.observation_space.shape[0], env.action_space.shape[0]
    action_scale = float(env.action_space.high[0])
    model = define_model(backend)(obs_dim, act_dim)  # selects the backend first
    sac = parl.algorithms.SAC(model, gamma=GAMMA, tau=TAU, actor_lr=LR, critic_lr=LR,
                              with_automatic_entropy_tuning=True)
    memory = ReplayMemory(steps, obs_dim, act_dim, seed=seed)
    rng = np.random.default_rng(seed)
    obs, _ = env.reset(seed=seed)
    ep_return, returns = 0.0, []
    for step in tqdm(range(1, steps + 1), desc="collect (SAC)", disable=None, leave=False):
        if step <= learning_starts:
            action = rng.uniform(-1.0, 1.0, act_dim).astype(np.float32)
        else:
            with ops.no_grad():
                action = sac.sample(ops.tensor(obs[None], "float32"))[0][0].cpu().numpy()
        next_obs, reward, terminated, truncated, _ = env.step(action * action_scale)
        memory.append(obs, action, reward, next_obs, terminated)
        ep_return += reward
        obs = next_obs
        if terminated or truncated:
            returns.append(ep_return)
            obs, _ = env.reset()
            ep_return = 0.0
        if step > learning_starts:
            batch = memory.sample_batch(BATCH_SIZE)
            sac.learn(*(ops.tensor(x) for x in batch))
    memory.save(path)
    return float(np.mean(returns))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--backend", choices=("torch", "paddle"), default="torch", help="deep-learning framework")
    parser.add_argument("--env", default="Pendulum-v1")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--device", default=None,
                        help="device of the learner: cpu, cuda, cuda:1  [default: cuda when available]")
    parser.add_argument("--logdir", default=None, help="default: runs/cql/<env>-seed<seed>")
    parser.add_argument("--collect-steps", type=int, default=6_000, help="env steps of the SAC data collector")
    parser.add_argument("--learning-starts", type=int, default=1_000)
    parser.add_argument("--dataset", default=None, help="use this saved ReplayMemory (.npz) instead of collecting")
    parser.add_argument("--dataset-return", type=float, default=None, help="mean return of --dataset")
    parser.add_argument("--gradient-steps", type=int, default=50_000)
    parser.add_argument("--policy-eval-start", type=int, default=1_000)
    parser.add_argument("--eval-every", type=int, default=1_000)
    parser.add_argument("--target-return", type=float, default=None, help="default: the dataset's mean return")
    parser.add_argument("--no-progress", action="store_true")
    add_run_args(parser)
    args = parser.parse_args()
    logdir = args.resume or args.logdir or os.path.join("runs", "cql", f"{args.env}-seed{args.seed}")
    run = RunLog(logdir)
    ops = importlib.import_module(f"parl_algorithms.{args.backend}.ops")
    ops.seed(args.seed)

    env = gym.make(args.env)
    obs_dim, act_dim = env.observation_space.shape[0], env.action_space.shape[0]
    action_scale = float(env.action_space.high[0])
    if args.dataset is None:
        dataset_path = os.path.join(logdir, "dataset.npz")
        dataset_return = None if args.resume else collect(args.env, args.seed, args.collect_steps,
                                                          args.learning_starts, dataset_path, args.backend, ops)
    else:
        if args.dataset_return is None:
            parser.error("--dataset needs --dataset-return (the mean episode return of the data)")
        dataset_path, dataset_return = args.dataset, args.dataset_return
    collect_s = run.elapsed()
    if not args.resume:
        run.scalar("dataset/return_mean", dataset_return, 0)

    memory = ReplayMemory(args.collect_steps if args.dataset is None else 1_000_000, obs_dim, act_dim, seed=args.seed)
    memory.load(dataset_path)
    model = define_model(args.backend)(obs_dim, act_dim)
    cql = parl.algorithms.CQL(model, gamma=GAMMA, tau=TAU, actor_lr=LR, critic_lr=LR,
                              policy_eval_start=args.policy_eval_start, with_automatic_entropy_tuning=True,
                              min_q_version=3, min_q_weight=5.0, device=args.device)
    ckpt = Checkpointer(run, every_min=args.checkpoint_every, resume=args.resume is not None, config=vars(args))
    ckpt.register(alg=cql, memory=memory)
    c = ckpt.track(step=0, eval_mean=float("-inf"), reached=False, dataset_return=dataset_return, collect_s=collect_s)
    ckpt.start()  # (a resumed run continues from its checkpoint: counters, networks, optimizers, sampling, RNGs)
    target = c.dataset_return if args.target_return is None else args.target_return
    bar = tqdm(total=args.gradient_steps, initial=c.step - c.step % args.eval_every, disable=args.no_progress,
               unit="grad")
    while c.step < args.gradient_steps and not c.reached:
        c.step += 1
        batch = memory.sample_batch(BATCH_SIZE)
        cql.learn(*(ops.tensor(x) for x in batch))
        if c.step % args.eval_every == 0:
            bar.update(args.eval_every)
            for key, value in cql.last_info.items():
                run.scalar(key, value, c.step)
            c.eval_mean = evaluate(cql, args.env, args.seed, action_scale, ops)
            run.scalar("eval/return_mean", c.eval_mean, c.step)
            run.row({"gradient_steps": c.step, "wall_s": round(run.elapsed(), 3),
                     "eval_return_mean": round(c.eval_mean, 3), "dataset_return_mean": round(c.dataset_return, 3)})
            bar.set_postfix(eval=f"{c.eval_mean:.1f}", dataset=f"{c.dataset_return:.1f}")
            c.reached = c.step > args.policy_eval_start and c.eval_mean >= target
        ckpt.maybe_save(c.step)
    bar.close()
    run.close()
    result = run.write_summary({
        "device": str(cql.device), "env": args.env, "backend": args.backend, "seed": args.seed,
        "eval_return_mean": c.eval_mean, "eval_episodes": EVAL_EPISODES,
        "env_steps": args.collect_steps if args.dataset is None else 0, "gradient_steps": c.step,
        "dataset_size": memory.size(), "dataset_return_mean": c.dataset_return, "target_return": target,
        "collect_s": round(c.collect_s, 3), "wall_s": round(run.elapsed(), 3), "reached": c.reached})
    ckpt.finish(c.step)
    print(json.dumps(result))


if __name__ == "__main__":
    main()
