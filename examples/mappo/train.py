"""MAPPO with a centralised critic and PopArt on the multi-agent envs (mpe2, LBF, RWARE), collected in-process or
on remote actors; PARL's benchmark/torch/mappo recipe with parl.algorithms.MAPPO.

Algorithm box (Yu et al. 2022, "The Surprising Effectiveness of PPO in Cooperative Multi-Agent Games"; PopArt:
van Hasselt et al. 2016):

    policies: one MAPPO shared by every agent (the agent's one-hot id appended to its obs and to the state) or,
        with --separate-params, one MAPPO per agent (PARL's example); actor pi(a_i | o_i), critic V(s) on the
        global state (PARL's share_obs), both Linear-LayerNorm-tanh 64-64 (PARL's SimpleModel)
    collectors (--actors 0: one in this process; --actors N: N ``@parl.remote_class`` processes on the cluster),
        each owning a MultiAgentVectorEnv of E envs and a copy of the policies:
        sample(weights): load the weights, play T steps of its E envs with every agent's actions drawn in one
            batched forward pass per policy, return the unroll [T, E, n_agents, ...] as numpy (obs, state,
            available actions, actions, log-probs, normalised values, rewards, terminated / truncated, and
            V(final state) where an episode ended)
    learner (this process), for each update:
        send the weights with every collector's sample() call and wait for all of them (synchronous)
        returns: GAE(gamma, lambda) on PopArt-denormalised values; a time limit bootstraps from V(final state)
        advantages normalised over the batch (PARL's agent); for `--ppo-epoch` epochs, `--num-mini-batch`
            minibatches: MAPPO.learn (clipped surrogate + entropy on the actor, clipped Huber value loss on
            PopArt-normalised returns on the critic, separate Adams, gradients clipped at 10)
        a dead collector (ActorDiedError) is logged with its cause and replaced; its unroll is asked again
            (parl_remote.ActorPool)
    every --eval-every env steps: --eval-episodes deterministic (argmax / mean) episodes

Metrics: MPE returns are PER AGENT (the team's summed return / n_agents, PARL's MAPPO metric; spread with
local_ratio=0 gives every agent the same global reward), LBF and RWARE returns are the TEAM's (summed over agents,
EPyMARL's); ``summary.json`` names the unit (``reward_unit``).

Usage::

    python examples/mappo/train.py --seed 0                                    # spread, in-process collection
    python examples/mappo/train.py --actors 2 --seed 0                          # 2 collectors, embedded cluster
    xparl start --port 8010 --cpu-num 4 && python examples/mappo/train.py --actors 4 --address localhost:8010
    python examples/mappo/train.py --env mpe2:simple_speaker_listener_v4 --total-steps 2000000
    python examples/mappo/train.py --env Foraging-8x8-2p-2f-coop-v3 --separate-params
    python examples/mappo/train.py --backend paddle --total-steps 200000

    # killed, pre-empted or stopped with Ctrl-C: the same command with --resume continues it
    python examples/mappo/train.py --seed 0 --resume runs/mappo/mpe2_simple_spread_v3-seed0

Writes ``<logdir>/summary.json``, ``<logdir>/curve.csv`` (env_steps, wall_s, eval_return_mean, train_return_mean),
tensorboard scalars and, at the end, ``<logdir>/checkpoint/agent_<i>.ckpt`` (``--restore <that directory>`` starts
a run from these weights). Long runs (docs/long_runs.md): ``<logdir>/checkpoint.npz`` every ``--checkpoint-every``
minutes, on SIGTERM / Ctrl-C and at the end, between two updates: the MAPPOs (networks, both Adams, PopArt's
statistics), the minibatch generator, counters, recent returns, the process-wide generators, the curve's length
and the clock. In-process it also holds what rebuilds each env's episode so far (:class:`Replayable`: mpe2's
worlds and LBF's / RWARE's grids live in objects a checkpoint cannot hold), and ``--resume`` ends bit for bit as
the uninterrupted run. With ``--actors`` the envs live in the collectors' processes: a resumed run continues the
learner, optimizers, counters and curve, but its collectors start new episodes with new seeds (not bit-exact).
"""

from __future__ import annotations

import argparse
import importlib
import json
import os
import time

import numpy as np
from tqdm import tqdm

