"""A2C on gymnasium CartPole-v1 with parl.algorithms.A2C.

Algorithm box (Mnih et al. 2016, "Asynchronous Methods for Deep Reinforcement Learning", synchronous
variant; GAE advantages as in Schulman et al. 2016):

    for each update:
        collect T steps from N vector envs with the current policy
        advantages, returns = GAE(gamma, gae_lambda), bootstrapping truncated episodes from V(final obs);
        the envs reset a finished episode on the NEXT step, whose transition is masked out
        one A2C.learn(...) on the whole batch: -log pi(a|s) * A + vf_coeff * (V - R)^2 / 2 + entropy_coeff * H
        once the training return is close to the target: evaluate 10 greedy episodes
    stop as soon as the evaluation mean reaches --target-return

Usage::

    python examples/a2c/train.py --backend paddle --seed 0 --logdir runs/a2c/paddle-seed0
    python examples/a2c/train.py --seed 0 --logdir runs/a2c/seed0

Writes ``<logdir>/summary.json``, tensorboard scalars and ``<logdir>/curve.csv`` (a row every 10 updates and at
each evaluation: ``env_steps``, ``wall_s``, ``train_return_mean`` = mean of the last 10 training episodes,
``eval_return_mean``, empty where that row has no evaluation).
"""

from __future__ import annotations

import argparse
import functools
import importlib
import json
import os
import time

import gymnasium as gym
import numpy as np
from tqdm import tqdm

import parl
from parl.utils import CSVLogger, compute_gae, summary

CONFIG = dict(num_envs=16, n_steps=16, gamma=0.99, gae_lambda=0.95, lr=3e-3, vf_loss_coeff=0.5,
              entropy_coeff=-0.01, total_steps=500_000, target_return=475.0, eval_trigger=400.0, hidden=64)
EVAL_EPISODES = 10


@functools.cache
def define_model(backend: str = "torch") -> type:
    """``ActorCritic`` on ``backend`` (``"torch"`` or ``"paddle"``), which it selects (before parl.algorithms)."""
    parl.set_backend(backend)
    nets = importlib.import_module(f"parl_algorithms.{backend}.nets")

    def mlp(inp: int, out: int, hidden: int, out_gain: float):
        """Linear-Tanh-Linear-Tanh-Linear, orthogonal init (gain sqrt(2), the last layer ``out_gain``) and zero
        biases, as SB3 initialises its policies."""
        return nets.orthogonal_init_(nets.MLP([inp, hidden, hidden, out], activation="tanh"), np.sqrt(2), out_gain)

    class ActorCritic(parl.Model):
        """Separate actor and critic MLPs: ``policy(obs)`` -> logits float32 [B, num_actions];
        ``value(obs)`` -> float32 [B, 1]."""

        def __init__(self, obs_dim: int, num_actions: int, hidden: int):
            super().__init__()
            self.actor = mlp(obs_dim, num_actions, hidden, 0.01)
            self.critic = mlp(obs_dim, 1, hidden, 1.0)

        def policy(self, obs):
            return self.actor(obs)

        def value(self, obs):
            return self.critic(obs)

    return ActorCritic


def make_envs(env_id: str, num_envs: int) -> gym.vector.VectorEnv:
    """gymnasium's native vectorised env where the env has one (CartPole: numpy over all envs at once),
    else a SyncVectorEnv; both reset a finished env on the NEXT step (reward 0, action ignored)."""
    mode = "vector_entry_point" if gym.spec(env_id).vector_entry_point else "sync"
    return gym.make_vec(env_id, num_envs=num_envs, vectorization_mode=mode)


