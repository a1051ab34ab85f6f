"""Synchronous A2C with remote actors on the cluster (PARL's examples/A2C), parl.algorithms.A3C's loss.

Algorithm box (Mnih et al. 2016, "Asynchronous Methods for Deep Reinforcement Learning", synchronous
variant; GAE advantages, Schulman et al. 2016):

    actors (``@parl.remote_class(wait=False)``, one process each) own E envs and a copy of the policy;
        sample(weights): load the weights, play T steps of the E envs, compute GAE advantages and value
        targets of the unroll (bootstrapping from V of the last observation, and of the final observation of
        a truncated episode), return numpy arrays [T, E, ...]; one call per unroll, never one per step
    learner (this process), for each update:
        send the current weights, one {name: ndarray} message, with every actor's sample() call (futures)
        wait for EVERY actor's unroll (synchronous: all actors act with the same policy)
        one A3C.learn on the N x T x E batch: -log pi(a|s) A + vf_coeff (V - R)^2 / 2 + entropy_coeff H
        a dead actor (ActorDiedError from its future) is logged with its cause and replaced; its unroll is
        asked from the replacement and the update goes on (parl_remote.ActorPool)
        CartPole: once the training return is near the target, evaluate 10 greedy episodes; stop at the target

Usage::

    python examples/a2c_distributed/train.py --actors 2 --seed 0          # embedded local cluster
    xparl start --port 8010 --cpu-num 4
    python examples/a2c_distributed/train.py --address localhost:8010 --actors 4
    python examples/a2c_distributed/train.py --env PongNoFrameskip-v4 --actors 5   # Atari (PARL's config)
    python examples/a2c_distributed/train.py --env PongNoFrameskip-v4 --envpool    # actors step EnvPool's C++ pool

``--envpool`` (Atari only; ``pip install 'parl-core[envpool]'``): each actor plays its E games in one
``parl.env.EnvPoolAtari`` (the same 84x84 frames, episodic life, clipped rewards and whole-game returns as
``wrap_deepmind``, stepped in C++) instead of a gymnasium vector env of E ``wrap_deepmind`` envs. EnvPoolAtari
resets a finished game in the same step (its observation is the next episode's first), so every transition of
the unroll is trained on (``valid`` all True) and a game cut at EnvPool's step limit is not bootstrapped.

Writes ``<logdir>/summary.json`` (eval_return_mean, eval_episodes, env_steps, wall_s, reached, ...),
``<logdir>/curve.csv`` (``env_steps``, ``wall_s``, ``episode_return``: a row per finished training episode; on Atari
a whole game, unclipped) and tensorboard scalars (``train/*``, ``eval/return_mean``, ``time/env_steps_per_s``).

Long runs (``parl.utils`` run harness, docs/long_runs.md): a checkpoint (``<logdir>/checkpoint.npz``: the
learner's networks and optimizer, counters, recent returns, RNGs, the curve's length and the clock) every
``--checkpoint-every`` minutes, on SIGTERM / Ctrl-C and at the end, between two updates; ``--resume DIR`` goes on
from it. The actors' games are not in it (they live in other processes): a resumed run's actors start new games.
"""

from __future__ import annotations

import argparse
import json
import os
import time

import gymnasium as gym
import numpy as np
import torch
from torch import nn
from tqdm import tqdm

import parl
from parl.algorithms.torch import A3C  # torch, explicitly: an actor process does not inherit set_backend
from parl.env import is_minatar, make_minatar
from parl.utils import Checkpointer, RunLog, add_run_args, compute_gae, logger
from parl_algorithms.torch.nets import MLP, paddle_conv_init_
from parl_core.env.envpool_atari import INSTALL_HINT, EnvPoolAtari, envpool_available
from parl_core.torch import Model  # (with paddle installed, PARL's default backend is paddle)
from parl_remote import ActorPool