import parl
from parl.env.multiagent import MultiAgentVectorEnv, make_multiagent_env
from parl.utils import Checkpointer, RunLog, add_run_args, logger
from parl_algorithms.algorithms import mappo as _mappo

# PARL's benchmark/torch/mappo/train.py (the MAPPO paper's MPE settings)
LR = 7e-4
VALUE_LOSS_COEF = 1.0
ENTROPY_COEF = 0.01
HUBER_DELTA = 10.0
EPS = 1e-5
MAX_GRAD_NORM = 10.0
CLIP_PARAM = 0.2
GAMMA = 0.99
GAE_LAMBDA = 0.95
HIDDEN = 64
# PARL: 128 serial envs x 25 steps per update and 15 epochs of 1 minibatch. On a 2-core machine the envs are
# stepped serially anyway (one core, ~0.26 ms per spread step) and the update of a 32-env batch (2,400 agent
# rows x 15 epochs) costs about as much as collecting it: 32 envs give 4x PARL's updates per env step at the same
# per-step cost of collection + training, which is what a budget of a few million steps needs (see README).
NUM_ENVS = 32
UNROLL_LENGTH = 25
PPO_EPOCH = 15
NUM_MINI_BATCH = 1

# env id -> (make_multiagent_env kwargs, metric): "per_agent" (team return / n_agents) or "team" (summed)
ENVS = {
    "mpe2:simple_spread_v3": (dict(N=3, local_ratio=0.0, max_cycles=25), "per_agent"),
    "mpe2:simple_speaker_listener_v4": (dict(max_cycles=25), "per_agent"),
    "mpe2:simple_reference_v3": (dict(max_cycles=25), "per_agent"),
}


def env_setup(env_id: str, continuous_actions: bool) -> tuple[dict, str]:
    """``(make_multiagent_env kwargs, metric)`` of an env id: PARL's scenario settings for MPE, the env's own
    defaults for LBF / RWARE (team returns)."""
    if env_id in ENVS:
        kwargs, metric = ENVS[env_id]
        return dict(kwargs, continuous_actions=continuous_actions), metric
    if env_id.startswith("mpe2:"):
        return dict(max_cycles=25, continuous_actions=continuous_actions), "per_agent"
    if continuous_actions:
        raise SystemExit(f"--continuous-actions is for the mpe2 scenarios; {env_id} has Discrete actions")
    return {}, "team"


def define_model(backend: str, _defined: dict = {}) -> type:  # noqa: B006 (the cache; a plain function ships to actors)
    """``MAPPOModel`` on ``backend`` (``"torch"`` or ``"paddle"``), which it selects first; defined once per backend."""
    if backend in _defined:
        return _defined[backend]
    parl.set_backend(backend)
    nn = importlib.import_module(backend).nn
    ops = importlib.import_module(f"parl_algorithms.{backend}.ops")

    def tanh(x):
        return x.tanh()

    class Actor(parl.Model):
        """PARL's Actor: LayerNorm(obs), tanh(Linear 64), LayerNorm, tanh(Linear 64), output layer; a Box policy
        adds a state-independent log-std (the MAPPO repo's DiagGaussian)."""

        def __init__(self, obs_dim: int, act_dim: int, continuous: bool):
            super().__init__()
            self.multi_discrete = False  # (PARL's contract; the envs here have Discrete or Box actions)
            self.continuous_action = continuous
            self.ln1, self.ln2 = nn.LayerNorm(obs_dim), nn.LayerNorm(HIDDEN)
            self.fc1, self.fc2 = nn.Linear(obs_dim, HIDDEN), nn.Linear(HIDDEN, HIDDEN)
            self.fc3 = nn.Linear(HIDDEN, act_dim)
            if continuous:
                self.log_std = ops.zeros_parameter(self, [act_dim])

        def forward(self, obs):
            x = self.ln2(tanh(self.fc1(self.ln1(obs))))
            out = self.fc3(tanh(self.fc2(x)))
            return (out, self.log_std.exp()) if self.continuous_action else out

    class Critic(parl.Model):
        """PARL's Critic on the centralised observation; ``v_out`` is the layer PopArt rescales."""

        def __init__(self, cent_obs_dim: int):
            super().__init__()
            self.ln1, self.ln2 = nn.LayerNorm(cent_obs_dim), nn.LayerNorm(HIDDEN)
            self.fc1, self.fc2 = nn.Linear(cent_obs_dim, HIDDEN), nn.Linear(HIDDEN, HIDDEN)
            self.v_out = nn.Linear(HIDDEN, 1)

        def forward(self, cent_obs):
            x = self.ln2(tanh(self.fc1(self.ln1(cent_obs))))
            return self.v_out(tanh(self.fc2(x)))

    class MAPPOModel(parl.Model):
        """PARL's SimpleModel: ``policy(obs [B, obs_dim])`` -> logits [B, act_dim] (or (mean, std)),
        ``value(cent_obs [B, cent_obs_dim])`` -> float32 [B, 1]."""

        def __init__(self, obs_dim: int, cent_obs_dim: int, act_dim: int, continuous: bool = False):
            super().__init__()
            self.act_dim = act_dim
            self.actor = Actor(obs_dim, act_dim, continuous)
            self.critic = Critic(cent_obs_dim)

        def policy(self, obs):
            return self.actor(obs)

        def value(self, cent_obs):
            return self.critic(cent_obs)

    _defined[backend] = MAPPOModel
    return MAPPOModel


