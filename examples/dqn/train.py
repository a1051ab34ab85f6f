"""DQN on gymnasium CartPole-v1 with parl.algorithms.DQN (DDQN with --double, a dueling network with --dueling).

Algorithm box (Mnih et al. 2015; van Hasselt et al. 2016 for --double; Wang et al. 2016 for --dueling):

    for each env step:
        act epsilon-greedily (epsilon decays linearly to its final value over the first part of training)
        store (s, a, r, s', terminated) in a ReplayMemory; reset on terminated or truncated
        every `train_freq` steps: `gradient_steps` DQN.learn(...) on uniform minibatches
        before each training phase: DQN.sync_target() (the target is fixed during a phase)
        when the recent training return is close to the target: evaluate 10 greedy episodes
    stop as soon as the evaluation mean reaches --target-return

The hyperparameters follow rl-baselines3-zoo's CartPole-v1 DQN, with a 64x64 network and 64 (not 128)
gradient steps per 256 env steps (see README).

Usage::

    python examples/dqn/train.py --seed 0 --logdir runs/dqn/seed0
    python examples/dqn/train.py --backend paddle --seed 0 --logdir runs/dqn/paddle-seed0

    # killed, pre-empted or stopped with Ctrl-C: continue exactly where the last checkpoint left off
    python examples/dqn/train.py --seed 0 --logdir runs/dqn/seed0 --resume runs/dqn/seed0

Writes ``<logdir>/summary.json``, tensorboard scalars and ``<logdir>/curve.csv`` (a row per training phase, every
TRAIN_FREQ env steps: ``env_steps``, ``wall_s``, ``train_return_mean`` = mean of the last 10 training episodes,
``eval_return_mean``, empty where that phase has no evaluation), and ``<logdir>/checkpoint.npz`` every
``--checkpoint-every`` minutes, on SIGTERM / Ctrl-C and at the end (see docs/long_runs.md).
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
LR = 2.3e-3
BATCH_SIZE = 64
MEMORY_SIZE = 100_000
LEARNING_STARTS = 1_000
TRAIN_FREQ = 256
GRADIENT_STEPS = 64  # rl-baselines3-zoo uses 128; 64 learns as fast here at half the compute
EXPLORATION_FRACTION = 0.16
FINAL_EPSILON = 0.04
EVAL_EPISODES = 10
EVAL_TRIGGER = 300.0  # evaluate once the mean of the last 5 training episodes reaches this


@functools.cache
def define_networks(backend: str = "torch") -> tuple[type, type]:
    """``(QNetwork, DuelingQNetwork)`` on ``backend`` (``"torch"`` or ``"paddle"``), which it selects."""
    parl.set_backend(backend)
    nn = importlib.import_module(f"{backend}.nn")
    nets = importlib.import_module(f"parl_algorithms.{backend}.nets")  # MLP: Linear-ReLU-...-Linear

    class QNetwork(parl.Model):
        """obs float32 [B, obs_dim] -> Q values float32 [B, num_actions]."""

        def __init__(self, obs_dim: int, num_actions: int, hidden: int = 64):
            super().__init__()
            self.net = nets.MLP([obs_dim, hidden, hidden, num_actions])

        def forward(self, obs):
            return self.net(obs)

    class DuelingQNetwork(parl.Model):
        """Dueling architecture (Wang et al. 2016): Q = V(s) + A(s, a) - mean_a A(s, a); contract of QNetwork."""

        def __init__(self, obs_dim: int, num_actions: int, hidden: int = 64):
            super().__init__()
            self.body = nn.Sequential(nn.Linear(obs_dim, hidden), nn.ReLU(), nn.Linear(hidden, hidden), nn.ReLU())
            self.value = nn.Linear(hidden, 1)
            self.advantage = nn.Linear(hidden, num_actions)

        def forward(self, obs):
            h = self.body(obs)
            adv = self.advantage(h)
            return self.value(h) + adv - adv.mean(-1, keepdim=True)

    return QNetwork, DuelingQNetwork


def evaluate(alg, env_id: str, seed: int, ops) -> float:
    """Mean return of EVAL_EPISODES greedy episodes, played in parallel (the first episode of each env)."""
    # gymnasium's native vectorised env where the env has one (CartPole), else a SyncVectorEnv
    mode = "vector_entry_point" if gym.spec(env_id).vector_entry_point else "sync"
    envs = gym.make_vec(env_id, num_envs=EVAL_EPISODES, vectorization_mode=mode)
    obs, _ = envs.reset(seed=seed + 10_000)
    returns, done = np.zeros(EVAL_EPISODES), np.zeros(EVAL_EPISODES, dtype=bool)
    with ops.no_grad():
        while not done.all():
            action = alg.predict(ops.tensor(obs.astype(np.float32))).argmax(1).cpu().numpy()
            obs, reward, terminated, truncated, _ = envs.step(action)
            returns += reward * ~done
            done |= terminated | truncated
    envs.close()
    return float(returns.mean())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--backend", choices=("torch", "paddle"), default="torch", help="deep-learning framework")
    parser.add_argument("--env", default="CartPole-v1")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--device", default=None,
                        help="device of the learner: cpu, cuda, cuda:1  [default: cuda when available]")
    parser.add_argument("--logdir", default=None, help="default: runs/dqn/<env>-seed<seed>")
    parser.add_argument("--total-steps", type=int, default=50_000)
    parser.add_argument("--target-return", type=float, default=475.0)
    parser.add_argument("--double", action="store_true", help="Double DQN (parl.algorithms.DDQN)")
    parser.add_argument("--dueling", action="store_true", help="dueling Q network (a Model change)")
    parser.add_argument("--no-progress", action="store_true")
    add_run_args(parser)
    args = parser.parse_args()
    logdir = args.resume or args.logdir or os.path.join("runs", "dqn", f"{args.env}-seed{args.seed}")
    run = RunLog(logdir)
    ops = importlib.import_module(f"parl_algorithms.{args.backend}.ops")  # numpy <-> tensors, no-grad, seeding
    ops.seed(args.seed)
    rng = np.random.default_rng(args.seed)

    env = gym.make(args.env)
    obs_dim, num_actions = env.observation_space.shape[0], int(env.action_space.n)
    q_network, dueling_q_network = define_networks(args.backend)  # selects the backend: before parl.algorithms
    algo_cls = parl.algorithms.DDQN if args.double else parl.algorithms.DQN
    network = dueling_q_network if args.dueling else q_network
    alg = algo_cls(network(obs_dim, num_actions), gamma=GAMMA, lr=LR, loss_type="huber", max_grad_norm=10.0,
                   device=args.device)
    memory = ReplayMemory(MEMORY_SIZE, obs_dim, 0, seed=args.seed)

    ckpt = Checkpointer(run, every_min=args.checkpoint_every, resume=args.resume is not None, config=vars(args))
    ckpt.register(alg=alg, memory=memory, rng=rng, env=env)
    c = ckpt.track(obs=env.reset(seed=args.seed)[0], ep_return=0.0, recent=[], last10=[], grad_steps=0,
                   eval_mean=float("-inf"), reached=False, step=0)
    ckpt.start()  # (a resumed run continues from its checkpoint: counters, env, memory, networks, RNGs)
    decay_steps = EXPLORATION_FRACTION * args.total_steps
    bar = tqdm(total=args.total_steps, initial=c.step - c.step % TRAIN_FREQ, disable=args.no_progress, unit="step")

    def log_curve(eval_return: float | str = "") -> None:
        run.row({"env_steps": c.step, "wall_s": round(run.elapsed(), 3),
                 "train_return_mean": round(float(np.mean(c.last10)), 3) if c.last10 else "nan",
                 "eval_return_mean": eval_return if eval_return == "" else round(eval_return, 3)})

    while c.step < args.total_steps and not c.reached:
        c.step += 1
        epsilon = max(FINAL_EPSILON, 1.0 - (1.0 - FINAL_EPSILON) * c.step / decay_steps)
        if rng.random() < epsilon:
            action = int(rng.integers(num_actions))
        else:
            with ops.no_grad():
                action = int(alg.predict(ops.tensor(c.obs[None])).argmax())
        next_obs, reward, terminated, truncated, _ = env.step(action)
        memory.append(c.obs, action, reward, next_obs, terminated)
        c.ep_return += reward
        c.obs = next_obs
        if terminated or truncated:
            c.recent = (c.recent + [c.ep_return])[-5:]
            c.last10 = (c.last10 + [c.ep_return])[-10:]
            run.scalar("train/episode_return", c.ep_return, c.step)
            c.obs, _ = env.reset()
            c.ep_return = 0.0

        if c.step >= LEARNING_STARTS and c.step % TRAIN_FREQ == 0:
            alg.sync_target()
            # the memory does not change during a training phase: draw all its minibatches at once (the same
            # uniform indices, from the same generator, as GRADIENT_STEPS separate draws) and slice them
            phase = [ops.tensor(a.reshape(GRADIENT_STEPS, BATCH_SIZE, *a.shape[1:]))
                     for a in memory.sample_batch(GRADIENT_STEPS * BATCH_SIZE)]
            for i in range(GRADIENT_STEPS):
                loss = alg.learn(*(a[i] for a in phase))
                c.grad_steps += 1
            run.scalar("train/loss", loss, c.step)
            run.scalar("train/q_mean", alg.last_info["train/q_mean"], c.step)
            run.scalar("train/epsilon", epsilon, c.step)
            bar.update(TRAIN_FREQ)
            bar.set_postfix(train_return=f"{np.mean(c.recent) if c.recent else 0:.1f}", eval=f"{c.eval_mean:.1f}")
            if not (len(c.recent) == 5 and np.mean(c.recent) >= EVAL_TRIGGER):
                log_curve()
            else:
                c.eval_mean = evaluate(alg, args.env, args.seed, ops)
                run.scalar("eval/return_mean", c.eval_mean, c.step)
                log_curve(c.eval_mean)
                c.reached = c.eval_mean >= args.target_return
        ckpt.maybe_save(c.step)
    bar.close()
    if not c.reached:
        c.eval_mean = evaluate(alg, args.env, args.seed, ops)
        run.scalar("eval/return_mean", c.eval_mean, c.step)
        log_curve(c.eval_mean)
        c.reached = c.eval_mean >= args.target_return
    run.close()
    result = run.write_summary({
        "device": str(alg.device), "env": args.env, "backend": args.backend, "algorithm": algo_cls.__name__,
        "dueling": args.dueling, "seed": args.seed, "eval_return_mean": c.eval_mean, "eval_episodes": EVAL_EPISODES,
        "env_steps": c.step, "wall_s": round(run.elapsed(), 3), "target_return": args.target_return,
        "reached": c.reached, "gradient_steps": c.grad_steps})
    ckpt.finish(c.step)
    print(json.dumps(result))


if __name__ == "__main__":
    main()