# Per-env defaults. "vector" (CartPole and other small envs): tuned here, as examples/a2c (16 envs x 16 steps,
# mean loss, lr 3e-3, gradient norm 0.5). "atari": PARL's examples/A2C/a2c_config.py (84x84 frames, 5 envs
# per actor, 20 steps, lr 1e-3, GAE lambda 1, summed loss with gradient norm 40).
CONFIGS = {
    "vector": dict(envs_per_actor=8, unroll_length=16, lr=3e-3, gamma=0.99, gae_lambda=0.95, vf_loss_coeff=0.5,
                   entropy_coeff=-0.01, reduction="mean", max_grad_norm=0.5, hidden=64, total_steps=500_000,
                   target_return=475.0, eval_trigger=400.0),
    "atari": dict(envs_per_actor=5, unroll_length=20, lr=1e-3, gamma=0.99, gae_lambda=1.0, vf_loss_coeff=0.5,
                  entropy_coeff=-0.01, reduction="sum", max_grad_norm=40.0, dim=84, total_steps=10_000_000,
                  target_return=18.0, eval_trigger=float("inf")),
}
EVAL_EPISODES = 10


def is_atari(env_id: str) -> bool:
    return "NoFrameskip" in env_id or env_id.startswith("ALE/")


def make_envs(env_id: str, num_envs: int, cfg: dict, *, use_envpool: bool = False,
              seed: int = 0) -> gym.vector.VectorEnv:
    """E envs stepped together; a finished env resets on the NEXT step (gymnasium's default autoreset).

    Atari ids get DeepMind's preprocessing (``parl.env.atari_wrappers.wrap_deepmind``, imported only here:
    observations uint8 [4, 84, 84], rewards clipped, a lost life ends an episode for bootstrapping); the
    other envs use their native vector env where they have one (CartPole: numpy over all envs at once).
    ``use_envpool`` (Atari): the same observations from one ``EnvPoolAtari`` (games seeded ``seed + i``),
    which resets a finished game in the SAME step instead.
    """
    if use_envpool:
        return EnvPoolAtari(env_id, num_envs, dim=cfg["dim"], obs_format="NCHW", seed=seed)
    if is_atari(env_id):
        import ale_py

        from parl.env.atari_wrappers import wrap_deepmind

        gym.register_envs(ale_py)
        return gym.make_vec(env_id, num_envs=num_envs, vectorization_mode="sync",
                            wrappers=[lambda env: wrap_deepmind(env, dim=cfg["dim"], obs_format="NCHW")])
    if is_minatar(env_id):  # flat float32 observations [10 * 10 * C] (parl.env.make_minatar)
        return gym.vector.SyncVectorEnv([lambda: make_minatar(env_id) for _ in range(num_envs)])
    mode = "vector_entry_point" if gym.spec(env_id).vector_entry_point else "sync"
    return gym.make_vec(env_id, num_envs=num_envs, vectorization_mode=mode)


def mlp(inp: int, out: int, hidden: int, out_gain: float) -> MLP:
    """Linear-Tanh-Linear-Tanh-Linear with orthogonal init (gain sqrt(2), last layer ``out_gain``), zero biases."""
    net = MLP([inp, hidden, hidden, out], activation="tanh")
    for layer in net.layers:
        nn.init.orthogonal_(layer.weight, gain=np.sqrt(2))
        nn.init.zeros_(layer.bias)
    nn.init.orthogonal_(net.layers[-1].weight, gain=out_gain)
    return net


class MLPModel(Model):
    """Separate actor and critic MLPs for obs float32 [B, obs_dim]: ``policy`` -> logits [B, A], ``value`` -> [B, 1]."""

    def __init__(self, obs_dim: int, num_actions: int, hidden: int):
        super().__init__()
        self.actor = mlp(obs_dim, num_actions, hidden, out_gain=0.01)
        self.critic = mlp(obs_dim, 1, hidden, out_gain=1.0)

    def policy(self, obs):
        return self.actor(obs)

    def value(self, obs):
        return self.critic(obs)


