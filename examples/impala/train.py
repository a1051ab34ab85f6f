"""IMPALA with remote actors on the cluster: CartPole-v1 by default, Atari (PongNoFrameskip-v4, ...) through
``parl.env.atari_wrappers.wrap_deepmind``.

Algorithm box (Espeholt et al. 2018, "IMPALA: Scalable Distributed Deep-RL with Importance Weighted
Actor-Learner Architectures"):

    actors (``@parl.remote_class``, one process each): own E envs and a copy of the policy;
        sample(weights) -> loads the weights if given, then plays T steps of the E envs with the policy
        (each action drawn from the probs of IMPALA.sample, as PARL) and returns the unroll [T, E, ...]
        (obs, actions, behaviour logits, rewards, dones) as numpy
    learner (this process): keeps `--inflight` calls queued on every actor (futures, `wait=False`), so an
        actor starts its next unroll while the learner trains; takes unrolls in the order they complete;
        IMPALA.learn on each, flattened env-major to [E * T, ...] (PARL's layout; V-trace corrects for the
        actor's stale policy) and sends the new weights, one {name: ndarray} message, with that actor's
        next call
    the actors are a parl_remote.ActorPool: a dead actor (ActorDiedError from its future) is logged with its cause
        and replaced, its unanswered calls sent to the replacement; training goes on
    CartPole: once the recent training return is high, evaluate 10 greedy episodes; stop at --target-return

Usage::

    python examples/impala/train.py --actors 2 --seed 0                     # embedded local cluster
    xparl start --port 8010 --cpu-num 4 && python examples/impala/train.py --address localhost:8010
    python examples/impala/train.py --env PongNoFrameskip-v4 --actors 2 --total-steps 5000000   # --config parl
    python examples/impala/train.py --env PongNoFrameskip-v4 --envpool   # actors on EnvPool's C++ pool

On Atari the default configuration is ``--config parl``, PARL's impala_config.py as written (its model, 5 envs per
actor, learner batches of 1,000 steps, lr 1e-3 -> 5e-4 -> 1e-4 by learner updates): its Pong run reached a mean of 18
over the last 100 games at 5.6M agent steps (README, Results). ``--config per-unroll`` runs this example's earlier
Atari settings (8 envs per actor, a learner update on each unroll as it comes, orthogonal init, lr decayed over the
budget), which learned Pong later; checkpoints of runs made before ``parl`` was the default (their configuration was
called ``default``) resume as ``per-unroll``.

``--envpool`` (Atari only; ``pip install 'parl-core[envpool]'``): each actor plays its E games in one
``parl.env.EnvPoolAtari`` (the same 42x42 frames, episodic life, clipped rewards and whole-game returns as
``wrap_deepmind``, computed in C++) instead of E gymnasium envs stepped in Python; off by default, so a run
without the flag does what it did (the two paths draw their reset no-ops from different generators).

Writes ``<logdir>/summary.json`` (eval_return_mean, eval_episodes, env_steps, wall_s, reached, ...),
``<logdir>/curve.csv`` (env_steps, wall_s, training-episode return) and tensorboard scalars.
"""

from __future__ import annotations

import argparse
import concurrent.futures
import csv
import json
import logging
import os
import signal
import threading
import time
from collections import deque

import gymnasium as gym
import numpy as np
import torch
from torch import nn
from tqdm import tqdm

import parl
from parl.algorithms.torch import IMPALA  # torch, explicitly: an actor process does not inherit set_backend
from parl.env import is_minatar, make_minatar
from parl.env.atari_wrappers import MonitorEnv, get_wrapper_by_cls, wrap_deepmind
from parl.utils import PiecewiseScheduler, atomic_write, summary
from parl_algorithms.torch.nets import paddle_conv_init_
from parl_core.env.envpool_atari import INSTALL_HINT, EnvPoolAtari, envpool_available
from parl_core.torch import Model  # (with paddle installed, PARL's default backend is paddle)
from parl_remote import ActorPool

logger = logging.getLogger("impala")

