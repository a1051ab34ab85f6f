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
    # killed, pre-empted or stopped with Ctrl-C: continue exactly where the last checkpoint left off
    python examples/a2c/train.py --seed 0 --logdir runs/a2c/seed0 --resume runs/a2c/seed0

Writes ``<logdir>/summary.json``, tensorboard scalars and ``<logdir>/curve.csv`` (a row every 10 updates and at
each evaluation: ``env_steps``, ``wall_s``, ``train_return_mean`` = mean of the last 10 training episodes,
``eval_return_mean``, empty where that row has no evaluation), and ``<logdir>/checkpoint.npz`` (every
``--checkpoint-every`` minutes, on SIGTERM / Ctrl-C and at the end, between two updates: docs/long_runs.md).
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
from parl.utils import Checkpointer, RunLog, add_run_args, compute_gae

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
    add_run_args(parser)
    args = parser.parse_args()
    cfg = dict(CONFIG, lr=args.lr, num_envs=args.num_envs, n_steps=args.n_steps)
    target = args.target_return
    logdir = args.resume or args.logdir or os.path.join("runs", "a2c", f"{args.env}-seed{args.seed}")
    run = RunLog(logdir)
    ops = importlib.import_module(f"parl_algorithms.{args.backend}.ops")
    ops.seed(args.seed)
    np.random.seed(args.seed)

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

    num_updates = args.total_steps // (n * t_len)
    ckpt = Checkpointer(run, every_min=args.checkpoint_every, resume=args.resume is not None, config=vars(args))
    ckpt.register(alg=alg, envs=envs)
    c = ckpt.track(obs=envs.reset(seed=args.seed)[0], ep_return=np.zeros(n), prev_done=np.zeros(n, bool), recent=[],
                   steps=0, updates=0, eval_mean=float("-inf"), reached=False, train_mean=float("nan"))
    ckpt.start()  # (a resumed run continues from its checkpoint: counters, envs, networks, optimizer, RNGs)
    bar = tqdm(total=args.total_steps, initial=c.steps, disable=args.no_progress, unit="step")

    def log_curve(eval_return: float | str = "") -> None:
        run.row({"env_steps": c.steps, "wall_s": round(run.elapsed(), 3), "train_return_mean": round(c.train_mean, 3),
                 "eval_return_mean": eval_return if eval_return == "" else round(eval_return, 3)})

    while c.updates < num_updates and not c.reached:
        c.updates += 1
        with ops.no_grad():
            for t in range(t_len):
                action, value = alg.sample(ops.tensor(c.obs, "float32"))
                action = action.cpu().numpy()
                obs_buf[t], act_buf[t], val_buf[t], valid_buf[t] = c.obs, action, value.cpu().numpy(), ~c.prev_done
                c.obs, reward, terminated, truncated, _ = envs.step(action)
                rew_buf[t], term_buf[t], trunc_buf[t] = reward, terminated, truncated
                c.ep_return += reward
                c.prev_done = terminated | truncated
                if c.prev_done.any():  # `obs` is the final observation; the env resets on the next step
                    c.recent.extend(c.ep_return[c.prev_done].tolist())
                    c.ep_return[c.prev_done] = 0.0
            last_value = alg.value(ops.tensor(c.obs, "float32")).cpu().numpy()
        next_val_buf[:-1], next_val_buf[-1] = val_buf[1:], last_value
        c.steps += n * t_len
        adv, ret = compute_gae(rew_buf, val_buf, next_val_buf, term_buf, trunc_buf, gamma=cfg["gamma"],
                               gae_lambda=cfg["gae_lambda"])
        valid = valid_buf.reshape(-1)
        alg.learn(*(ops.tensor(a.reshape(n * t_len, *a.shape[2:])[valid]) for a in (obs_buf, act_buf, adv, ret)),
                  None, cfg["entropy_coeff"])

        c.recent = c.recent[-10:]
        c.train_mean = float(np.mean(c.recent)) if c.recent else float("nan")
        bar.update(n * t_len)
        if c.updates % 10 == 0:
            for key, value in alg.last_info.items():
                run.scalar(key, value, c.steps)
            run.scalar("train/episode_return", c.train_mean, c.steps)
            bar.set_postfix(train_return=f"{c.train_mean:.1f}", eval=f"{c.eval_mean:.1f}")
        evaluating = c.recent and c.train_mean >= cfg["eval_trigger"] and c.updates % 5 == 0
        if c.updates % 10 == 0 and not evaluating:
            log_curve()
        if evaluating:
            c.eval_mean = evaluate(alg, args.env, args.seed, ops)
            run.scalar("eval/return_mean", c.eval_mean, c.steps)
            log_curve(c.eval_mean)
            c.reached = c.eval_mean >= target
        ckpt.maybe_save(c.steps)
    bar.close()
    if not c.reached:
        c.eval_mean = evaluate(alg, args.env, args.seed, ops)
        run.scalar("eval/return_mean", c.eval_mean, c.steps)
        log_curve(c.eval_mean)
        c.reached = c.eval_mean >= target
    run.close()
    result = run.write_summary({
        "device": str(alg.device), "env": args.env, "backend": args.backend, "seed": args.seed,
        "eval_return_mean": c.eval_mean, "eval_episodes": EVAL_EPISODES, "env_steps": c.steps,
        "wall_s": round(run.elapsed(), 3), "target_return": target, "reached": c.reached, "updates": c.updates})
    ckpt.finish(c.steps)
    print(json.dumps(result))


if __name__ == "__main__":
    main()
