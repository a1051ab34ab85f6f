"""Stable-Baselines3 counterpart of the examples, with the same hyperparameters, evaluation protocol,
stop rule and thread settings, writing the same ``summary.json`` fields.

Evaluation (the examples' function): 10 deterministic episodes played in parallel on a vector env
seeded ``seed + 10000`` (gymnasium's native vector CartPole, else SyncVectorEnv), run when the examples
would run it (PPO / A2C / DQN: once the recent training return reaches the trigger, after an update;
SAC / TD3: every 1000 env steps after learning starts); training stops as soon as the mean reaches the
target. The wall clock starts before the envs are made.

MuJoCo mode (SAC / TD3 with ``--env``, e.g. HalfCheetah-v5; needs gymnasium[mujoco]): rl-baselines3-zoo's
MuJoCo settings, the same as ``bench_halfcheetah.py`` gives our examples (SAC: lr 3e-4, [256, 256]; TD3:
lr 1e-3, [400, 300], Gaussian action noise 0.1; both: batch 256, buffer 1e6, 10k random steps, tau 0.005,
gamma 0.99, one gradient step per env step), evaluation every ``--eval-every`` steps after learning starts and
once at the end, no early stop (``target_return`` 1e9).

Usage::

    python benchmarks/algorithms/sb3_runner.py ppo --seed 0 --logdir /tmp/sb3-ppo-0
    python benchmarks/algorithms/sb3_runner.py sac --env HalfCheetah-v5 --total-steps 100000 --eval-every 50000 \
        --seed 0 --logdir /tmp/sb3-sac-hc-0
"""

from __future__ import annotations

import argparse
import json
import os
import time

import gymnasium as gym
import numpy as np
import torch

EVAL_EPISODES = 10