# Per-env defaults. CartPole: tuned here. Atari: `--config parl` (the default), PARL's
# examples/IMPALA/impala_config.py; `--config per-unroll`, this example's earlier settings (42x42 frames, unrolls of
# 50 steps, entropy -0.01 as PARL's, but 8 envs per actor, each unroll learned as it comes, lr decayed over the budget).
# `lr_schedule`: PARL's piecewise (learner update, lr) pairs; without it lr decays linearly from `lr` to `lr_final`
# over the env-step budget. `train_batch_size`: env steps per learner update (None: each unroll batch as it comes).
CONFIGS = {
    "vector": dict(envs_per_actor=8, unroll_length=20, lr=1e-3, lr_final=1e-3, entropy_coeff=-0.01, gamma=0.99,
                   hidden=64, total_steps=500_000, target_return=475.0, eval_trigger=400.0),
    "atari-per-unroll": dict(envs_per_actor=8, unroll_length=50, lr=1e-3, lr_final=1e-4, entropy_coeff=-0.01,
                             gamma=0.99, dim=42, total_steps=10_000_000, target_return=18.0, eval_trigger=float("inf")),
    # `--config parl`: PARL's impala_config.py as written (its model, 5 envs per actor, learner batches of 1,000
    # steps, lr 1e-3 -> 5e-4 at update 20,000 -> 1e-4 at 40,000); PARL ran it with 32 actors
    "atari-parl": dict(envs_per_actor=5, unroll_length=50, lr=1e-3, lr_final=1e-3, entropy_coeff=-0.01, gamma=0.99,
                       dim=42, total_steps=10_000_000, target_return=18.0, eval_trigger=float("inf"),
                       model="parl", train_batch_size=1000, lr_schedule=[(0, 1e-3), (20_000, 5e-4), (40_000, 1e-4)]),
}
EVAL_EPISODES = 10
CHECKPOINT = "checkpoint.pt"
# what a resumed run must share with the run it continues (the rest of the command line may change, e.g. the budget)
RUN_KEYS = ("env", "config", "envs_per_actor", "unroll_length", "train_batch_size", "seed", "envpool")
ATARI_CONFIGS = ("parl", "per-unroll")  # --config choices; the first is the default
# the name a checkpoint's run stored for the configuration now called (Atari) "per-unroll": it was the default
FORMER_NAMES = {"default": "per-unroll"}


def is_atari(env_id: str) -> bool:
    return "NoFrameskip" in env_id or env_id.startswith("ALE/")


def make_env(env_id: str, dim: int = 42) -> gym.Env:
    """One env with a MonitorEnv that records whole-episode returns (Atari: whole games, unclipped)."""
    if is_atari(env_id):
        import ale_py

        gym.register_envs(ale_py)
        return wrap_deepmind(gym.make(env_id), dim=dim, obs_format="NCHW")
    if is_minatar(env_id):  # flat float32 observations [10 * 10 * C] (parl.env.make_minatar)
        return MonitorEnv(make_minatar(env_id))
    return MonitorEnv(gym.make(env_id))


class MLPModel(Model):
    """Separate policy and value MLPs (tanh) for vector observations float32 [B, obs_dim]."""

    def __init__(self, obs_dim: int, num_actions: int, hidden: int = 64):
        super().__init__()
        self.pi = nn.Sequential(nn.Linear(obs_dim, hidden), nn.Tanh(), nn.Linear(hidden, hidden), nn.Tanh(),
                                nn.Linear(hidden, num_actions))
        self.v = nn.Sequential(nn.Linear(obs_dim, hidden), nn.Tanh(), nn.Linear(hidden, hidden), nn.Tanh(),
                               nn.Linear(hidden, 1))

    def policy(self, obs):
        """logits float32 [B, num_actions]."""
        return self.pi(obs)

    def value(self, obs):
        """float32 [B, 1]."""
        return self.v(obs)


def torso_features(torso: nn.Sequential, x: torch.Tensor) -> torch.Tensor:
    """``torso(x)`` of PARL's IMPALA torso (float32 ``[B, 4, 42, 42]`` in, ``[B, 256]`` out), its last conv (256
    kernels of 32x11x11 over an 11x11 input: one output pixel) computed as the matrix product it is: the same
    weights and result (to float rounding), about 3x faster than oneDNN's convolution on an actor's batch of 5 frames
    on this project's 2-core CPU (the actors' largest cost), and 20 % faster in the learner's update."""
    h = torso[:4](x)
    conv = torso[4]
    if tuple(h.shape[-2:]) != conv.kernel_size:  # another frame size: the conv's output is not one pixel
        return torso[4:](h)
    return torch.relu(nn.functional.linear(h.flatten(1), conv.weight.flatten(1), conv.bias))


