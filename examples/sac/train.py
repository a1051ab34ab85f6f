"""SAC on gymnasium Pendulum-v1 with parl.algorithms.SAC (automatic entropy tuning by default).

Algorithm box (Haarnoja et al. 2018, "Soft Actor-Critic Algorithms and Applications"):

    for each env step:
        a ~ pi(.|s) (uniform random during the first `--learning-starts` steps), rescaled to the env's bounds
        store (s, a, r, s', terminated) in a ReplayMemory (truncation is not termination)
        SAC.learn(batch): twin-critic soft Bellman step, actor step, temperature step, Polyak target update
        every `--eval-every` steps: evaluate 10 deterministic episodes (tanh of the Gaussian mean)
    stop as soon as the evaluation mean reaches --target-return

Usage::

    python examples/sac/train.py --seed 0 --logdir runs/sac/seed0
    python examples/sac/train.py --backend paddle --seed 0 --logdir runs/sac/paddle-seed0
    # HalfCheetah-v5 with rl-baselines3-zoo's MuJoCo settings (needs gymnasium[mujoco]), no early stop:
    python examples/sac/train.py --env HalfCheetah-v5 --total-steps 100000 --learning-starts 10000 \
        --eval-every 50000 --target-return 1e9 --hidden-sizes 256 256 --actor-lr 3e-4 --critic-lr 3e-4

    # killed, pre-empted or stopped with Ctrl-C: continue exactly where the last checkpoint left off
    python examples/sac/train.py --seed 0 --logdir runs/sac/seed0 --resume runs/sac/seed0

Writes ``<logdir>/summary.json``, tensorboard scalars, ``<logdir>/curve.csv`` (a row per evaluation:
``env_steps``, ``wall_s``, ``eval_return_mean``, ``train_return_mean`` = mean of the last 10 training
episodes), ``<logdir>/checkpoint.npz`` (every ``--checkpoint-every`` minutes, on SIGTERM / Ctrl-C and at the
end: docs/long_runs.md); ``--save-memory PATH`` also saves the replay
memory (``ReplayMemory.save``), which the CQL example uses as its offline dataset.
"""

from __future__ import annotations

import argparse
import functools
import gc
import importlib
import json
import os
import time

import gymnasium as gym
import numpy as np
from tqdm import tqdm

import parl
from parl.utils import Checkpointer, ReplayMemory, RunLog, add_run_args

GAMMA = 0.99
TAU = 0.005
ACTOR_LR = 1e-3
CRITIC_LR = 1e-3
BATCH_SIZE = 256
MEMORY_SIZE = 1_000_000
HIDDEN = 64
EVAL_EPISODES = 10
LOG_STD_MIN, LOG_STD_MAX = -20.0, 2.0