class AtariModel(Model):
    """PARL's A2C Atari network: 3 convolutions, 512 units, policy and value heads, for stacked frames
    [B, 4, 84, 84] with pixel values 0..255."""

    def __init__(self, num_actions: int):
        super().__init__()
        # convolutions initialised as paddle initialises PARL's model (torch's default draws smaller weights)
        self.torso = paddle_conv_init_(nn.Sequential(nn.Conv2d(4, 32, 8, stride=4, padding=1), nn.ReLU(),
                                                     nn.Conv2d(32, 64, 4, stride=2, padding=2), nn.ReLU(),
                                                     nn.Conv2d(64, 64, 3, stride=1), nn.ReLU(), nn.Flatten(),
                                                     nn.Linear(64 * 9 * 9, 512), nn.ReLU()))  # paddle's init, as PARL's
        self.policy_fc = nn.Linear(512, num_actions)
        self.value_fc = nn.Linear(512, 1)

    def policy_and_value(self, obs):
        """(logits float32 [B, A], value float32 [B, 1]) with one pass of the torso."""
        h = self.torso(obs / 255.0)
        return self.policy_fc(h), self.value_fc(h)

    def policy(self, obs):
        return self.policy_fc(self.torso(obs / 255.0))

    def value(self, obs):
        return self.value_fc(self.torso(obs / 255.0))


def build_algorithm(envs: gym.vector.VectorEnv, env_id: str, cfg: dict, device: str | None = "cpu") -> A3C:
    space = envs.single_action_space
    if not isinstance(space, gym.spaces.Discrete):
        raise SystemExit(f"A2C here needs a Discrete action space; {env_id} has {space}")
    if "dim" in cfg:
        model = AtariModel(int(space.n))
    else:
        model = MLPModel(envs.single_observation_space.shape[0], int(space.n), cfg["hidden"])
    return A3C(model, vf_loss_coeff=cfg["vf_loss_coeff"], max_grad_norm=cfg["max_grad_norm"],
                               reduction=cfg["reduction"], device=device)