class AtariModel(Model):
    """PARL's IMPALA torso (convs 16x4x4/2, 32x4x4/2, 256x11x11 to 1x1) shared by the policy and value heads, for
    stacked frames uint8/float32 [B, 4, 42, 42] (pixel values 0..255; PARL's 42x42 IMPALA Atari setting), with
    orthogonal initialisation (Saxe et al. 2014; gain sqrt(2) for the convolutions, 0.01 for the policy head, 1 for
    the value head) and zero biases, as PARL's torch A2C / PPO Atari models: ``--config per-unroll``. (The default,
    ``--config parl``, keeps PARL's own initialisation: :class:`ParlAtariModel`.)"""

    def __init__(self, num_actions: int, dim: int = 42):
        super().__init__()
        self.torso = nn.Sequential(nn.Conv2d(4, 16, 4, stride=2, padding=1), nn.ReLU(),
                                   nn.Conv2d(16, 32, 4, stride=2, padding=2), nn.ReLU(),
                                   nn.Conv2d(32, 256, 11), nn.ReLU(), nn.Flatten())
        with torch.no_grad():
            flat = self.torso(torch.zeros(1, 4, dim, dim)).shape[1]
        self.pi = nn.Linear(flat, num_actions)
        self.v = nn.Linear(flat, 1)
        for layer, gain in [*((m, 2 ** 0.5) for m in self.torso if isinstance(m, nn.Conv2d)), (self.pi, 0.01),
                            (self.v, 1.0)]:
            nn.init.orthogonal_(layer.weight, gain)
            nn.init.zeros_(layer.bias)

    def _features(self, obs):
        return torso_features(self.torso, obs / 255.0)

    def policy_and_value(self, obs):
        """(logits float32 [B, num_actions], value float32 [B, 1]) in one pass of the torso."""
        h = self._features(obs)
        return self.pi(h), self.v(h)

    def policy(self, obs):
        return self.pi(self._features(obs))

    def value(self, obs):
        return self.v(self._features(obs))


class ParlAtariModel(Model):
    """PARL's ``examples/IMPALA/atari_model.py`` in torch, for stacked frames [B, 4, 42, 42] (pixels 0..255): convs
    16x4x4/2, 32x4x4/2, 256x11x11 (to 1x1), initialised as paddle initialises them (``paddle_conv_init_``),
    then linear policy and value heads initialised N(0, 1) as PARL's."""

    def __init__(self, num_actions: int, dim: int = 42):
        super().__init__()
        self.torso = paddle_conv_init_(nn.Sequential(nn.Conv2d(4, 16, 4, stride=2, padding=1), nn.ReLU(),
                                                     nn.Conv2d(16, 32, 4, stride=2, padding=2), nn.ReLU(),
                                                     nn.Conv2d(32, 256, 11), nn.ReLU(), nn.Flatten()))
        with torch.no_grad():
            flat = self.torso(torch.zeros(1, 4, dim, dim)).shape[1]
        self.pi = nn.Linear(flat, num_actions)
        self.v = nn.Linear(flat, 1)
        for head in (self.pi, self.v):
            nn.init.normal_(head.weight)
            nn.init.normal_(head.bias)

    def _features(self, obs):
        return torso_features(self.torso, obs / 255.0)

    policy_and_value = AtariModel.policy_and_value
    policy = AtariModel.policy
    value = AtariModel.value


def build_model(env: gym.Env | gym.vector.VectorEnv, cfg: dict) -> Model:
    """The model for one env's spaces (a vector env: its ``single_*`` spaces)."""
    action_space = getattr(env, "single_action_space", env.action_space)
    observation_space = getattr(env, "single_observation_space", env.observation_space)
    if not isinstance(action_space, gym.spaces.Discrete):
        raise SystemExit(f"IMPALA here needs a Discrete action space, got {action_space}")
    num_actions = int(action_space.n)
    if "dim" in cfg:
        return (ParlAtariModel if cfg.get("model") == "parl" else AtariModel)(num_actions, cfg["dim"])
    return MLPModel(observation_space.shape[0], num_actions, cfg["hidden"])


