"""PPO on gymnasium CartPole-v1 (discrete), Pendulum-v1 (continuous) or Atari (PARL's atari_config) with
parl.algorithms.PPO.

Algorithm box (Schulman et al. 2017, "Proximal Policy Optimization Algorithms"):

    for each update:
        collect T steps from N vector envs with the current policy (log-probs, values)
        advantages, returns = GAE(gamma, gae_lambda), bootstrapping truncated episodes from V(final obs);
        the envs reset a finished episode on the NEXT step, whose transition is masked out
        for epoch in 1..K: for each minibatch: PPO.learn(...)  (clipped surrogate + clipped value loss)
        every update once the training return is close to the target: evaluate 10 deterministic episodes
    stop as soon as the evaluation mean reaches --target-return

Usage::

    python examples/ppo/train.py --backend paddle --seed 0 --logdir runs/ppo/paddle-seed0
    python examples/ppo/train.py --seed 0 --logdir runs/ppo/cartpole-s0
    python examples/ppo/train.py --env Pendulum-v1 --seed 0 --logdir runs/ppo/pendulum-s0
    python examples/ppo/train.py --env PongNoFrameskip-v4 --seed 0 --total-steps 3000000   # EnvPool, Nature CNN

    # killed, pre-empted or stopped with Ctrl-C: continue exactly where the last checkpoint left off
    python examples/ppo/train.py --seed 0 --logdir runs/ppo/cartpole-s0 --resume runs/ppo/cartpole-s0

Writes ``<logdir>/summary.json`` (eval_return_mean, eval_episodes, env_steps, wall_s, reached, ...) and
tensorboard scalars (``train/*``, ``eval/return_mean``) and ``<logdir>/curve.csv`` (a row per update: ``env_steps``,
``wall_s``, ``train_return_mean`` = mean of the last 10 training episodes, ``eval_return_mean``, empty where that
update has no evaluation), and ``<logdir>/checkpoint.npz`` (every ``--checkpoint-every`` minutes, on SIGTERM /
Ctrl-C and at the end, between two updates: docs/long_runs.md).

Atari (``<Game>NoFrameskip-v4``; ``pip install 'parl-core[envpool]'``): PARL's ``benchmark/torch/ppo/atari_config.py``
and ``atari_model.py`` as written: 8 games stepped by EnvPool (``parl.env.EnvPoolAtari``: ``wrap_deepmind``'s 84x84
grey frames, stack of 4, episodic life, clipped rewards), rollouts of 128 steps, 4 epochs of 4 minibatches, Adam lr
2.5e-4 decayed linearly to 0, clip 0.1 (constant), entropy 0.01, value loss 0.5 (clipped), GAE 0.95, gamma 0.99;
the Nature CNN (Mnih et al. 2015) with orthogonal init, its torso shared by the policy and value heads. There
``train_return_mean`` is the mean of the last 100 whole games (unclipped), ``eval_return_mean`` the same at the
end (``eval_source``: train_episodes), and a resumed run starts its games afresh (EnvPool's emulators are not in a
checkpoint; everything else is). torch only.
"""

from __future__ import annotations

import argparse
import functools
import gc
import importlib
import json
import os

import gymnasium as gym
import numpy as np
from tqdm import tqdm

import parl
from parl.utils import Checkpointer, RunLog, add_run_args, compute_gae
from parl_core.env.envpool_atari import INSTALL_HINT, EnvPoolAtari, envpool_available

# Per-env defaults (CartPole: the rl-baselines3-zoo PPO hyperparameters; PARL's value loss carries a 1/2, so
# value_loss_coef=1.0 here equals SB3's vf_coef=0.5. Pendulum: tuned here).
CONFIGS = {
    "CartPole-v1": dict(num_envs=8, n_steps=32, minibatch_size=256, epochs=20, gamma=0.98, gae_lambda=0.8,
                        lr=1e-3, clip_param=0.2, entropy_coef=0.0, total_steps=100_000, target_return=475.0,
                        eval_trigger=400.0, reward_scale=1.0, hidden=64, value_loss_coef=1.0),
    "Pendulum-v1": dict(num_envs=8, n_steps=256, minibatch_size=256, epochs=10, gamma=0.9, gae_lambda=0.95,
                        lr=1e-3, clip_param=0.2, entropy_coef=0.0, total_steps=200_000, target_return=-250.0,
                        eval_trigger=-400.0, reward_scale=0.1, hidden=64, value_loss_coef=0.5),
}
# Atari: PARL's benchmark/torch/ppo/atari_config.py (8 envs x 128 steps, 4 minibatches -> 256 steps each, 4 epochs)
ATARI = dict(num_envs=8, n_steps=128, minibatch_size=256, epochs=4, gamma=0.99, gae_lambda=0.95, lr=2.5e-4,
             clip_param=0.1, clip_decay=False, entropy_coef=0.01, total_steps=10_000_000, target_return=float("inf"),
             eval_trigger=float("inf"), reward_scale=1.0, value_loss_coef=0.5, clipped_value_loss=True, atari=True,
             recent_games=100, threads=2)