@parl.remote_class(wait=False)
class Actor:
    """E envs and a copy of the policy in a process of its own; one ``sample`` call = one unroll of T steps."""

    def __init__(self, env_id: str, num_envs: int, unroll_length: int, cfg: dict, seed: int,
                 use_envpool: bool = False):
        torch.set_num_threads(1)
        torch.manual_seed(seed)
        self.envs = make_envs(env_id, num_envs, cfg, use_envpool=use_envpool, seed=seed)
        self.alg = build_algorithm(self.envs, env_id, cfg)
        self.cfg, self.T, self.atari, self.envpool = cfg, unroll_length, is_atari(env_id), use_envpool
        self.obs, _ = self.envs.reset(seed=None if use_envpool else seed)  # EnvPoolAtari is seeded when built
        self.prev_done = np.zeros(num_envs, bool)  # the env resets on this step: its transition is not real
        self.ep_return = np.zeros(num_envs)

    def pid(self) -> int:
        """This actor's process id (the fault test kills it)."""
        return os.getpid()

    def _finished_returns(self, done: np.ndarray) -> list[float]:
        if self.envpool:  # whole games with unclipped rewards, counted by EnvPoolAtari
            return [r for r, _ in self.envs.next_episode_results()]
        if self.atari:  # whole games with unclipped rewards, from PARL's MonitorEnv inside wrap_deepmind
            from parl.env.atari_wrappers import MonitorEnv, get_wrapper_by_cls

            return [r for env in self.envs.envs for r, _ in get_wrapper_by_cls(env, MonitorEnv).next_episode_results()]
        returns = self.ep_return[done].tolist()
        self.ep_return[done] = 0.0
        return returns

    def sample(self, weights: dict) -> dict:
        """Load ``weights`` ({name: ndarray}) and play one unroll of T steps of the E envs.

        Returns:
            ``obs [T, E, *obs_shape]`` (the env's dtype), ``actions`` int64 ``[T, E]``, ``advantages`` and
            ``target_values`` float32 ``[T, E]`` (GAE), ``valid`` bool ``[T, E]`` (False on the step where a
            finished env resets: that transition is not trained on), ``episode_returns`` float64 ``[n]`` of the
            episodes that ended during the unroll.
        """
        self.alg.model.set_weights(weights)
        T, E = self.T, len(self.prev_done)
        obs = np.empty((T, *self.obs.shape), self.obs.dtype)
        actions = np.empty((T, E), np.int64)
        values, rewards = np.empty((T + 1, E), np.float32), np.empty((T, E), np.float32)
        terminated, truncated, valid = np.empty((T, E), bool), np.empty((T, E), bool), np.empty((T, E), bool)
        returns: list[float] = []
        with torch.inference_mode():
            for t in range(T):
                obs[t], valid[t] = self.obs, ~self.prev_done
                action, value = self.alg.sample(torch.as_tensor(self.obs, dtype=torch.float32))
                actions[t], values[t] = action.cpu().numpy(), value.cpu().numpy()
                self.obs, rewards[t], terminated[t], truncated[t], _ = self.envs.step(actions[t])
                self.ep_return += rewards[t]
                done = terminated[t] | truncated[t]
                if self.envpool:  # reset in the same step: `self.obs` is the next episode's, every step is real
                    terminated[t], truncated[t] = done, False  # no final observation to bootstrap a cut game from
                else:
                    self.prev_done = done
                if done.any():  # gymnasium: `self.obs` holds the final observations; reset on the next step
                    returns += self._finished_returns(done)
            values[T] = self.alg.value(torch.as_tensor(self.obs, dtype=torch.float32)).cpu().numpy()
        # next value of step t = V(obs of step t+1), which for an env that ended at t is its final observation
        advantages, target_values = compute_gae(rewards, values[:T], values[1:], terminated, truncated,
                                                gamma=self.cfg["gamma"], gae_lambda=self.cfg["gae_lambda"])
        return dict(obs=obs, actions=actions, advantages=advantages, target_values=target_values, valid=valid,
                    episode_returns=np.asarray(returns, np.float64))