@parl.remote_class(wait=False)
class Actor:
    """Plays ``num_envs`` envs with the latest policy it was sent; one call = one unroll of T steps."""

    def __init__(self, env_id: str, num_envs: int, unroll_length: int, cfg: dict, seed: int,
                 use_envpool: bool = False):
        torch.set_num_threads(1)
        torch.manual_seed(seed)
        if use_envpool:  # E games in EnvPool's C++ pool (one thread: this process has one CPU)
            self.envs, self.pool = [], EnvPoolAtari(env_id, num_envs, dim=cfg.get("dim", 42), seed=seed)
            self.model = build_model(self.pool, cfg)
            self.obs = self.pool.reset()[0]
        else:
            self.envs, self.pool = [make_env(env_id, cfg.get("dim", 42)) for _ in range(num_envs)], None
            self.model = build_model(self.envs[0], cfg)
            self.obs = np.stack([env.reset(seed=seed + i)[0] for i, env in enumerate(self.envs)])
        self.alg = IMPALA(self.model, sample_batch_steps=unroll_length, gamma=cfg["gamma"], device="cpu")
        self.unroll_length = unroll_length
        self.num_envs = num_envs
        self.gamma = cfg["gamma"]

    def pid(self) -> int:
        """This actor's process id (the fault test kills it)."""
        return os.getpid()

    def sample(self, weights: dict | None) -> dict:
        """Load ``weights`` (``{name: ndarray}``, or None to keep the current ones), play one unroll.

        Returns:
            ``obs [T, E, *obs_shape]`` (env dtype), ``actions`` int64 ``[T, E]``, ``behaviour_logits``
            float32 ``[T, E, A]``, ``rewards`` float32 ``[T, E]`` (at a time limit plus ``gamma * V(final
            state)``), ``dones`` bool ``[T, E]``
            (terminated or truncated), ``episode_returns`` float64 ``[n]`` of the episodes that ended,
            ``t_start`` / ``t_end`` (``time.time()`` s when the call began / the unroll was done).
        """
        t_start = time.time()
        if weights is not None:
            self.model.set_weights(weights)
        T, E = self.unroll_length, self.num_envs
        obs = np.empty((T, *self.obs.shape), self.obs.dtype)
        actions = np.empty((T, E), np.int64)
        rewards = np.empty((T, E), np.float32)
        dones = np.empty((T, E), bool)
        logits = None
        with torch.inference_mode():
            for t in range(T):
                obs[t] = self.obs
                probs, logit = self.alg.sample(torch.from_numpy(self.obs).float())
                if logits is None:
                    logits = np.empty((T, E, logit.shape[1]), np.float32)
                logits[t] = logit.cpu().numpy()
                actions[t] = torch.multinomial(probs, 1).squeeze(1).cpu().numpy()
                if self.pool is not None:  # same-step auto-reset, as the loop below
                    self.obs, rewards[t], terminated, truncated, _ = self.pool.step(actions[t])
                    dones[t] = terminated | truncated
                cut, cut_obs = [], []
                for i, env in enumerate(self.envs):
                    next_obs, reward, terminated, truncated, _ = env.step(int(actions[t, i]))
                    if truncated and not terminated:  # a time limit, not a failure: bootstrap from its state
                        cut.append(i)
                        cut_obs.append(next_obs)
                    if terminated or truncated:
                        next_obs, _ = env.reset()
                    self.obs[i] = next_obs
                    rewards[t, i] = reward
                    dones[t, i] = terminated or truncated
                if cut:
                    # the episode ends in the unroll (done), but its last reward carries gamma * V(final state),
                    # as if the value of what follows the time limit were received: CartPole's 500-step limit
                    # seen as a failure makes the last ~100 steps of every best episode look bad, which can
                    # drive the policy to one action for good (about 1 run in 6 did before)
                    values = self.model.value(torch.from_numpy(np.stack(cut_obs)).float()).reshape(-1)
                    rewards[t, cut] += self.gamma * values.cpu().numpy()
        if self.pool is not None:
            returns = [r for r, _ in self.pool.next_episode_results()]
        else:
            returns = [r for env in self.envs for r, _ in get_wrapper_by_cls(env, MonitorEnv).next_episode_results()]
        return dict(obs=obs, actions=actions, behaviour_logits=logits, rewards=rewards, dones=dones,
                    episode_returns=np.asarray(returns, np.float64), t_start=t_start, t_end=time.time())