CONFIGS["PongNoFrameskip-v4"] = dict(ATARI, target_return=20.0)
CONFIGS["BreakoutNoFrameskip-v4"] = dict(ATARI)
EVAL_EPISODES = 10


def is_atari(env_id: str) -> bool:
    return env_id.endswith("NoFrameskip-v4")


def atari_model(num_actions: int):
    """PARL's ``benchmark/torch/ppo/atari_model.py`` (the Nature CNN of Mnih et al. 2015) for stacked frames uint8
    ``[B, 4, 84, 84]`` (pixels 0..255), with one torso for both heads: orthogonal init, gain sqrt(2) (the policy
    head 0.01, the value head 1), zero biases. ``policy_and_value(obs)`` -> (logits float32 [B, A], value [B, 1])."""
    from torch import nn

    from parl_core.torch import Model  # torch whatever the backend (with paddle installed, PARL's default is paddle)

    def init(layer, gain=np.sqrt(2)):
        nn.init.orthogonal_(layer.weight, gain)
        nn.init.zeros_(layer.bias)
        return layer

    class AtariActorCritic(Model):
        def __init__(self):
            super().__init__()
            self.torso = nn.Sequential(init(nn.Conv2d(4, 32, 8, stride=4)), nn.ReLU(),
                                       init(nn.Conv2d(32, 64, 4, stride=2)), nn.ReLU(),
                                       init(nn.Conv2d(64, 64, 3, stride=1)), nn.ReLU(), nn.Flatten(),
                                       init(nn.Linear(64 * 7 * 7, 512)), nn.ReLU())
            self.pi = init(nn.Linear(512, num_actions), 0.01)
            self.v = init(nn.Linear(512, 1), 1.0)

        def policy_and_value(self, obs):
            h = self.torso(obs / 255.0)
            return self.pi(h), self.v(h)

        def policy(self, obs):
            return self.pi(self.torso(obs / 255.0))

        def value(self, obs):
            return self.v(self.torso(obs / 255.0))

    return AtariActorCritic()