def evaluate(alg: A3C, env_id: str, cfg: dict, seed: int) -> float:
    """Mean return of EVAL_EPISODES greedy episodes played in parallel (the first episode of each env)."""
    envs = make_envs(env_id, EVAL_EPISODES, cfg)
    obs, _ = envs.reset(seed=seed + 10_000)
    returns, done = np.zeros(EVAL_EPISODES), np.zeros(EVAL_EPISODES, bool)
    with torch.inference_mode():
        while not done.all():
            obs, reward, terminated, truncated, _ = envs.step(alg.predict(torch.as_tensor(obs, dtype=torch.float32))
                                                              .cpu().numpy())
            returns += reward * ~done
            done |= terminated | truncated
    envs.close()
    return float(returns.mean())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--env", default="CartPole-v1")
    parser.add_argument("--actors", type=int, default=2, help="number of remote actors (processes)")
    parser.add_argument("--address", default=None,
                        help="HOST:PORT of an xparl cluster, or ray / ray://HOST:10001 for a Ray cluster "
                             "(default: an embedded xparl cluster)")
    parser.add_argument("--envs-per-actor", type=int, default=None, help="E (default per env)")
    parser.add_argument("--unroll-length", type=int, default=None, help="T, steps per unroll (default per env)")
    parser.add_argument("--lr", type=float, default=None, help="learning rate (default per env)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--device", default=None,
                        help="torch device of the learner: cpu, cuda, cuda:1  [default: cuda when available]")
    parser.add_argument("--logdir", default=None, help="default: runs/a2c_distributed/<env>-seed<seed>")
    parser.add_argument("--total-steps", type=int, default=None, help="env-step budget (default per env)")
    parser.add_argument("--target-return", type=float, default=None, help="stop once eval reaches it")
    parser.add_argument("--envpool", action="store_true",
                        help="Atari: actors step their games in EnvPool (pip install 'parl-core[envpool]')")
    parser.add_argument("--no-progress", action="store_true", help="hide the progress bar")
    add_run_args(parser)
    args = parser.parse_args()
    if args.actors < 1:
        parser.error("--actors must be >= 1")
    if args.envpool and not is_atari(args.env):
        parser.error(f"--envpool runs Atari games ('<Game>NoFrameskip-v4'), not {args.env}")
    if args.envpool and not envpool_available():
        parser.error(INSTALL_HINT)
    cfg = dict(CONFIGS["atari" if is_atari(args.env) else "vector"])
    if is_minatar(args.env):  # MinAtar games: the small-env settings, no return target (scores differ per game)
        cfg.update(total_steps=5_000_000, target_return=float("inf"), eval_trigger=float("inf"))
    for key in ("envs_per_actor", "unroll_length", "lr", "total_steps", "target_return"):
        if getattr(args, key) is not None:
            cfg[key] = getattr(args, key)
    E, T, target = cfg["envs_per_actor"], cfg["unroll_length"], cfg["target_return"]
    logdir = args.resume or args.logdir or os.path.join("runs", "a2c_distributed",
                                                        f"{args.env.replace('/', '_')}-seed{args.seed}")
    t0 = time.perf_counter()
    run = RunLog(logdir)
    torch.set_num_threads(1)
    torch.manual_seed(args.seed)

    probe = make_envs(args.env, 1, cfg, use_envpool=args.envpool)
    alg = build_algorithm(probe, args.env, cfg, args.device)
    probe.close()
    ckpt = Checkpointer(run, every_min=args.checkpoint_every, resume=args.resume is not None, config=vars(args),
                        ignore=("address", "actors"))  # (the cluster and its size may change between the parts)
    ckpt.register(alg=alg)
    # `generation`: how many actors each slot has had (a replacement, or a resumed run's actor, gets other seeds)
    c = ckpt.track(env_steps=0, updates=0, recent=[], eval_mean=float("nan"), reached=False,
                   generation=[0] * args.actors)
    ckpt.start()  # a resumed run continues from its checkpoint: learner, counters, RNGs, curve, clock
    if len(c.generation) < args.actors:
        c.generation += [0] * (args.actors - len(c.generation))
    if args.address is None:  # one CPU per actor, plus one so that a replacement starts while a dead one is freed
        # the embedded cluster forks its jobs with the actor's heavy imports done once (XPARL_PRELOAD)
        os.environ.setdefault("XPARL_PRELOAD", "torch,gymnasium,parl_core.torch,parl_algorithms.torch")
        parl.connect(cpu_num=args.actors + 1)
    else:
        parl.connect(args.address)

    def new_actor(slot: int) -> Actor:
        actor = Actor(args.env, E, T, cfg, seed=args.seed * 100_000 + slot * 1000 + c.generation[slot] * 100,
                      use_envpool=args.envpool)
        c.generation[slot] += 1
        logger.info("actor %d started, pid=%d", slot, actor.pid().result())
        return actor

    # the actors start in parallel (each imports torch); a dead one is logged, replaced and asked again
    actors = ActorPool(new_actor, args.actors, logger=logger)
    actors_ready_s = time.perf_counter() - t0
    logger.info("%d actors ready after %.1f s", args.actors, actors_ready_s)

    steps_per_update = args.actors * E * T
    bar = tqdm(total=cfg["total_steps"], initial=c.env_steps, disable=args.no_progress, unit="frame", smoothing=0.05)
    try:
        while c.env_steps + steps_per_update <= cfg["total_steps"] and not c.reached:
            unrolls = actors.call_all("sample", alg.model.get_weights())  # synchronous: every actor's unroll
            valid = np.concatenate([u["valid"].reshape(-1) for u in unrolls])
            batch = {key: np.concatenate([u[key].reshape(T * E, *u[key].shape[2:]) for u in unrolls])[valid]
                     for key in ("obs", "actions", "advantages", "target_values")}
            alg.learn(torch.as_tensor(batch["obs"], dtype=torch.float32), torch.from_numpy(batch["actions"]),
                      torch.from_numpy(batch["advantages"]), torch.from_numpy(batch["target_values"]), cfg["lr"],
                      cfg["entropy_coeff"])
            c.updates += 1
            c.env_steps += steps_per_update
            wall_s = run.elapsed()
            for unroll in unrolls:
                for ret in unroll["episode_returns"].tolist():
                    run.row({"env_steps": c.env_steps, "wall_s": round(wall_s, 3), "episode_return": ret})
                c.recent = (c.recent + unroll["episode_returns"].tolist())[-20:]
            recent_mean = float(np.mean(c.recent)) if c.recent else 0.0
            bar.update(steps_per_update)
            bar.set_postfix(fps=f"{c.env_steps / wall_s:.0f}", ret=f"{recent_mean:.1f}", refresh=False)
            if c.updates % 10 == 0:
                for key, value in alg.get_info().items():
                    run.scalar(key, value, c.env_steps)
                run.scalar("train/episode_return", recent_mean, c.env_steps)
                run.scalar("time/env_steps_per_s", c.env_steps / wall_s, c.env_steps)
            if c.updates % 25 == 0:
                logger.info("update %d, env steps %d, %.0f frames/s, training return %.1f", c.updates, c.env_steps,
                            c.env_steps / wall_s, recent_mean)
            if len(c.recent) >= 10 and recent_mean >= cfg["eval_trigger"] and c.updates % 5 == 0:
                c.eval_mean = evaluate(alg, args.env, cfg, args.seed)
                run.scalar("eval/return_mean", c.eval_mean, c.env_steps)
                c.reached = c.eval_mean >= target
            ckpt.maybe_save(c.env_steps)  # (a SIGTERM / Ctrl-C: saved here, then the run exits)
    except SystemExit:
        parl.disconnect()
        raise
    bar.close()
    eval_source = "greedy"
    last_games = c.recent[-EVAL_EPISODES:]
    if not c.reached:
        if is_atari(args.env):  # greedy Atari games take minutes: report the last training games instead
            c.eval_mean, eval_source = (float(np.mean(last_games)) if last_games else float("nan")), "train_episodes"
        else:
            c.eval_mean = evaluate(alg, args.env, cfg, args.seed)
            run.scalar("eval/return_mean", c.eval_mean, c.env_steps)
            c.reached = c.eval_mean >= target
    run.close()
    result = run.write_summary({
        "device": str(alg.device), "env": args.env, "algorithm": "A2C", "seed": args.seed, "actors": args.actors,
        "envs_per_actor": E, "unroll_length": T, "envpool": args.envpool, "eval_return_mean": c.eval_mean,
        "eval_episodes": EVAL_EPISODES if eval_source == "greedy" else len(last_games), "eval_source": eval_source,
        "env_steps": c.env_steps, "updates": c.updates, "wall_s": round(run.elapsed(), 3),
        "env_steps_per_s": round(c.env_steps / run.elapsed(), 1), "actors_ready_s": round(actors_ready_s, 3),
        "actors_replaced": actors.replacements,
        "reached": c.reached, "resumed": ckpt.resumed, "target_return": target,
        "loadavg": [float(x) for x in open("/proc/loadavg").read().split()[:3]]})
    ckpt.finish(c.env_steps)
    parl.disconnect()
    print(json.dumps(result))


if __name__ == "__main__":
    main()