def evaluate(alg, env_id: str, cfg: dict, seed: int) -> list[float]:
    """Returns of EVAL_EPISODES greedy episodes (the learner's current policy), played in lockstep."""
    envs = [make_env(env_id, cfg.get("dim", 42)) for _ in range(EVAL_EPISODES)]
    obs = np.stack([env.reset(seed=seed + 10_000 + i)[0] for i, env in enumerate(envs)])
    returns = np.zeros(EVAL_EPISODES)
    done = np.zeros(EVAL_EPISODES, bool)
    with torch.inference_mode():
        while not done.all():
            actions = alg.predict(torch.from_numpy(obs).float()).cpu().numpy()
            for i, env in enumerate(envs):
                if done[i]:
                    continue
                obs[i], reward, terminated, truncated, _ = env.step(int(actions[i]))
                returns[i] += reward
                done[i] = terminated or truncated
    return returns.tolist()


def env_major(x: np.ndarray) -> np.ndarray:
    """[T, E, ...] -> [E * T, ...] (row e * T + t: each env's T steps in a row), the layout IMPALA.learn
    expects (PARL's); a writable array (a received array is a read-only view of the message, which torch
    warns about)."""
    x = x.swapaxes(0, 1).reshape(x.shape[0] * x.shape[1], *x.shape[2:])
    return x if x.flags.writeable else x.copy()


def save_checkpoint(path: str, alg: IMPALA, lr_schedule: PiecewiseScheduler | None, state: dict) -> None:
    """The learner's state as one file, replaced whole (``parl.utils.atomic_write``: a kill during the save leaves
    the previous checkpoint): model and Adam state, the lr schedule's position, torch's RNG, and ``state`` (the
    counters, the recent returns, the run's settings)."""
    payload = {"format": 1, "model": alg.model.state_dict(), "optimizer": alg.optimizer.state_dict(),
               "lr_step": lr_schedule.cur_step if lr_schedule is not None else 0,
               "torch_rng": torch.get_rng_state(), **state}
    with atomic_write(path) as f:
        torch.save(payload, f)