@functools.cache
def define_model(backend: str = "torch") -> type:
    """``ActorCritic`` on ``backend`` (``"torch"`` or ``"paddle"``), which it selects (before parl.algorithms)."""
    parl.set_backend(backend)
    nets = importlib.import_module(f"parl_algorithms.{backend}.nets")
    ops = importlib.import_module(f"parl_algorithms.{backend}.ops")

    def mlp(inp: int, out: int, hidden: int, out_gain: float):
        """Linear-Tanh-Linear-Tanh-Linear, orthogonal init (gain sqrt(2), the last layer ``out_gain``) and zero
        biases, as SB3 initialises its policies."""
        return nets.orthogonal_init_(nets.MLP([inp, hidden, hidden, out], activation="tanh"), np.sqrt(2), out_gain)

    class ActorCritic(parl.Model):
        """Separate actor and critic MLPs.

        ``policy(obs)``: logits float32 [B, num_actions] (discrete) or ``(mean, std)`` [B, act_dim] /
        [act_dim] (continuous); ``value(obs)``: float32 [B, 1].
        """

        def __init__(self, obs_dim: int, act_dim: int, continuous: bool, hidden: int):
            super().__init__()
            self.continuous = continuous
            self.actor = mlp(obs_dim, act_dim, hidden, 0.01)
            self.critic = mlp(obs_dim, 1, hidden, 1.0)
            if continuous:
                self.log_std = ops.zeros_parameter(self, [act_dim])

        def policy(self, obs):
            out = self.actor(obs)
            return (out, self.log_std.exp()) if self.continuous else out  # (mean, std): PARL's PPO contract

        def value(self, obs):
            return self.critic(obs)

    class BatchedActorCritic(ActorCritic):
        """``ActorCritic`` (same function, parameters and initial weights) with the actor's and critic's hidden
        layers evaluated together: one ``nets.BatchedMLP`` (a batched matmul per layer for both networks; actor
        member 0, critic member 1) and the two output layers. ``policy_and_value(obs)`` returns both outputs
        from one pass (PPO's ``sample`` and ``learn`` call it). torch only: on paddle's CPU build the backward of
        ``bmm`` is slower than that of two linear layers (benchmarks/README.md, 2026-11-26 afternoon).
        """

        def __init__(self, obs_dim: int, act_dim: int, continuous: bool, hidden: int):
            super().__init__(obs_dim, act_dim, continuous, hidden)
            self.body = nets.BatchedMLP.stack([self.actor, self.critic], num_layers=2, activate_output=True)
            self.actor_head, self.critic_head = self.actor.layers[-1], self.critic.layers[-1]
            del self.actor, self.critic  # their hidden layers now live (copied) in body

        def _policy_out(self, features):
            out = self.actor_head(features)
            return (out, self.log_std.exp()) if self.continuous else out

        def policy_and_value(self, obs):
            actor_features, critic_features = self.body(obs)
            return self._policy_out(actor_features), self.critic_head(critic_features)

        def policy(self, obs):
            return self._policy_out(self.body(obs)[0])

        def value(self, obs):
            return self.critic_head(self.body(obs)[1])

    return BatchedActorCritic if backend == "torch" else ActorCritic


def make_envs(env_id: str, num_envs: int) -> gym.vector.VectorEnv:
    """gymnasium's native vectorised env where the env has one (CartPole: numpy over all envs at once),
    else a SyncVectorEnv; both reset a finished env on the NEXT step (reward 0, action ignored)."""
    mode = "vector_entry_point" if gym.spec(env_id).vector_entry_point else "sync"
    return gym.make_vec(env_id, num_envs=num_envs, vectorization_mode=mode)