@functools.cache
def define_model(backend: str = "torch") -> type:
    """``SACModel`` on ``backend`` (``"torch"`` or ``"paddle"``), which it selects (before parl.algorithms)."""
    parl.set_backend(backend)
    nets = importlib.import_module(f"parl_algorithms.{backend}.nets")
    ops = importlib.import_module(f"parl_algorithms.{backend}.ops")

    class SACModel(parl.Model):
        """Gaussian actor and twin Q critics (Linear-ReLU-...-Linear MLPs with ``hidden`` widths).

        ``policy(obs)`` -> (mean, log_std), each float32 [B, act_dim]; ``value(obs, action)`` -> (Q1, Q2),
        each float32 [B, 1]; actions are in [-1, 1].
        """

        def __init__(self, obs_dim: int, act_dim: int, hidden: tuple[int, ...] = (HIDDEN, HIDDEN)):
            super().__init__()
            self.actor = nets.MLP([obs_dim, *hidden, 2 * act_dim])
            self.q1 = nets.MLP([obs_dim + act_dim, *hidden, 1])
            self.q2 = nets.MLP([obs_dim + act_dim, *hidden, 1])

        def policy(self, obs):
            mean, log_std = self.actor(obs).chunk(2, -1)
            return mean, log_std.clip(LOG_STD_MIN, LOG_STD_MAX)

        def value(self, obs, action):
            x = ops.concat([obs, action])
            return self.q1(x), self.q2(x)

        def get_actor_params(self):
            return self.actor.parameters()

        def get_critic_params(self):
            return list(self.q1.parameters()) + list(self.q2.parameters())

    class BatchedSACModel(SACModel):
        """``SACModel`` (same functions, parameters and initial weights) with the twin critics evaluated together:
        one ``nets.BatchedMLP`` (member 0 Q1, member 1 Q2), a batched matmul per layer for both. torch only: on
        paddle's CPU build the backward of ``bmm`` is slower than that of two linear layers (benchmarks/README.md,
        2026-11-26 afternoon).
        """

        def __init__(self, obs_dim: int, act_dim: int, hidden: tuple[int, ...] = (HIDDEN, HIDDEN)):
            super().__init__(obs_dim, act_dim, hidden)
            self.q = nets.BatchedMLP.stack([self.q1, self.q2])
            del self.q1, self.q2  # now copied into q

        def value(self, obs, action):
            q1, q2 = self.q(ops.concat([obs, action]))
            return q1, q2

        def get_critic_params(self):
            return list(self.q.parameters())

    return BatchedSACModel if backend == "torch" else SACModel


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
    parser.add_argument("--logdir", default=None, help="default: runs/sac/<env>-seed<seed>")
    parser.add_argument("--total-steps", type=int, default=20_000)
    parser.add_argument("--learning-starts", type=int, default=1_000)
    parser.add_argument("--eval-every", type=int, default=1_000)
    parser.add_argument("--target-return", type=float, default=-200.0)
    parser.add_argument("--alpha", type=float, default=None, help="fixed temperature (default: tuned)")
    parser.add_argument("--gamma", type=float, default=GAMMA)
    parser.add_argument("--actor-lr", type=float, default=ACTOR_LR, help="also the temperature's learning rate")
    parser.add_argument("--critic-lr", type=float, default=CRITIC_LR)
    parser.add_argument("--batch-size", type=int, default=BATCH_SIZE)
    parser.add_argument("--buffer-size", type=int, default=MEMORY_SIZE, help="replay memory capacity")
    parser.add_argument("--hidden-sizes", type=int, nargs="+", default=[HIDDEN, HIDDEN],
                        help="hidden layer widths of the actor and of each critic")
    parser.add_argument("--save-memory", default=None, help="save the replay memory here (.npz) at the end")
    parser.add_argument("--no-progress", action="store_true")
    add_run_args(parser)
    args = parser.parse_args()
    logdir = args.resume or args.logdir or os.path.join("runs", "sac", f"{args.env}-seed{args.seed}")
    run = RunLog(logdir)
    ops = importlib.import_module(f"parl_algorithms.{args.backend}.ops")
    ops.seed(args.seed)
    rng = np.random.default_rng(args.seed)

    env = gym.make(args.env)
    obs_dim, act_dim = env.observation_space.shape[0], env.action_space.shape[0]
    action_scale = float(env.action_space.high[0])
    tuned = args.alpha is None
    model = define_model(args.backend)(obs_dim, act_dim, tuple(args.hidden_sizes))
    alg = parl.algorithms.SAC(model, gamma=args.gamma, tau=TAU, alpha=args.alpha, actor_lr=args.actor_lr,
                              critic_lr=args.critic_lr, with_automatic_entropy_tuning=tuned, device=args.device)
    memory = ReplayMemory(args.buffer_size, obs_dim, act_dim, seed=args.seed)
    # the objects built so far (torch's and gymnasium's modules, the networks) live for the whole run: move them
    # out of the cyclic garbage collector's generations, whose full passes would rescan them (~0.1 s each)
    gc.freeze()

    ckpt = Checkpointer(run, every_min=args.checkpoint_every, resume=args.resume is not None, config=vars(args))
    ckpt.register(alg=alg, memory=memory, rng=rng, env=env)
    c = ckpt.track(obs=env.reset(seed=args.seed)[0], ep_return=0.0, eval_mean=float("-inf"), reached=False, step=0,
                   evals=[], last10=[])
    ckpt.start()  # (a resumed run continues from its checkpoint: counters, env, memory, networks, RNGs)
    bar = tqdm(total=args.total_steps, initial=c.step - c.step % args.eval_every, disable=args.no_progress,
               unit="step")

    def evaluate_and_log() -> None:
        c.eval_mean = evaluate(alg, args.env, args.seed, action_scale, ops)
        run.scalar("eval/return_mean", c.eval_mean, c.step)
        run.row({"env_steps": c.step, "wall_s": round(run.elapsed(), 3), "eval_return_mean": round(c.eval_mean, 3),
                 "train_return_mean": round(float(np.mean(c.last10)), 3) if c.last10 else "nan"})
        c.evals.append([c.step, c.eval_mean])
        c.reached = c.eval_mean >= args.target_return

    while c.step < args.total_steps and not c.reached:
        c.step += 1
        if c.step <= args.learning_starts:
            action = rng.uniform(-1.0, 1.0, act_dim).astype(np.float32)
        else:
            with ops.no_grad():
                action = alg.sample(ops.tensor(c.obs[None], "float32"))[0][0].cpu().numpy()
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
            alg.learn(*(ops.tensor(a) for a in memory.sample_batch(args.batch_size)))
        if c.step % args.eval_every == 0:
            bar.update(args.eval_every)
            for key, value in alg.last_info.items():
                run.scalar(key, value, c.step)
            if c.step > args.learning_starts:
                evaluate_and_log()
        ckpt.maybe_save(c.step)
    bar.close()
    if not c.reached and not (c.evals and c.evals[-1][0] == c.step):  # (an evaluation at this step is reused)
        evaluate_and_log()
    run.close()
    if args.save_memory:
        memory.save(args.save_memory)
    result = run.write_summary({
        "device": str(alg.device), "env": args.env, "backend": args.backend, "seed": args.seed,
        "eval_return_mean": c.eval_mean, "eval_episodes": EVAL_EPISODES, "env_steps": c.step,
        "wall_s": round(run.elapsed(), 3), "target_return": args.target_return, "reached": c.reached,
        "alpha": alg.alpha, "evals": c.evals, "cpu_s": round(time.process_time(), 3)})
    ckpt.finish(c.step)
    print(json.dumps(result))


if __name__ == "__main__":
    main()