def evaluate(alg, env_id: str, seed: int, ops) -> float:
    """Mean return of EVAL_EPISODES greedy episodes, played in parallel (the first episode of each env)."""
    envs = make_envs(env_id, EVAL_EPISODES)
    obs, _ = envs.reset(seed=seed + 10_000)
    returns = np.zeros(EVAL_EPISODES)
    done = np.zeros(EVAL_EPISODES, dtype=bool)
    with ops.no_grad():
        while not done.all():
            action = alg.predict(ops.tensor(obs, "float32")).cpu().numpy()
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
    parser.add_argument("--logdir", default=None, help="default: runs/a2c/<env>-seed<seed>")
    parser.add_argument("--total-steps", type=int, default=CONFIG["total_steps"])
    parser.add_argument("--target-return", type=float, default=CONFIG["target_return"])
    parser.add_argument("--lr", type=float, default=CONFIG["lr"])
    parser.add_argument("--num-envs", type=int, default=CONFIG["num_envs"])
    parser.add_argument("--n-steps", type=int, default=CONFIG["n_steps"])
    parser.add_argument("--no-progress", action="store_true", help="hide the progress bar")
    args = parser.parse_args()
    cfg = dict(CONFIG, lr=args.lr, num_envs=args.num_envs, n_steps=args.n_steps)
    target = args.target_return
    logdir = args.logdir or os.path.join("runs", "a2c", f"{args.env}-seed{args.seed}")
    os.makedirs(logdir, exist_ok=True)
    summary.set_logdir(logdir)
    ops = importlib.import_module(f"parl_algorithms.{args.backend}.ops")
    ops.seed(args.seed)
    np.random.seed(args.seed)
    start = time.perf_counter()

    n, t_len = cfg["num_envs"], cfg["n_steps"]
    envs = make_envs(args.env, n)
    if not isinstance(envs.single_action_space, gym.spaces.Discrete):
        raise SystemExit(f"A2C supports Discrete action spaces; {args.env} has {envs.single_action_space}")
    obs_dim, num_actions = envs.single_observation_space.shape[0], int(envs.single_action_space.n)
    model = define_model(args.backend)(obs_dim, num_actions, cfg["hidden"])  # selects the backend first
    alg = parl.algorithms.A2C(model,
                              vf_loss_coeff=cfg["vf_loss_coeff"], learning_rate=cfg["lr"],
                              max_grad_norm=0.5, reduction="mean", device=args.device)

    obs_buf = np.zeros((t_len, n, obs_dim), np.float32)
    act_buf = np.zeros((t_len, n), np.int64)
    val_buf = np.zeros((t_len, n), np.float32)
    next_val_buf = np.zeros((t_len, n), np.float32)
    rew_buf = np.zeros((t_len, n), np.float32)
    term_buf = np.zeros((t_len, n), bool)
    trunc_buf = np.zeros((t_len, n), bool)
    valid_buf = np.zeros((t_len, n), bool)  # False on the reset step that follows an episode's end

    obs, _ = envs.reset(seed=args.seed)
    ep_return = np.zeros(n)
    prev_done = np.zeros(n, bool)
    recent: list[float] = []
    steps, updates, eval_mean, reached_at = 0, 0, float("-inf"), None
    num_updates = args.total_steps // (n * t_len)
    bar = tqdm(total=args.total_steps, disable=args.no_progress, unit="step")
    curve = CSVLogger(os.path.join(logdir, "curve.csv"))

    def log_curve(train_return: float, eval_return: float | str = "") -> None:
        curve.log_dict({"env_steps": steps, "wall_s": round(time.perf_counter() - start, 3),
                        "train_return_mean": round(train_return, 3),
                        "eval_return_mean": eval_return if eval_return == "" else round(eval_return, 3)})

    for updates in range(1, num_updates + 1):
        with ops.no_grad():
            for t in range(t_len):
                action, value = alg.sample(ops.tensor(obs, "float32"))
                action = action.cpu().numpy()
                obs_buf[t], act_buf[t], val_buf[t], valid_buf[t] = obs, action, value.cpu().numpy(), ~prev_done
                obs, reward, terminated, truncated, _ = envs.step(action)
                rew_buf[t], term_buf[t], trunc_buf[t] = reward, terminated, truncated
                ep_return += reward
                prev_done = terminated | truncated
                if prev_done.any():  # `obs` is the final observation; the env resets on the next step
                    recent.extend(ep_return[prev_done].tolist())
                    ep_return[prev_done] = 0.0
            last_value = alg.value(ops.tensor(obs, "float32")).cpu().numpy()
        next_val_buf[:-1], next_val_buf[-1] = val_buf[1:], last_value
        steps += n * t_len
        adv, ret = compute_gae(rew_buf, val_buf, next_val_buf, term_buf, trunc_buf, gamma=cfg["gamma"],
                               gae_lambda=cfg["gae_lambda"])
        valid = valid_buf.reshape(-1)
        alg.learn(*(ops.tensor(a.reshape(n * t_len, *a.shape[2:])[valid]) for a in (obs_buf, act_buf, adv, ret)),
                  None, cfg["entropy_coeff"])

        recent = recent[-10:]
        train_mean = float(np.mean(recent)) if recent else float("nan")
        bar.update(n * t_len)
        if updates % 10 == 0:
            for key, value in alg.last_info.items():
                summary.add_scalar(key, value, steps)
            summary.add_scalar("train/episode_return", train_mean, steps)
            bar.set_postfix(train_return=f"{train_mean:.1f}", eval=f"{eval_mean:.1f}")
        evaluating = recent and train_mean >= cfg["eval_trigger"] and updates % 5 == 0
        if updates % 10 == 0 and not evaluating:
            log_curve(train_mean)
        if evaluating:
            eval_mean = evaluate(alg, args.env, args.seed, ops)
            summary.add_scalar("eval/return_mean", eval_mean, steps)
            log_curve(train_mean, eval_mean)
            if eval_mean >= target:
                reached_at = (steps, time.perf_counter() - start)
                break
    bar.close()
    if reached_at is None:
        eval_mean = evaluate(alg, args.env, args.seed, ops)
        summary.add_scalar("eval/return_mean", eval_mean, steps)
        log_curve(train_mean, eval_mean)
        if eval_mean >= target:
            reached_at = (steps, time.perf_counter() - start)
    curve.close()
    wall = time.perf_counter() - start
    result = {"device": str(alg.device), "env": args.env, "backend": args.backend,
              "seed": args.seed, "eval_return_mean": eval_mean, "eval_episodes": EVAL_EPISODES,
              "env_steps": steps, "wall_s": round(wall, 3), "target_return": target,
              "reached": reached_at is not None, "updates": updates}
    with open(os.path.join(logdir, "summary.json"), "w") as f:
        json.dump(result, f, indent=2)
    summary.flush()
    print(json.dumps(result))


if __name__ == "__main__":
    main()