class Policies:
    """Every agent's MAPPO: one shared by all agents (``shared``; agent ids appended to obs and state) or one per
    agent; batched over envs and agents (one forward pass per MAPPO per step).

    Args:
        spec: ``{"backend", "shared", "n_agents", "obs_dim", "state_dim", "act_dim", "continuous", "use_popart"}``.
        device: the learner's device (collectors: ``"cpu"``).
    """

    def __init__(self, spec: dict, device: str | None = None):
        self.spec, self.shared, self.n = spec, spec["shared"], spec["n_agents"]
        self.continuous = spec["continuous"]
        Model = define_model(spec["backend"])
        self.ops = importlib.import_module(f"parl_algorithms.{spec['backend']}.ops")
        MAPPO = importlib.import_module(f"parl_algorithms.{spec['backend']}").MAPPO
        extra = self.n if self.shared else 0
        self.algs = [MAPPO(Model(spec["obs_dim"] + extra, spec["state_dim"] + extra, spec["act_dim"],
                                 self.continuous),
                           CLIP_PARAM, VALUE_LOSS_COEF, ENTROPY_COEF, LR, HUBER_DELTA, EPS, MAX_GRAD_NORM,
                           use_popart=spec["use_popart"], device=device)
                     for _ in range(1 if self.shared else self.n)]

    def inputs(self, obs: np.ndarray, state: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """``obs [..., n, obs_dim]``, ``state [..., state_dim]`` -> the actors' and critics' inputs
        ``[..., n, *]`` (with agent ids when shared)."""
        cent = _mappo.central_obs(state, self.n)
        if self.shared:
            return _mappo.with_agent_ids(obs), _mappo.with_agent_ids(cent)
        return np.asarray(obs, np.float32), np.ascontiguousarray(cent)

    def groups(self):
        """``(algorithm, agent index or slice)`` pairs: the shared MAPPO takes every agent."""
        if self.shared:
            return [(self.algs[0], slice(None))]
        return [(alg, i) for i, alg in enumerate(self.algs)]

    def act(self, obs, state, avail, deterministic=False):
        """``(values [E, n], actions [E, n] int64 or [E, n, act_dim] float32, log_probs [E, n])`` (numpy)."""
        obs_in, cent_in = self.inputs(obs, state)
        E = obs.shape[0]
        values = np.empty((E, self.n), np.float32)
        log_probs = np.empty((E, self.n), np.float32)
        actions = np.empty((E, self.n, self.spec["act_dim"]) if self.continuous else (E, self.n),
                           np.float32 if self.continuous else np.int64)
        with self.ops.no_grad():
            for alg, agents in self.groups():
                o, c = obs_in[:, agents], cent_in[:, agents]
                rows = o.shape[0] * (self.n if self.shared else 1)
                av = None if self.continuous else avail[:, agents].reshape(rows, -1)
                v, a, lp = alg.sample(c.reshape(rows, -1), o.reshape(rows, -1), deterministic, available_actions=av)
                shape = (E, self.n) if self.shared else (E,)
                values[:, agents] = self.ops.to_numpy(v).reshape(shape)
                log_probs[:, agents] = self.ops.to_numpy(lp).reshape(shape)
                actions[:, agents] = self.ops.to_numpy(a).reshape(shape + actions.shape[2:])
        return values, actions, log_probs

    def value(self, state: np.ndarray) -> np.ndarray:
        """Normalised values float32 ``[E, n]`` of states ``[E, state_dim]``."""
        _, cent_in = self.inputs(np.zeros((state.shape[0], self.n, self.spec["obs_dim"]), np.float32), state)
        out = np.empty((state.shape[0], self.n), np.float32)
        with self.ops.no_grad():
            for alg, agents in self.groups():
                c = cent_in[:, agents]
                out[:, agents] = self.ops.to_numpy(alg.value(c.reshape(-1, c.shape[-1]))).reshape(out[:, agents].shape)
        return out

    def denormalize(self, values: np.ndarray) -> np.ndarray:
        """Values ``[..., n]`` in return units (PopArt's ``denormalize`` of each agent's MAPPO)."""
        if not self.spec["use_popart"]:
            return values
        out = np.empty_like(values)
        for alg, agents in self.groups():
            out[..., agents] = alg.value_normalizer.denormalize(values[..., agents])
        return out

    def get_weights(self) -> list[dict]:
        return [alg.model.get_weights() for alg in self.algs]

    def set_weights(self, weights: list[dict]) -> None:
        for alg, w in zip(self.algs, weights, strict=True):
            alg.model.set_weights(w)


class Replayable:
    """A ``MultiAgentEnv`` (whose attributes it has) that keeps what rebuilds its episode so far: the seed, or the
    state of its ``np_random``, that its last ``reset`` started from, and the actions since. The envs draw only from
    ``np_random``, so :meth:`replay` rebuilds the env as it was, bit for bit, worlds and grids included."""

    def __init__(self, env):
        self.env, self.start, self.actions = env, {}, []

    def __getattr__(self, name: str):
        return getattr(self.env, name)

    def reset(self, seed: int | None = None):
        self.start = {"seed": seed, "rng": None if seed is not None else self.env.np_random.bit_generator.state}
        self.actions = []
        return self.env.reset(seed=seed)

    def step(self, actions):
        self.actions.append(np.array(actions))
        return self.env.step(actions)

    def state_dict(self) -> dict:
        """``{"start": {"seed", "rng"}, "actions": int64 [k, n_agents] or float32 [k, n_agents, act_dim]}``: the
        episode's k steps so far."""
        return {"start": self.start, "actions": np.array(self.actions)}

    def replay(self, state: dict) -> tuple:
        """Play the episode of a :meth:`state_dict` again; returns its last ``reset`` or ``step`` result."""
        if state["start"]["rng"] is not None:
            self.env.np_random.bit_generator.state = state["start"]["rng"]
        out = self.reset(state["start"]["seed"])
        for action in state["actions"]:
            out = self.step(action)
        return out


class Collector:
    """E envs and a copy of the policies; one ``sample`` call = one unroll of T steps (in this process or, as
    :class:`Actor`, in a process of its own).

    Args:
        env_id, env_kwargs: ``make_multiagent_env(env_id, **env_kwargs)``.
        num_envs: E.
        unroll_length: T.
        spec: the :class:`Policies` spec.
        seed: env e is reset with ``seed + e``; the policy's sampling is seeded with ``seed``.
        policies: share these policies (in-process collection) instead of building a copy.
    """

    def __init__(self, env_id: str, env_kwargs: dict, num_envs: int, unroll_length: int, spec: dict, seed: int,
                 policies: Policies | None = None):
        if policies is None:
            define_model(spec["backend"])
            importlib.import_module(f"parl_algorithms.{spec['backend']}.ops").seed(seed)  # also 1 torch thread
            policies = Policies(spec, device="cpu")
        self.policies, self.T = policies, unroll_length
        self.envs = MultiAgentVectorEnv([lambda: Replayable(make_multiagent_env(env_id, **env_kwargs))
                                         for _ in range(num_envs)])
        _mappo.check_n_agents(self.envs.n_agents, policies=spec["n_agents"])
        self.obs, info = self.envs.reset(seed=seed)
        self.state, self.avail = info["state"], info["avail_actions"]
        self.low, self.high = self.envs.action_low, self.envs.action_high
        self.ep_return = np.zeros((num_envs, self.envs.n_agents), np.float32)

    def pid(self) -> int:
        """This collector's process id (a test kills it)."""
        return os.getpid()

    def sample(self, weights: list[dict] | None = None) -> dict:
        """Load ``weights`` (one ``{name: ndarray}`` per MAPPO) if given and play T steps of the E envs.

        Returns:
            numpy arrays: ``obs`` float32 ``[T, E, n, obs_dim]``, ``state`` ``[T, E, state_dim]``, ``avail`` bool
            ``[T, E, n, n_actions]``, ``actions`` int64 ``[T, E, n]`` / float32 ``[T, E, n, act_dim]`` (unclipped),
            ``log_probs``, ``rewards`` float32 ``[T, E, n]``, ``values`` ``[T + 1, E, n]`` (normalised; the last
            row bootstraps), ``final_values`` ``[T, E, n]`` (V(final state) where an episode ended at t, else 0),
            ``terminated`` / ``truncated`` bool ``[T, E]``, ``episode_returns`` float32 ``[k, n]`` of the k
            episodes that ended.
        """
        if weights is not None:
            self.policies.set_weights(weights)
        T, E, n = self.T, self.envs.num_envs, self.envs.n_agents
        out = dict(obs=np.empty((T, E, n, self.envs.obs_dim), np.float32),
                   state=np.empty((T, E, self.envs.state_dim), np.float32),
                   avail=np.empty((T, E, n, self.envs.n_actions), bool),
                   log_probs=np.empty((T, E, n), np.float32), rewards=np.empty((T, E, n), np.float32),
                   values=np.empty((T + 1, E, n), np.float32), final_values=np.zeros((T, E, n), np.float32),
                   terminated=np.empty((T, E), bool), truncated=np.empty((T, E), bool))
        actions, returns = [], []
        for t in range(T):
            out["obs"][t], out["state"][t], out["avail"][t] = self.obs, self.state, self.avail
            out["values"][t], action, out["log_probs"][t] = self.policies.act(self.obs, self.state, self.avail)
            actions.append(action)
            if self.policies.continuous:
                action = np.clip(action, self.low, self.high)
            self.obs, out["rewards"][t], out["terminated"][t], out["truncated"][t], info = self.envs.step(action)
            self.state, self.avail = info["state"], info["avail_actions"]
            self.ep_return += out["rewards"][t]
            ended = out["terminated"][t] | out["truncated"][t]
            if ended.any():
                returns.append(self.ep_return[ended])
                self.ep_return[ended] = 0.0
                out["final_values"][t, ended] = self.policies.value(info["final_state"][ended])
        out["values"][T] = self.policies.value(self.state)
        out["actions"] = np.stack(actions)
        out["episode_returns"] = np.concatenate(returns) if returns else np.zeros((0, n), np.float32)
        return out

    def state_dict(self) -> dict:
        """Between two ``sample`` calls, what the next depends on besides the policies and torch's generator: each
        env's episode so far (:meth:`Replayable.state_dict`) and the running returns float32 ``[E, n]``."""
        return {"envs": [env.state_dict() for env in self.envs.envs], "ep_return": self.ep_return.copy()}

    def load_state_dict(self, state: dict) -> None:
        """Replay each env's episode of a :meth:`state_dict` (ValueError: another number of envs)."""
        for e, (env, saved) in enumerate(zip(self.envs.envs, state["envs"], strict=True)):
            obs, *_, info = env.replay(saved)
            self.obs[e], self.state[e], self.avail[e] = obs, info["state"], info["avail_actions"]
        self.ep_return[:] = state["ep_return"]


Actor = parl.remote_class(wait=False)(Collector)


def learn(policies: Policies, unrolls: list[dict], rng: np.random.Generator, ppo_epoch: int,
          num_mini_batch: int) -> dict[str, float]:
    """GAE on denormalised values, normalised advantages, then ``ppo_epoch`` x ``num_mini_batch`` MAPPO.learn calls
    per MAPPO (PARL's SimpleAgent.learn). Returns the mean of each ``train/*`` diagnostic over the calls."""
    batch = {key: np.concatenate([u[key] for u in unrolls], axis=1) for key in
             ("obs", "state", "avail", "actions", "log_probs", "rewards", "values", "final_values", "terminated",
              "truncated")}
    T, E, n = batch["rewards"].shape
    _mappo.check_unroll(batch, n)
    values = policies.denormalize(batch["values"])
    ended = (batch["terminated"] | batch["truncated"])[..., None]
    next_values = np.where(ended, policies.denormalize(batch["final_values"]), values[1:])
    advantages, returns = _mappo.mappo_gae(batch["rewards"], values[:T], next_values, batch["terminated"],
                                           batch["truncated"], GAMMA, GAE_LAMBDA)
    obs_in, cent_in = policies.inputs(batch["obs"], batch["state"])
    infos: list[dict[str, float]] = []
    for alg, agents in policies.groups():
        def rows(x, agents=agents):
            x = x[:, :, agents]
            return np.ascontiguousarray(x.reshape(-1, *x.shape[(3 if policies.shared else 2):]))
        adv = _mappo.normalize_advantages(rows(advantages))
        data = dict(share_obs=rows(cent_in), obs=rows(obs_in), actions=rows(batch["actions"]),
                    value_preds=rows(batch["values"][:T])[:, None], returns=rows(returns)[:, None],
                    old_log_probs=rows(batch["log_probs"])[:, None], adv_targ=adv[:, None])
        if data["actions"].ndim == 1:
            data["actions"] = data["actions"][:, None]
        avail = None if policies.continuous else rows(batch["avail"])
        for _ in range(ppo_epoch):
            for idx in _mappo.minibatches(len(adv), num_mini_batch, rng):
                alg.learn(*(data[k][idx] for k in ("share_obs", "obs", "actions", "value_preds", "returns",
                                                  "old_log_probs", "adv_targ")),
                          available_actions=None if avail is None else avail[idx])
                infos.append(alg.get_info())
    return {key: float(np.mean([i[key] for i in infos])) for key in infos[0]}


def evaluate(policies: Policies, env_id: str, env_kwargs: dict, episodes: int, seed: int) -> np.ndarray:
    """Team returns float32 ``[episodes]`` (summed over agents) of deterministic episodes, one per env, in parallel."""
    envs = MultiAgentVectorEnv([lambda: make_multiagent_env(env_id, **env_kwargs) for _ in range(episodes)])
    obs, info = envs.reset(seed=seed)
    state, avail = info["state"], info["avail_actions"]
    returns, done = np.zeros(episodes, np.float32), np.zeros(episodes, bool)
    while not done.all():
        _, action, _ = policies.act(obs, state, avail, deterministic=True)
        if policies.continuous:
            action = np.clip(action, envs.action_low, envs.action_high)
        obs, _, terminated, truncated, info = envs.step(action)
        state, avail = info["state"], info["avail_actions"]
        ended = (terminated | truncated) & ~done
        returns[ended] = info["episode_return"][ended].sum(-1)
        done |= ended
    envs.close()
    return returns


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--env", default="mpe2:simple_spread_v3",
                        help="mpe2:<scenario>, an LBF id (Foraging-8x8-2p-2f-coop-v3) or an RWARE id "
                             "(rware-tiny-2ag-v2)")
    parser.add_argument("--backend", choices=("torch", "paddle"), default="torch")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--total-steps", type=int, default=2_000_000, help="env steps (every agent acts once)")
    parser.add_argument("--actors", type=int, default=0,
                        help="remote collectors (processes); 0 collects in this process")
    parser.add_argument("--address", default=None,
                        help="HOST:PORT of an xparl cluster, or ray / ray://HOST:10001 for a Ray cluster "
                             "(default: an embedded xparl cluster)")
    parser.add_argument("--num-envs", type=int, default=NUM_ENVS, help="E in total (split over the actors)")
    parser.add_argument("--unroll-length", type=int, default=UNROLL_LENGTH, help="T, steps per update")
    parser.add_argument("--ppo-epoch", type=int, default=PPO_EPOCH)
    parser.add_argument("--num-mini-batch", type=int, default=NUM_MINI_BATCH)
    parser.add_argument("--separate-params", action="store_true",
                        help="one model per agent (PARL's example) instead of one shared model with agent ids")
    parser.add_argument("--no-popart", action="store_true", help="train the critic on raw returns")
    parser.add_argument("--continuous-actions", action="store_true", help="mpe2 with Box actions")
    parser.add_argument("--eval-every", type=int, default=100_000, help="env steps between evaluations")
    parser.add_argument("--eval-episodes", type=int, default=32)
    parser.add_argument("--device", default="cpu", help="device of the learner: cpu, cuda, cuda:1 (paddle: gpu)")
    parser.add_argument("--logdir", default=None, help="default: runs/mappo/<env>-seed<seed>")
    parser.add_argument("--restore", default=None,
                        help="start from the weights in this directory (agent_<i>.ckpt, written by an earlier run)")
    parser.add_argument("--no-progress", action="store_true", help="hide the progress bar")
    add_run_args(parser)
    args = parser.parse_args()
    if args.actors < 0 or (args.actors and args.num_envs % args.actors):
        parser.error(f"--actors must be >= 0 and divide --num-envs ({args.num_envs})")
    env_kwargs, metric = env_setup(args.env, args.continuous_actions)
    ops = importlib.import_module(f"parl_algorithms.{args.backend}.ops")
    ops.seed(args.seed)  # (and one torch thread)
    t0 = time.perf_counter()
    run = RunLog(args.resume or args.logdir or os.path.join("runs", "mappo",
                                                            f"{args.env.replace(':', '_')}-seed{args.seed}"))
    rng = np.random.default_rng(args.seed)

    probe = make_multiagent_env(args.env, **env_kwargs)
    for space in probe.action_spaces:
        _mappo.action_layout(space)  # Discrete / Box here; anything else is refused with the supported spaces
    n = probe.n_agents
    spec = dict(backend=args.backend, shared=not args.separate_params, n_agents=n, obs_dim=probe.obs_dim,
                state_dim=probe.state_dim, act_dim=probe.n_actions, continuous=not probe.discrete,
                use_popart=not args.no_popart)
    env_version, reward_unit = probe.env_version, probe.reward_unit
    scale = 1.0 / n if metric == "per_agent" else 1.0
    probe.close()
    policies = Policies(spec, device=args.device)
    Agent = importlib.import_module(f"parl_core.{args.backend}").Agent
    if args.restore:
        for i, alg in enumerate(policies.algs):
            Agent(alg).restore(os.path.join(args.restore, f"agent_{i}.ckpt"))

    E, T = args.num_envs, args.unroll_length
    ckpt = Checkpointer(run, every_min=args.checkpoint_every, resume=args.resume is not None, config=vars(args),
                        ignore=("address",))  # (the cluster may change between the parts of a run)
    ckpt.register(rng=rng, **{f"mappo{i}": alg for i, alg in enumerate(policies.algs)})
    if args.actors == 0:
        collector = Collector(args.env, env_kwargs, E, T, spec, args.seed * 100_000, policies=policies)
        ckpt.register(collector=collector)
    # `generation`: how many collectors each slot has had (a replacement, or a resumed run's, gets other seeds)
    c = ckpt.track(env_steps=0, updates=0, recent=[], eval_mean=float("nan"), eval_std=float("nan"),
                   next_eval=args.eval_every, evaluated_at=-1, generation=[0] * args.actors)
    ckpt.start()  # a resumed run continues from its checkpoint: MAPPOs, counters, generators, envs, curve, clock
    actors_ready_s = 0.0
    if args.actors:
        if args.address is None:  # one CPU per actor, plus one so that a replacement starts while a dead one is freed
            # the embedded cluster forks its jobs with the actor's heavy imports done once (XPARL_PRELOAD)
            os.environ.setdefault("XPARL_PRELOAD", f"{args.backend},gymnasium,mpe2,parl_core.{args.backend},"
                                                   f"parl_algorithms.{args.backend}")
            parl.connect(cpu_num=args.actors + 1)
        else:
            parl.connect(args.address)

        def new_actor(slot: int) -> Actor:
            actor = Actor(args.env, env_kwargs, E // args.actors, T, spec,
                          seed=args.seed * 100_000 + slot * 1000 + c.generation[slot] * 100)
            c.generation[slot] += 1
            logger.info("actor %d started, pid=%d", slot, actor.pid().result())
            return actor

        from parl_remote import ActorPool

        # the actors start in parallel; a dead one is logged, replaced and asked again for its unroll
        actors = ActorPool(new_actor, args.actors, logger=logger)
        actors_ready_s = time.perf_counter() - t0
        logger.info("%d actors ready after %.1f s", args.actors, actors_ready_s)

    def run_eval() -> None:
        c.evaluated_at = c.env_steps
        returns = evaluate(policies, args.env, env_kwargs, args.eval_episodes, args.seed * 100_000 + 50_000) * scale
        c.eval_mean, c.eval_std = float(returns.mean()), float(returns.std())
        run.scalar("eval/return_mean", c.eval_mean, c.env_steps)
        run.row({"env_steps": c.env_steps, "wall_s": round(run.elapsed(), 3), "eval_return_mean": c.eval_mean,
                 "train_return_mean": float(np.mean(c.recent)) if c.recent else float("nan")})

    steps_per_update = E * T
    bar = tqdm(total=args.total_steps, initial=c.env_steps, disable=args.no_progress, unit="step", smoothing=0.05)
    try:
        while c.env_steps + steps_per_update <= args.total_steps:
            unrolls = actors.call_all("sample", policies.get_weights()) if args.actors else [collector.sample()]
            info = learn(policies, unrolls, rng, args.ppo_epoch, args.num_mini_batch)
            c.updates += 1
            c.env_steps += steps_per_update
            for unroll in unrolls:
                c.recent = (c.recent + (unroll["episode_returns"].sum(-1) * scale).tolist())[-100:]
            train_mean, wall_s = float(np.mean(c.recent)) if c.recent else 0.0, run.elapsed()
            bar.update(steps_per_update)
            bar.set_postfix(fps=f"{c.env_steps / wall_s:.0f}", train=f"{train_mean:.1f}", eval=f"{c.eval_mean:.1f}",
                            refresh=False)
            if c.updates % 10 == 0:
                for key, value in info.items():
                    run.scalar(key, value, c.env_steps)
                run.scalar("train/episode_return", train_mean, c.env_steps)
                run.scalar("time/env_steps_per_s", c.env_steps / wall_s, c.env_steps)
            if c.updates % 50 == 0:
                logger.info("update %d, env steps %d, %.0f steps/s, training return %.2f, eval %.2f", c.updates,
                            c.env_steps, c.env_steps / wall_s, train_mean, c.eval_mean)
            if c.env_steps >= c.next_eval:
                run_eval()
                c.next_eval += args.eval_every
            ckpt.maybe_save(c.env_steps)  # between two updates (a SIGTERM / Ctrl-C: saved here, then the run exits)
    except SystemExit:
        if args.actors:
            parl.disconnect()
        raise
    bar.close()
    if c.evaluated_at != c.env_steps:
        run_eval()
    for i, alg in enumerate(policies.algs):
        Agent(alg).save(os.path.join(run.logdir, "checkpoint", f"agent_{i}.ckpt"))
    run.close()
    wall_s = run.elapsed()
    result = run.write_summary({
        "algorithm": "MAPPO", "env_id": args.env, "env_version": env_version, "env_kwargs": env_kwargs,
        "reward_unit": ("per-agent return (team return / n_agents)" if metric == "per_agent"
                        else "team return (summed over agents)") + f"; env: {reward_unit}",
        "backend": args.backend, "device": str(policies.algs[0].device), "seed": args.seed,
        "shared_params": spec["shared"], "use_popart": spec["use_popart"], "n_agents": n, "actors": args.actors,
        "num_envs": E, "unroll_length": T, "ppo_epoch": args.ppo_epoch, "num_mini_batch": args.num_mini_batch,
        "eval_return_mean": c.eval_mean, "eval_return_std": c.eval_std, "eval_episodes": args.eval_episodes,
        "train_return_mean": float(np.mean(c.recent)) if c.recent else float("nan"),
        "env_steps": c.env_steps, "updates": c.updates, "wall_s": round(wall_s, 3),
        "env_steps_per_s": round(c.env_steps / wall_s, 1), "actors_ready_s": round(actors_ready_s, 3),
        "actors_replaced": actors.replacements if args.actors else 0, "resumed": ckpt.resumed,
        "loadavg": [float(x) for x in open("/proc/loadavg").read().split()[:3]]})
    ckpt.finish(c.env_steps)
    if args.actors:
        parl.disconnect()
    print(json.dumps(result))


if __name__ == "__main__":
    main()