def evaluate(alg, env_id: str, seed: int, action_scale: float | None, ops) -> float:
    """Mean return of EVAL_EPISODES deterministic episodes, played in parallel (the first episode of each env)."""
    envs = make_envs(env_id, EVAL_EPISODES)
    obs, _ = envs.reset(seed=seed + 10_000)
    returns = np.zeros(EVAL_EPISODES)
    done = np.zeros(EVAL_EPISODES, dtype=bool)
    with ops.no_grad():
        while not done.all():
            action = alg.predict(ops.tensor(obs, "float32")).cpu().numpy()
            if action_scale is not None:
                action = np.clip(action, -1.0, 1.0) * action_scale
            obs, reward, terminated, truncated, _ = envs.step(action)
            returns += reward * ~done
            done |= terminated | truncated
    envs.close()
    return float(returns.mean())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--backend", choices=("torch", "paddle"), default="torch", help="deep-learning framework")
    parser.add_argument("--env", default="CartPole-v1", choices=sorted(CONFIGS),
                        help="an env of CONFIGS; the Atari ones run on EnvPool (pip install 'parl-core[envpool]')")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--device", default=None,
                        help="device of the learner: cpu, cuda, cuda:1  [default: cuda when available]")
    parser.add_argument("--logdir", default=None, help="default: runs/ppo/<env>-seed<seed>")
    parser.add_argument("--total-steps", type=int, default=None, help="env-step budget (default per env)")
    parser.add_argument("--target-return", type=float, default=None, help="stop once eval reaches it")
    parser.add_argument("--no-progress", action="store_true", help="hide the progress bar")
    add_run_args(parser)
    args = parser.parse_args()
    cfg = dict(CONFIGS[args.env])
    atari = cfg.get("atari", False)
    if atari and args.backend != "torch":
        parser.error(f"{args.env} runs PARL's torch Atari configuration: use --backend torch")
    if atari and not envpool_available():
        parser.error(INSTALL_HINT)
    total_steps = args.total_steps or cfg["total_steps"]
    target = cfg["target_return"] if args.target_return is None else args.target_return
    logdir = args.resume or args.logdir or os.path.join("runs", "ppo", f"{args.env}-seed{args.seed}")
    run = RunLog(logdir)
    ops = importlib.import_module(f"parl_algorithms.{args.backend}.ops")
    ops.seed(args.seed)
    if "threads" in cfg:  # the Nature CNN's convolutions use both cores
        importlib.import_module("torch").set_num_threads(cfg["threads"])
    np.random.seed(args.seed)

    n, t_len = cfg["num_envs"], cfg["n_steps"]
    # EnvPool resets a finished game in the same step (its final observation is not returned); gymnasium's vector
    # envs on the NEXT step, whose transition is then masked out
    envs = EnvPoolAtari(args.env, n, dim=84, num_threads=cfg["threads"], seed=args.seed) if atari \
        else make_envs(args.env, n)
    continuous = isinstance(envs.single_action_space, gym.spaces.Box)
    obs_shape = envs.single_observation_space.shape
    act_dim = envs.single_action_space.shape[0] if continuous else int(envs.single_action_space.n)
    action_scale = float(envs.single_action_space.high[0]) if continuous else None
    if atari:  # torch, explicitly (whatever backend the process has selected)
        model, PPO = atari_model(act_dim), importlib.import_module("parl_algorithms.torch").PPO
    else:
        model = define_model(args.backend)(obs_shape[0], act_dim, continuous, cfg["hidden"])  # selects the backend
        PPO = parl.algorithms.PPO
    alg = PPO(model, clip_param=cfg["clip_param"], value_loss_coef=cfg["value_loss_coef"],
              entropy_coef=cfg["entropy_coef"], initial_lr=cfg["lr"], eps=1e-5, max_grad_norm=0.5,
              use_clipped_value_loss=cfg.get("clipped_value_loss", False), norm_adv=True,
              continuous_action=continuous, device=args.device)

    obs_buf = np.zeros((t_len, n, *obs_shape), envs.single_observation_space.dtype if atari else np.float32)
    act_buf = np.zeros((t_len, n, act_dim), np.float32) if continuous else np.zeros((t_len, n), np.int64)
    logp_buf = np.zeros((t_len, n), np.float32)
    val_buf = np.zeros((t_len, n), np.float32)
    next_val_buf = np.zeros((t_len, n), np.float32)
    rew_buf = np.zeros((t_len, n), np.float32)
    term_buf = np.zeros((t_len, n), bool)
    trunc_buf = np.zeros((t_len, n), bool)
    valid_buf = np.zeros((t_len, n), bool)  # False on the reset step that follows an episode's end
    # the objects built so far (torch's and gymnasium's modules, the networks) live for the whole run: move them
    # out of the cyclic garbage collector's generations, whose full passes would rescan them (~0.1 s each)
    gc.freeze()

    num_updates = total_steps // (n * t_len)
    if num_updates < 1:
        raise SystemExit(f"--total-steps {total_steps} is less than one rollout of {args.env} (num_envs x n_steps = "
                         f"{n} x {t_len} = {n * t_len} env steps): give --total-steps {n * t_len} or more")
    ckpt = Checkpointer(run, every_min=args.checkpoint_every, resume=args.resume is not None, config=vars(args))
    ckpt.register(alg=alg, **({} if atari else {"envs": envs}))  # EnvPool's emulators cannot be saved
    c = ckpt.track(obs=envs.reset(seed=args.seed)[0], ep_return=np.zeros(n), prev_done=np.zeros(n, bool), recent=[],
                   steps=0, updates=0, eval_mean=float("-inf"), reached=False, train_mean=float("nan"))
    ckpt.start()  # (a resumed run continues from its checkpoint: counters, envs, networks, optimizer, RNGs)
    bar = tqdm(total=total_steps, initial=c.steps, disable=args.no_progress, unit="step")

    def log_curve(eval_return: float | str = "") -> None:
        run.row({"env_steps": c.steps, "wall_s": round(run.elapsed(), 3), "train_return_mean": round(c.train_mean, 3),
                 "eval_return_mean": eval_return if eval_return == "" else round(eval_return, 3)})

    while c.updates < num_updates and not c.reached:
        c.updates += 1
        frac = 1.0 - (c.updates - 1) / num_updates
        lr = cfg["lr"] * frac
        if cfg.get("clip_decay", True):
            alg.clip_param = max(cfg["clip_param"] * frac, 1e-3)
        with ops.no_grad():
            for t in range(t_len):
                value, action, logp, _ = alg.sample(ops.tensor(c.obs, "float32"))
                # (the paddle PPO's action and log-prob have PARL's leading sample axis of 1: reshape drops it)
                env_action = action.cpu().numpy().reshape(act_buf.shape[1:])
                obs_buf[t], act_buf[t], logp_buf[t] = c.obs, env_action, logp.cpu().numpy().reshape(n)
                val_buf[t], valid_buf[t] = value.cpu().numpy()[:, 0], True if atari else ~c.prev_done
                if continuous:
                    env_action = np.clip(env_action, -1.0, 1.0) * action_scale
                c.obs, reward, terminated, truncated, _ = envs.step(env_action)
                if atari:  # a game cut at EnvPool's 100,000 steps ends too: its final observation is not returned
                    terminated, truncated = terminated | truncated, np.zeros_like(truncated)
                rew_buf[t], term_buf[t], trunc_buf[t] = reward * cfg["reward_scale"], terminated, truncated
                c.ep_return += reward
                c.prev_done = terminated | truncated
                if atari:  # whole games, unclipped (an episode of the learner ends at each lost life)
                    c.recent.extend(r for r, _ in envs.next_episode_results())
                elif c.prev_done.any():  # `obs` is the final observation; the env resets on the next step
                    c.recent.extend(c.ep_return[c.prev_done].tolist())
                    c.ep_return[c.prev_done] = 0.0
            last_value = alg.value(ops.tensor(c.obs, "float32")).cpu().numpy()[:, 0]
        next_val_buf[:-1], next_val_buf[-1] = val_buf[1:], last_value
        c.steps += n * t_len
        adv, ret = compute_gae(rew_buf, val_buf, next_val_buf, term_buf, trunc_buf, gamma=cfg["gamma"],
                               gae_lambda=cfg["gae_lambda"])

        # the batch in PPO.learn's argument order: obs, action, value, return, log-prob, advantage; [T * N, ...]
        batch = [a.reshape(n * t_len, *a.shape[2:]) for a in (obs_buf, act_buf, val_buf, ret, logp_buf, adv)]
        valid = np.flatnonzero(valid_buf.reshape(-1))
        mb = cfg["minibatch_size"]
        for _ in range(cfg["epochs"]):
            perm = valid[ops.randperm(len(valid)).cpu().numpy()]
            for i in range(0, len(perm), mb):
                j = perm[i:i + mb]
                alg.learn(*(ops.tensor(a[j]) for a in batch), lr=lr)

        c.recent = c.recent[-cfg.get("recent_games", 10):]
        c.train_mean = float(np.mean(c.recent)) if c.recent else float("nan")
        for key, value in alg.last_info.items():
            run.scalar(key, value, c.steps)
        if c.recent:
            run.scalar("train/episode_return", c.train_mean, c.steps)
        bar.update(n * t_len)
        bar.set_postfix(train_return=f"{c.train_mean:.1f}", eval=f"{c.eval_mean:.1f}")
        if not (c.recent and c.train_mean >= cfg["eval_trigger"]):
            log_curve()
        else:
            c.eval_mean = evaluate(alg, args.env, args.seed, action_scale, ops)
            run.scalar("eval/return_mean", c.eval_mean, c.steps)
            log_curve(c.eval_mean)
            c.reached = c.eval_mean >= target
        ckpt.maybe_save(c.steps)
    bar.close()
    if atari:  # greedy Atari games take minutes: the last training games instead
        c.eval_mean = c.train_mean
        c.reached = c.eval_mean >= target
    elif not c.reached:
        c.eval_mean = evaluate(alg, args.env, args.seed, action_scale, ops)
        run.scalar("eval/return_mean", c.eval_mean, c.steps)
        log_curve(c.eval_mean)
        c.reached = c.eval_mean >= target
    run.close()
    result = run.write_summary({
        "device": str(alg.device), "env": args.env, "backend": args.backend, "seed": args.seed,
        "eval_return_mean": c.eval_mean, "eval_episodes": len(c.recent) if atari else EVAL_EPISODES,
        "eval_source": "train_episodes" if atari else "greedy", "env_steps": c.steps,
        "wall_s": round(run.elapsed(), 3), "target_return": target, "reached": c.reached, "updates": c.updates})
    ckpt.finish(c.steps)
    print(json.dumps(result))


if __name__ == "__main__":
    main()