def load_checkpoint(path: str, run: dict) -> dict:
    """The payload of :func:`save_checkpoint` at ``path``, loaded without unpickling code (``weights_only``).

    Raises:
        SystemExit: the file is missing or not such a checkpoint, or its run's settings differ from ``run``.
    """
    if not os.path.isfile(path):
        raise SystemExit(f"--resume: no checkpoint at {path}; pass the --logdir of a run of this example "
                         f"(it writes {CHECKPOINT} every --checkpoint-every minutes and when it stops)")
    try:
        payload = torch.load(path, weights_only=True)
    except Exception as err:  # torch raises RuntimeError, EOFError, pickle errors, ... on a damaged file
        raise SystemExit(f"--resume: {path} is not a readable checkpoint of this example ({type(err).__name__}); "
                         f"resume from another run's folder, or start afresh without --resume") from None
    if not isinstance(payload, dict) or payload.get("format") != 1:
        raise SystemExit(f"--resume: {path} is not a checkpoint of this example (format 1)")
    there_run = dict(payload["run"])
    if is_atari(run["env"]):
        there_run["config"] = FORMER_NAMES.get(there_run.get("config"), there_run.get("config"))
    differ = {key: (there_run.get(key), run[key]) for key in RUN_KEYS if there_run.get(key) != run[key]}
    if differ:
        listed = ", ".join(f"{key}: {there!r} there, {here!r} here" for key, (there, here) in differ.items())
        raise SystemExit(f"--resume: {path} is a run of other settings ({listed}); give the same options as that run")
    return payload


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--env", default="CartPole-v1")
    parser.add_argument("--actors", type=int, default=2, help="number of remote actors")
    parser.add_argument("--address", default=None,
                        help="HOST:PORT of an xparl cluster, or ray / ray://HOST:10001 for a Ray cluster "
                             "(default: an embedded xparl cluster)")
    parser.add_argument("--envs-per-actor", type=int, default=None)
    parser.add_argument("--unroll-length", type=int, default=None, help="T, steps per unroll")
    parser.add_argument("--lr", type=float, default=None, help="initial learning rate (default per env)")
    parser.add_argument("--inflight", type=int, default=2, help="calls queued on each actor")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--device", default=None,
                        help="torch device of the learner: cpu, cuda, cuda:1  [default: cuda when available]")
    parser.add_argument("--logdir", default=None, help="default: runs/impala/<env>-seed<seed>")
    parser.add_argument("--total-steps", type=int, default=None, help="env-step budget (default per env)")
    parser.add_argument("--target-return", type=float, default=None, help="stop once eval reaches it")
    parser.add_argument("--config", choices=ATARI_CONFIGS, default=None,
                        help="Atari only: 'parl' (default) runs PARL's impala_config.py (its model, 5 envs per actor, "
                             "learner batches of 1,000 steps, lr 1e-3 for 20k updates); 'per-unroll' this example's "
                             "earlier settings (8 envs per actor, an update per unroll, lr decayed over the budget)")
    parser.add_argument("--train-batch-size", type=int, default=None,
                        help="env steps per learner update, gathered from several unrolls (default: each actor's "
                             "unroll batch, E x T; --config parl: 1000)")
    parser.add_argument("--envpool", action="store_true",
                        help="Atari: actors step their games in EnvPool (pip install 'parl-core[envpool]')")
    parser.add_argument("--resume", default=None, metavar="DIR",
                        help="go on with the run whose --logdir is DIR, from its checkpoint.pt (its log files go on)")
    parser.add_argument("--checkpoint-every", type=float, default=10.0, metavar="MIN",
                        help="minutes between two checkpoints (also written when the run stops: budget, Ctrl-C, "
                             "SIGTERM); 0: only then")
    parser.add_argument("--no-progress", action="store_true", help="hide the progress bar")
    args = parser.parse_args()
    if args.envpool and not is_atari(args.env):
        parser.error(f"--envpool runs Atari games ('<Game>NoFrameskip-v4'), not {args.env}")
    if args.envpool and not envpool_available():
        parser.error(INSTALL_HINT)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s %(levelname)s %(message)s")
    if args.config is not None and not is_atari(args.env):
        parser.error(f"--config {args.config} is an Atari configuration ('<Game>NoFrameskip-v4'), not for {args.env}; "
                     f"leave --config out")
    config = (args.config or ATARI_CONFIGS[0]) if is_atari(args.env) else "default"
    cfg = dict(CONFIGS[f"atari-{config}" if is_atari(args.env) else "vector"])
    if is_minatar(args.env):  # MinAtar games: the small-env settings, no return target (scores differ per game)
        cfg.update(total_steps=5_000_000, target_return=float("inf"), eval_trigger=float("inf"))
    if args.lr is not None:
        cfg["lr"] = cfg["lr_final"] = args.lr
        cfg.pop("lr_schedule", None)
    E = args.envs_per_actor or cfg["envs_per_actor"]
    T = args.unroll_length or cfg["unroll_length"]
    train_batch = args.train_batch_size or cfg.get("train_batch_size") or E * T
    if train_batch % T:
        parser.error(f"--train-batch-size must be a multiple of the unroll length {T}, got {train_batch}")
    lr_schedule = PiecewiseScheduler(cfg["lr_schedule"]) if "lr_schedule" in cfg else None
    total_steps = args.total_steps or cfg["total_steps"]
    target = cfg["target_return"] if args.target_return is None else args.target_return
    if args.checkpoint_every < 0:
        parser.error(f"--checkpoint-every must be >= 0 minutes, got {args.checkpoint_every}")
    logdir = args.resume or args.logdir or os.path.join("runs", "impala",
                                                        f"{args.env.replace('/', '_')}-seed{args.seed}")
    run = dict(env=args.env, config=config, envs_per_actor=E, unroll_length=T, train_batch_size=train_batch,
               seed=args.seed, envpool=args.envpool)
    resumed = load_checkpoint(os.path.join(logdir, CHECKPOINT), run) if args.resume else None
    os.makedirs(logdir, exist_ok=True)
    summary.set_logdir(logdir)
    torch.set_num_threads(1)
    torch.manual_seed(args.seed)
    start = time.perf_counter() - (resumed["wall_s"] if resumed else 0.0)  # a resumed run's clock goes on
    signal.signal(signal.SIGTERM, signal.default_int_handler)  # SIGTERM stops the run as Ctrl-C does

    probe = EnvPoolAtari(args.env, 1, dim=cfg["dim"]) if args.envpool else make_env(args.env, cfg.get("dim", 42))
    model = build_model(probe, cfg)
    probe.close()
    alg = IMPALA(model, sample_batch_steps=T, gamma=cfg["gamma"], vf_loss_coeff=0.5,
                                 clip_rho_threshold=1.0, clip_pg_rho_threshold=1.0, learning_rate=cfg["lr"],
                 device=args.device)
    if resumed:
        model.load_state_dict(resumed["model"])
        alg.optimizer.load_state_dict(resumed["optimizer"])
        torch.set_rng_state(resumed["torch_rng"])
        if lr_schedule is not None:
            lr_schedule.cur_step = resumed["lr_step"]
    if args.address is None:  # one CPU per actor, plus one for a replacement while a dead actor's is freed
        # the embedded cluster forks its jobs with the actor's heavy imports done once (XPARL_PRELOAD)
        os.environ.setdefault("XPARL_PRELOAD", "torch,gymnasium,parl_core.torch,parl_algorithms.torch")
        parl.connect(cpu_num=args.actors + 1)
    else:
        parl.connect(args.address)

    spawned = [resumed["spawned"] if resumed else 0]  # actors made; a resumed run's draw seeds not used before
    spawn_lock = threading.Lock()  # the pool starts its first actors in parallel threads

    def new_actor(slot: int) -> Actor:
        with spawn_lock:
            index, spawned[0] = spawned[0], spawned[0] + 1
        actor = Actor(args.env, E, T, cfg, args.seed * 1000 + 100 * index, args.envpool)
        logger.info("actor %d started in slot %d, pid=%d", index, slot, actor.pid().result())
        return actor

    # a dead actor (ActorDiedError) is logged with its cause and replaced by the pool, and its unanswered calls go
    # to the replacement; `sample` reads the latest weights when a call is (re)sent
    actors = ActorPool(new_actor, args.actors, logger=logger)
    weights = model.get_weights()

    def sample(actor: Actor) -> concurrent.futures.Future:
        return actor.sample(weights)

    for slot in range(args.actors):
        for _ in range(args.inflight):
            actors.submit(sample, slot=slot)

    env_steps, updates, replaced_before = (resumed["env_steps"], resumed["updates"], resumed["replaced"]) \
        if resumed else (0, 0, 0)
    recent = deque(resumed["recent"] if resumed else (), maxlen=20)
    eval_returns: list[float] = []
    reached = False
    buffer: list[dict] = []  # unrolls gathered toward the next learner batch of `train_batch` steps
    lr = cfg["lr"]
    curve_path = os.path.join(logdir, "curve.csv")
    if resumed:  # the curve goes on from the checkpoint: games logged after it are played again
        with open(curve_path, newline="") as f:
            rows = [row for row in csv.reader(f)]
        with atomic_write(curve_path, "w") as f:
            csv.writer(f).writerows([rows[0], *(r for r in rows[1:] if int(r[0]) <= env_steps)])
        logger.info("resumed %s at %d env steps, %d updates", logdir, env_steps, updates)
    curve = open(curve_path, "a" if resumed else "w", newline="")
    writer = csv.writer(curve)
    if not resumed:
        writer.writerow(["env_steps", "wall_s", "episode_return"])
    last_checkpoint = time.monotonic()

    def checkpoint() -> None:
        curve.flush()
        save_checkpoint(os.path.join(logdir, CHECKPOINT), alg, lr_schedule,
                        dict(run=run, env_steps=env_steps, updates=updates,
                             replaced=replaced_before + actors.replacements, spawned=spawned[0],
                             recent=list(recent), wall_s=time.perf_counter() - start))
    bar = tqdm(total=total_steps, initial=env_steps, disable=args.no_progress, unit="step", smoothing=0.05)
    interrupted = False
    try:
        while env_steps < total_steps and not reached:
            task = actors.next_completed()
            batch = task.result()
            buffer.append(batch)
            steps = batch["rewards"].size
            env_steps += steps
            wall_s = time.perf_counter() - start
            for ret in batch["episode_returns"]:
                recent.append(float(ret))
                writer.writerow([env_steps, round(wall_s, 3), float(ret)])
                summary.add_scalar("train/episode_return", float(ret), env_steps)
            if len(batch["episode_returns"]):
                curve.flush()
            if sum(b["rewards"].size for b in buffer) >= train_batch:
                if lr_schedule is not None:  # PARL: a value per learner update
                    lr = lr_schedule.step()
                else:
                    lr = cfg["lr"] + (cfg["lr_final"] - cfg["lr"]) * min(env_steps / total_steps, 1.0)
                alg.learn(*(np.concatenate([env_major(b[key]) for b in buffer])
                            for key in ("obs", "actions", "behaviour_logits", "rewards", "dones")),
                          lr, cfg["entropy_coeff"])
                buffer.clear()
                weights = model.get_weights()
                updates += 1
                if args.checkpoint_every and time.monotonic() - last_checkpoint >= 60 * args.checkpoint_every:
                    checkpoint()
                    last_checkpoint = time.monotonic()
                if updates % 10 == 0:
                    for key, value in alg.get_info().items():
                        summary.add_scalar(key, value, env_steps)
                    summary.add_scalar("train/lr", lr, env_steps)
                    summary.add_scalar("time/env_steps_per_s", env_steps / wall_s, env_steps)
            actors.submit(sample, slot=task.slot)  # its next unroll, with the latest weights
            bar.update(steps)
            bar.set_postfix(fps=f"{env_steps / wall_s:.0f}", ret=f"{np.mean(recent) if recent else 0:.1f}",
                            refresh=False)
            if recent and np.mean(recent) >= cfg["eval_trigger"] and len(recent) >= 10 and updates % 5 == 0:
                eval_returns = evaluate(alg, args.env, cfg, args.seed)
                summary.add_scalar("eval/return_mean", float(np.mean(eval_returns)), env_steps)
                reached = float(np.mean(eval_returns)) >= target
    except KeyboardInterrupt:  # Ctrl-C / SIGINT / SIGTERM: stop, and still write the checkpoint and the summary
        interrupted = True
    checkpoint()  # the unrolls gathered toward an unfinished learner batch are not in it
    bar.close()
    curve.close()
    wall_s = time.perf_counter() - start
    if not eval_returns or not reached:
        if is_atari(args.env):  # greedy Atari games take minutes: report the last training games instead
            eval_returns = list(recent)[-EVAL_EPISODES:]
        else:
            eval_returns = evaluate(alg, args.env, cfg, args.seed)
    result = {
        "device": str(alg.device),
        "env": args.env, "algorithm": "IMPALA", "seed": args.seed, "actors": args.actors, "envs_per_actor": E,
        "unroll_length": T, "train_batch_size": train_batch, "config": config, "envpool": args.envpool,
        "eval_return_mean": float(np.mean(eval_returns)) if eval_returns else float("nan"),
        "eval_episodes": len(eval_returns), "eval_source": "train_episodes" if is_atari(args.env) else "greedy",
        "env_steps": env_steps, "updates": updates, "wall_s": round(wall_s, 3),
        "env_steps_per_s": round(env_steps / wall_s, 1), "actors_replaced": replaced_before + actors.replacements,
        "reached": reached,
        "interrupted": interrupted, "resumed": bool(resumed), "target_return": target,
        "loadavg": open("/proc/loadavg").read().split()[:3],
    }
    summary.add_scalar("eval/return_mean", result["eval_return_mean"], env_steps)
    summary.flush()
    with open(os.path.join(logdir, "summary.json"), "w") as f:
        json.dump(result, f, indent=2)
    print(json.dumps(result))
    parl.disconnect()


if __name__ == "__main__":
    main()