def evaluate(model, env_id: str, seed: int) -> float:
    # gymnasium's native vectorised env where the env has one (CartPole), else a SyncVectorEnv
    mode = "vector_entry_point" if gym.spec(env_id).vector_entry_point else "sync"
    envs = gym.make_vec(env_id, num_envs=EVAL_EPISODES, vectorization_mode=mode)
    obs, _ = envs.reset(seed=seed + 10_000)
    returns, done = np.zeros(EVAL_EPISODES), np.zeros(EVAL_EPISODES, dtype=bool)
    while not done.all():
        action, _ = model.predict(obs, deterministic=True)
        obs, reward, terminated, truncated, _ = envs.step(action)
        returns += reward * ~done
        done |= terminated | truncated
    envs.close()
    return float(returns.mean())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("algo", choices=["ppo", "dqn", "a2c", "sac", "td3"])
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--logdir", required=True)
    parser.add_argument("--env", default=None, help="sac / td3: a MuJoCo env id (e.g. HalfCheetah-v5), MuJoCo mode")
    parser.add_argument("--total-steps", type=int, default=100_000, help="MuJoCo mode: env steps")
    parser.add_argument("--eval-every", type=int, default=50_000, help="MuJoCo mode: env steps between evaluations")
    parser.add_argument("--learning-starts", type=int, default=10_000, help="MuJoCo mode: uniform-random steps first")
    args = parser.parse_args()
    if args.env is not None and args.algo not in ("sac", "td3"):
        parser.error("--env is for sac / td3 (MuJoCo mode); the other algorithms run their fixed CartPole setting")
    torch.set_num_threads(1)
    from stable_baselines3 import A2C, DQN, PPO, SAC, TD3
    from stable_baselines3.common.callbacks import BaseCallback
    from stable_baselines3.common.env_util import make_vec_env
    from stable_baselines3.common.noise import NormalActionNoise

    start = time.perf_counter()
    state = {"eval": float("-inf"), "reached": None, "updates": 0, "evals": []}
    algo = args.algo
    learning_starts, eval_every = 1000, 1000  # SAC / TD3 on Pendulum

    if algo == "ppo":
        env_id, target, trigger, total, window = "CartPole-v1", 475.0, 400.0, 100_000, 10
        env = make_vec_env(env_id, n_envs=8, seed=args.seed)
        model = PPO("MlpPolicy", env, n_steps=32, batch_size=256, n_epochs=20, gamma=0.98, gae_lambda=0.8,
                    learning_rate=lambda f: 1e-3 * f, clip_range=lambda f: 0.2 * f, ent_coef=0.0, vf_coef=0.5,
                    max_grad_norm=0.5, seed=args.seed, device="cpu")
    elif algo == "a2c":
        env_id, target, trigger, total, window = "CartPole-v1", 475.0, 400.0, 500_000, 10
        env = make_vec_env(env_id, n_envs=16, seed=args.seed)
        model = A2C("MlpPolicy", env, n_steps=16, gamma=0.99, gae_lambda=0.95, learning_rate=3e-3, vf_coef=0.5,
                    ent_coef=0.01, max_grad_norm=0.5, use_rms_prop=False, seed=args.seed, device="cpu")
    elif algo == "dqn":
        env_id, target, trigger, total, window = "CartPole-v1", 475.0, 300.0, 50_000, 5
        env = make_vec_env(env_id, n_envs=1, seed=args.seed)
        model = DQN("MlpPolicy", env, learning_rate=2.3e-3, batch_size=64, buffer_size=100_000,
                    learning_starts=1000, gamma=0.99, target_update_interval=10, train_freq=256, gradient_steps=64,
                    exploration_fraction=0.16, exploration_final_eps=0.04, max_grad_norm=10,
                    policy_kwargs=dict(net_arch=[64, 64]), seed=args.seed, device="cpu")
    elif args.env is not None:  # MuJoCo mode (rl-baselines3-zoo's settings), no early stop
        env_id, target, total = args.env, 1e9, args.total_steps
        learning_starts, eval_every = args.learning_starts, args.eval_every
        env = make_vec_env(env_id, n_envs=1, seed=args.seed)
        common = dict(buffer_size=1_000_000, learning_starts=learning_starts, batch_size=256, tau=0.005, gamma=0.99,
                      train_freq=1, gradient_steps=1, seed=args.seed, device="cpu")
        if algo == "sac":
            model = SAC("MlpPolicy", env, learning_rate=3e-4, ent_coef="auto", target_entropy="auto",
                        policy_kwargs=dict(net_arch=[256, 256]), **common)
        else:
            act_dim = env.action_space.shape[0]
            noise = NormalActionNoise(np.zeros(act_dim), 0.1 * np.ones(act_dim))
            model = TD3("MlpPolicy", env, learning_rate=1e-3, policy_delay=2, target_policy_noise=0.2,
                        target_noise_clip=0.5, action_noise=noise, policy_kwargs=dict(net_arch=[400, 300]), **common)
    elif algo == "sac":
        env_id, target, total = "Pendulum-v1", -200.0, 20_000
        env = make_vec_env(env_id, n_envs=1, seed=args.seed)
        model = SAC("MlpPolicy", env, learning_rate=1e-3, buffer_size=1_000_000, learning_starts=1000,
                    batch_size=256, tau=0.005, gamma=0.99, train_freq=1, gradient_steps=1, ent_coef="auto",
                    policy_kwargs=dict(net_arch=[64, 64]), seed=args.seed, device="cpu")
    else:
        env_id, target, total = "Pendulum-v1", -200.0, 20_000
        env = make_vec_env(env_id, n_envs=1, seed=args.seed)
        model = TD3("MlpPolicy", env, learning_rate=1e-3, buffer_size=200_000, learning_starts=1000,
                    batch_size=256, tau=0.005, gamma=0.98, train_freq=1, gradient_steps=1, policy_delay=2,
                    target_policy_noise=0.2, target_noise_clip=0.5,
                    action_noise=NormalActionNoise(np.zeros(1), 0.1 * np.ones(1)),
                    policy_kwargs=dict(net_arch=[64, 64]), seed=args.seed, device="cpu")

    class StopAtTarget(BaseCallback):
        """Evaluates where the examples do (after an update) and stops once the target is reached."""

        def _on_rollout_start(self) -> None:
            steps = self.model.num_timesteps
            if algo in ("sac", "td3"):
                due = steps > learning_starts and steps % eval_every == 0
            else:
                if steps == 0:
                    return
                state["updates"] += 1
                recent = [ep["r"] for ep in list(self.model.ep_info_buffer)[-window:]]
                due = len(recent) == window or (algo != "dqn" and len(recent) > 0)
                due = due and float(np.mean(recent)) >= trigger
                if algo == "a2c":
                    due = due and state["updates"] % 5 == 0
            if due:
                state["eval"] = evaluate(self.model, env_id, args.seed)
                state["evals"].append([steps, state["eval"]])
                if state["eval"] >= target:
                    state["reached"] = (steps, time.perf_counter() - start)

        def _on_step(self) -> bool:
            return state["reached"] is None

    model.learn(total_timesteps=total, callback=StopAtTarget())
    steps = model.num_timesteps if state["reached"] is None else state["reached"][0]
    if state["reached"] is None:
        state["eval"] = evaluate(model, env_id, args.seed)
        state["evals"].append([steps, state["eval"]])
        if state["eval"] >= target:
            state["reached"] = (steps, time.perf_counter() - start)
    wall = time.perf_counter() - start if state["reached"] is None else state["reached"][1]
    result = {"env": env_id, "seed": args.seed, "eval_return_mean": state["eval"], "eval_episodes": EVAL_EPISODES,
              "env_steps": steps, "wall_s": round(wall, 3), "target_return": target,
              "reached": state["reached"] is not None, "evals": state["evals"],
              "cpu_s": round(time.process_time(), 3)}
    os.makedirs(args.logdir, exist_ok=True)
    with open(os.path.join(args.logdir, "summary.json"), "w") as f:
        json.dump(result, f, indent=2)
    print(json.dumps(result))


if __name__ == "__main__":
    main()
