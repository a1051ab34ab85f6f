"""QMIX on Level-Based Foraging / RWARE (/ SMAC) with parl.algorithms.QMIX, collection in-process or on remote actors.

Algorithm box (Rashid et al. 2018, "QMIX: Monotonic Value Function Factorisation for Deep Multi-Agent RL";
PARL's benchmark/torch/qmix with EPyMARL's defaults for LBF / RWARE, Papoudakis et al. 2021):

    agents: one GRU network shared by the agents; its input is the agent's observation, the one-hot action it
        took last step and its one-hot id (PARL's env_wrapper); Q values of unavailable actions are masked
    collectors (in this process with --actors 0, else one @parl.remote_class actor each) own E envs
        (parl.env.MultiAgentVectorEnv) and a copy of the agent network; run(weights, epsilon, n): load the
        weights, step the E envs together (one batched GRU step for all envs and agents) with epsilon-greedy
        actions among the available ones, until n episodes have ended; return those whole episodes as numpy
        arrays padded to episode_limit + 1 steps (filled = 1 on the padding; the last stored step of an episode
        holds its final observation, state and available actions, for the bootstrap of a time-limit truncation)
    learner (this process), for every episode received:
        add it to the episode replay buffer (5000 episodes)
        QMIX.learn on 32 episodes drawn at random (team reward = sum of the agents' rewards, standardised by its
            running mean / std as EPyMARL; the batch is cut to its longest episode)
        every 200 learn calls: sync_target()
        epsilon decays linearly from 1 to 0.05 over the first 50k env steps
        every --eval-every env steps: --eval-episodes greedy episodes (team return, summed over agents)
    remote collection keeps every actor busy: the learner takes results as they complete and sends the actor its
    next request with the current weights; a dead actor (ActorDiedError) is logged and replaced, and the
    replacement gets the lost request with the weights of that moment (parl_remote.ActorPool)

Usage::

    python examples/qmix/train.py --seed 0                                   # LBF Foraging-8x8-2p-2f-coop-v3
    python examples/qmix/train.py --actors 2 --seed 0                         # 2 actors, embedded local cluster
    python examples/qmix/train.py --env rware-tiny-2ag-v2 --total-steps 2000000
    xparl start --port 8010 --cpu-num 4 && python examples/qmix/train.py --actors 4 --address localhost:8010
    python examples/qmix/train.py --env sc2:3m            # needs oxwhirl's smac and StarCraft II
    # killed, pre-empted or stopped with Ctrl-C: continue from the last checkpoint
    python examples/qmix/train.py --seed 0 --resume runs/qmix/Foraging-8x8-2p-2f-coop-v3-seed0

Writes ``<logdir>/summary.json``, ``<logdir>/curve.csv``, ``<logdir>/model.ckpt`` (the final networks and optimizer,
read back by ``--restore``), tensorboard scalars and ``<logdir>/checkpoint.npz`` (docs/long_runs.md) every
``--checkpoint-every`` minutes, on SIGTERM / Ctrl-C and at the end, after a collector call has been learnt from: the
learner, episode buffer, reward statistics, counters and random generators. In-process (``--actors 0``) it also
holds the collector's episodes in progress, and a resumed run is bit-exact: LBF's and RWARE's grids live in objects
a checkpoint cannot hold, so each env is reset as its episode began (its generator's state; LBF's player positions)
and takes the episode's recorded actions again. With ``--actors N`` (and on SMAC, whose game runs in StarCraft II)
a resumed run continues the learner, buffer, counters and epsilon schedule, but its new collectors start new
episodes: not bit-exact.
"""

from __future__ import annotations

import argparse
import functools
import importlib
import json
import logging
import os
import time
from typing import Any

import numpy as np
from tqdm import tqdm

import parl
from parl.env import MultiAgentVectorEnv, make_multiagent_env
from parl.utils import Checkpointer, RunLog, add_run_args
from parl_remote import ActorPool

logger = logging.getLogger("qmix")

# EPyMARL's QMIX defaults (src/config/algs/qmix.yaml, default.yaml) for LBF and RWARE; PARL's benchmark/torch/qmix
# (qmix_config.py, SMAC) where EPyMARL's do not fit. "learns_per_episode": QMIX.learn calls per episode received.
CONFIGS = {
    "gym": dict(gamma=0.99, lr=5e-4, batch_size=32, buffer_size=5000, target_update_interval=200,
                epsilon_start=1.0, epsilon_finish=0.05, epsilon_anneal_steps=50_000, rnn_hidden_dim=64,
                mixing_embed_dim=32, hypernet_embed_dim=64, clip_grad_norm=10.0, double_q=True,
                standardise_rewards=True, learns_per_episode=1, total_steps=500_000, eval_every=50_000,
                eval_episodes=100, envs_per_collector=8),
    "sc2": dict(gamma=0.99, lr=5e-4, batch_size=16, buffer_size=5000, target_update_interval=2000,
                epsilon_start=1.0, epsilon_finish=0.1, epsilon_anneal_steps=450_000, rnn_hidden_dim=64,
                mixing_embed_dim=32, hypernet_embed_dim=64, clip_grad_norm=10.0, double_q=True,
                standardise_rewards=False, learns_per_episode=2, total_steps=1_000_000, eval_every=10_000,
                eval_episodes=32, envs_per_collector=1),
}
# RWARE: 500-step episodes, so 5000 of them would take ~3 GB; and 10 evaluation episodes (5000 steps)
RWARE_OVERRIDES = dict(buffer_size=1000, eval_episodes=10, eval_every=100_000)

SMAC_HELP = ("--env sc2:<map> needs oxwhirl's SMAC and the StarCraft II game: "
             "pip install git+https://github.com/oxwhirl/smac.git (PyPI's `smac` is SMAC3, a hyperparameter "
             "optimiser, not this), then install StarCraft II (Linux: the Blizzard s2client-proto package, unzipped "
             "to ~/StarCraftII or $SC2PATH) and the SMAC maps (smac's README, 'Installing StarCraft II'); or use "
             "--env Foraging-8x8-2p-2f-coop-v3 / rware-tiny-2ag-v2, which install with pip install 'parl-core[marl]'")


class SMACEnv:
    """oxwhirl/smac's ``StarCraft2Env`` with the ``MultiAgentEnv`` interface (untested here: no StarCraft II).

    SMAC's shared team reward is split evenly over the agents (``reward.sum()`` is SMAC's reward); an episode
    that hits the map's step limit is a truncation (SMAC's ``info["episode_limit"]``), not a terminal.
    """

    def __init__(self, map_name: str, seed: int | None = None) -> None:
        try:
            from smac.env import StarCraft2Env
        except ImportError as err:
            raise SystemExit(SMAC_HELP) from err
        sc2path = os.environ.get("SC2PATH", os.path.expanduser("~/StarCraftII"))
        if not os.path.isdir(sc2path):
            raise SystemExit(f"StarCraft II not found at {sc2path}. {SMAC_HELP}")
        from importlib.metadata import version

        self.env = StarCraft2Env(map_name=map_name, difficulty="7", seed=seed)
        info = self.env.get_env_info()
        self.n_agents, self.n_actions = int(info["n_agents"]), int(info["n_actions"])
        self.obs_dim, self.state_dim = int(info["obs_shape"]), int(info["state_shape"])
        self.episode_limit = int(info["episode_limit"])
        self.agents = [f"agent_{i}" for i in range(self.n_agents)]
        self.obs_dims, self.discrete, self.act_dim, self.act_dims = [self.obs_dim] * self.n_agents, True, 0, None
        self.observation_spaces = self.action_spaces = self.action_low = self.action_high = None
        self.env_id, self.env_version = f"sc2:{map_name}", f"smac {version('smac')}"
        self.reward_unit = "shared team reward (SMAC's), split evenly over the agents; team return = sum over agents"

    def _info(self) -> dict[str, np.ndarray]:
        return {"state": np.asarray(self.env.get_state(), np.float32),
                "avail_actions": np.asarray(self.env.get_avail_actions(), bool)}

    def reset(self, seed: int | None = None) -> tuple[np.ndarray, dict[str, np.ndarray]]:
        self.env.reset()
        return np.asarray(self.env.get_obs(), np.float32), self._info()

    def step(self, actions: Any) -> tuple[np.ndarray, np.ndarray, bool, bool, dict[str, np.ndarray]]:
        reward, terminated, info = self.env.step([int(a) for a in actions])
        truncated = bool(info.get("episode_limit", False))
        reward = np.full(self.n_agents, reward / self.n_agents, np.float32)
        return np.asarray(self.env.get_obs(), np.float32), reward, terminated and not truncated, truncated, \
            self._info()

    def close(self) -> None:
        self.env.close()


def make_env(env_id: str, seed: int | None = None) -> Any:
    """A ``MultiAgentEnv``: ``sc2:<map>`` (SMAC) or any id of ``parl.env.make_multiagent_env``.

    Raises:
        SystemExit: a SMAC id without SMAC / StarCraft II (the message says how to install them) or an env with
            continuous actions (QMIX is discrete only).
    """
    env = SMACEnv(env_id[4:], seed) if env_id.startswith("sc2:") else make_multiagent_env(env_id)
    if not env.discrete:
        raise SystemExit(f"{env_id} has continuous (Box) actions; QMIX needs Discrete actions (use MADDPG: "
                         "examples/maddpg, or MAPPO: examples/mappo)")
    return env


def config_for(env_id: str) -> dict:
    cfg = dict(CONFIGS["sc2" if env_id.startswith("sc2:") else "gym"])
    if "rware" in env_id:
        cfg.update(RWARE_OVERRIDES)
    return cfg


def define_models(backend: str = "torch") -> tuple[type, type]:
    """``(RNNAgentModel, QMixerModel)``: ``parl.Model`` subclasses on ``backend`` (``"torch"`` or ``"paddle"``).

    (Not ``functools.cache``d: a remote collector's class is shipped by value with the functions it calls, and a
    cache wrapper would be looked up by name in the actor's ``__main__``.)
    """
    Model = importlib.import_module(f"parl_core.{backend}").Model  # that backend's parl.Model
    lib = importlib.import_module(backend)  # torch and paddle share the names used below
    nn, F = lib.nn, lib.nn.functional

    class RNNAgentModel(Model):
        """PARL's RNNModel: Linear-ReLU, GRUCell, Linear. ``forward(inputs [N, input_dim], h [.., hidden])`` ->
        ``(q [N, n_actions], h [N, hidden])``; ``init_hidden()`` -> zeros ``[1, hidden]``."""

        def __init__(self, input_dim: int, n_actions: int, rnn_hidden_dim: int = 64):
            super().__init__()
            self.rnn_hidden_dim = rnn_hidden_dim
            self.fc1 = nn.Linear(input_dim, rnn_hidden_dim)
            self.rnn = nn.GRUCell(rnn_hidden_dim, rnn_hidden_dim)
            self.fc2 = nn.Linear(rnn_hidden_dim, n_actions)

        def init_hidden(self):
            return lib.zeros([1, self.rnn_hidden_dim])

        def forward(self, inputs, hidden_state):
            h = self.rnn(F.relu(self.fc1(inputs)), hidden_state.reshape([-1, self.rnn_hidden_dim]))
            h = h[1] if isinstance(h, tuple) else h  # (paddle's GRUCell returns (output, h))
            return self.fc2(h), h

    class QMixerModel(Model):
        """PARL's QMixerModel (2 hypernetwork layers): ``Q_tot = w2^T elu(W1^T q + b1) + b2`` with ``W1 = |f1(s)|``,
        ``w2 = |f2(s)|``, so ``dQ_tot / dq_i >= 0``. ``forward(agent_qs [B, T, n], states [B, T, S])`` ->
        ``[B, T, 1]``."""

        def __init__(self, n_agents: int, state_dim: int, mixing_embed_dim: int = 32, hypernet_embed_dim: int = 64):
            super().__init__()
            self.n_agents, self.state_dim, self.embed_dim = n_agents, state_dim, mixing_embed_dim
            self.hyper_w_1 = nn.Sequential(nn.Linear(state_dim, hypernet_embed_dim), nn.ReLU(),
                                           nn.Linear(hypernet_embed_dim, mixing_embed_dim * n_agents))
            self.hyper_w_2 = nn.Sequential(nn.Linear(state_dim, hypernet_embed_dim), nn.ReLU(),
                                           nn.Linear(hypernet_embed_dim, mixing_embed_dim))
            self.hyper_b_1 = nn.Linear(state_dim, mixing_embed_dim)
            self.hyper_b_2 = nn.Sequential(nn.Linear(state_dim, mixing_embed_dim), nn.ReLU(),
                                           nn.Linear(mixing_embed_dim, 1))

        def forward(self, agent_qs, states):
            batch = agent_qs.shape[0]
            states = states.reshape([-1, self.state_dim])
            agent_qs = agent_qs.reshape([-1, 1, self.n_agents])
            w1 = lib.abs(self.hyper_w_1(states)).reshape([-1, self.n_agents, self.embed_dim])
            b1 = self.hyper_b_1(states).reshape([-1, 1, self.embed_dim])
            w2 = lib.abs(self.hyper_w_2(states)).reshape([-1, self.embed_dim, 1])
            b2 = self.hyper_b_2(states).reshape([-1, 1, 1])
            hidden = F.elu(lib.bmm(agent_qs, w1) + b1)
            return (lib.bmm(hidden, w2) + b2).reshape([batch, -1, 1])

    return RNNAgentModel, QMixerModel


def agent_inputs(obs: np.ndarray, last_actions: np.ndarray, n_actions: int) -> np.ndarray:
    """The agent network's input: ``[obs, one_hot(last action), one_hot(agent id)]`` (PARL's env_wrapper order).

    Args:
        obs: float32 ``[..., n_agents, obs_dim]``.
        last_actions: int ``[..., n_agents]``, -1 where there is none (an episode's first step).
        n_actions: the number of actions.

    Returns:
        float32 ``[..., n_agents, obs_dim + n_actions + n_agents]``.
    """
    n_agents = obs.shape[-2]
    one_hot = (last_actions[..., None] == np.arange(n_actions)).astype(np.float32)
    ids = np.broadcast_to(np.eye(n_agents, dtype=np.float32), obs.shape[:-2] + (n_agents, n_agents))
    return np.concatenate([obs, one_hot, ids], axis=-1)


def batch_agent_inputs(obs: np.ndarray, actions: np.ndarray, n_actions: int) -> np.ndarray:
    """:func:`agent_inputs` of episodes ``[B, T, n_agents, obs_dim]`` with their actions ``[B, T, n_agents]``."""
    last = np.concatenate([np.full_like(actions[:, :1], -1), actions[:, :-1]], axis=1)
    return agent_inputs(obs, last, n_actions)


def episode_shapes(env: Any) -> dict[str, tuple[tuple[int, ...], type]]:
    """Per-step shape and dtype of each array of a stored episode (PARL's ``QMIX.learn`` arguments; obs without the
    appended last action and agent id, which :func:`batch_agent_inputs` adds when a batch is drawn)."""
    n, A = env.n_agents, env.n_actions
    return {"state_batch": ((env.state_dim,), np.float32), "actions_batch": ((n,), np.int64),
            "reward_batch": ((1,), np.float32), "terminated_batch": ((1,), np.float32),
            "obs_batch": ((n, env.obs_dim), np.float32), "available_actions_batch": ((n, A), np.float32),
            "filled_batch": ((1,), np.float32)}


def lbf_players(env: Any) -> list:
    """LBF's player objects (none for other envs). lbforaging's ``reset`` places the players away from the cells
    where they stood before it, so a reset depends on those positions as well as on the env's ``np_random``."""
    return getattr(getattr(getattr(env, "_env", None), "unwrapped", None), "players", [])


class PlayerPositions:
    """The LBF players' positions in ``envs`` (``MultiAgentEnv`` s), which a checkpoint holds for the next reset."""

    def __init__(self, envs: list) -> None:
        self.envs = envs

    def state_dict(self) -> dict:
        return {"positions": [[player.position for player in lbf_players(env)] for env in self.envs]}

    def load_state_dict(self, state: dict) -> None:
        for env, positions in zip(self.envs, state["positions"], strict=True):
            for player, position in zip(lbf_players(env), positions, strict=True):
                player.position = position


class RecordedEnv:
    """A ``MultiAgentEnv`` that remembers how its current episode began: the reset's seed, the env's generator
    state (``np_random``) and LBF's player positions before the reset. :meth:`restart` begins it again."""

    def __init__(self, env: Any) -> None:
        self.env, self.start = env, None

    def __getattr__(self, name: str) -> Any:
        return getattr(self.env, name)

    def reset(self, seed: int | None = None) -> tuple[np.ndarray, dict[str, np.ndarray]]:
        gen = getattr(self.env, "np_random", None)  # (SMAC's game has none: its resume is not exact)
        self.start = {"seed": seed, "np_random": None if gen is None else gen.bit_generator.state,
                      **PlayerPositions([self.env]).state_dict()}
        return self.env.reset(seed)

    def restart(self, start: dict, actions: np.ndarray) -> None:
        """Begin the episode ``start`` describes again and take its ``actions`` (int ``[t, n_agents]``) again."""
        if start["np_random"] is not None:
            self.env.np_random.bit_generator.state = start["np_random"]
        PlayerPositions([self.env]).load_state_dict(start)
        self.reset(start["seed"])
        for step_actions in actions:
            self.env.step(step_actions)


class Collector:
    """E envs and a copy of the agent network; :meth:`run` steps them until n episodes end and returns them.

    Used in the learner's process (``--actors 0``, sharing the learner's network) or as a remote actor
    (:data:`RemoteCollector`). Episodes in progress carry over from one call to the next.
    """

    def __init__(self, env_id: str, num_envs: int, seed: int, backend: str, cfg: dict, model: Any = None) -> None:
        self.ops = importlib.import_module(f"parl_algorithms.{backend}.ops")
        self.ops.seed(seed)  # (torch: also one CPU thread)
        self.envs = MultiAgentVectorEnv([lambda: RecordedEnv(make_env(env_id)) for _ in range(num_envs)])
        self.rng = np.random.default_rng(seed)
        E, n, A = num_envs, self.envs.n_agents, self.envs.n_actions
        self.n_actions, self.T = A, self.envs.episode_limit + 1
        if model is None:
            model = define_models(backend)[0](self.envs.obs_dim + A + n, A, cfg["rnn_hidden_dim"])
        self.model = model
        self.obs, info = self.envs.reset(seed=seed)
        self.state, self.avail = info["state"], info["avail_actions"]
        self.last_actions = np.full((E, n), -1, np.int64)
        self.hidden = np.zeros((E * n, model.rnn_hidden_dim), np.float32)  # zero at each episode start
        self.t = np.zeros(E, np.int64)
        self.ep_return = np.zeros((E, n), np.float32)  # each agent's return so far
        shapes = episode_shapes(self.envs)
        self.episodes = {k: np.zeros((E, self.T) + shape, dtype) for k, (shape, dtype) in shapes.items()}

    def pid(self) -> int:
        """This collector's process id (the fault test kills it)."""
        return os.getpid()

    def _act(self, epsilon: float) -> np.ndarray:
        E, n = self.last_actions.shape
        inputs = agent_inputs(self.obs, self.last_actions, self.n_actions).reshape(E * n, -1)
        with self.ops.no_grad():
            q, h = self.model(self.ops.tensor(inputs), self.ops.tensor(self.hidden))
        self.hidden = self.ops.to_numpy(h)
        q = np.where(self.avail, self.ops.to_numpy(q).reshape(E, n, -1), -np.inf)
        actions = q.argmax(-1)
        if epsilon > 0:  # epsilon-greedy per agent, the random action uniform among the available ones
            explore = self.rng.random((E, n)) < epsilon
            random_actions = np.where(self.avail, self.rng.random(self.avail.shape), -1.0).argmax(-1)
            actions = np.where(explore, random_actions, actions)
        return actions

    def run(self, weights: dict | None, epsilon: float, min_episodes: int) -> dict:
        """Step the envs until ``min_episodes`` episodes have ended (all envs step together).

        Args:
            weights: the agent network's ``{name: ndarray}``, or ``None`` to keep the current ones.
            epsilon: probability of a random (available) action, per agent and step.
            min_episodes: return once at least this many episodes have ended.

        Returns:
            ``{"episodes": {name: [k, T, ...]}`` (PARL's ``QMIX.learn`` arguments, T = episode_limit + 1, obs
            without the appended inputs), ``"lengths"`` int64 ``[k]``, ``"returns"`` float32 ``[k]`` (team:
            summed over agents), ``"env_steps"`` int, ``"collect_s"`` float}.
        """
        start = time.perf_counter()
        if weights is not None:
            self.model.set_weights(weights)
        done_episodes, lengths, returns, steps = [], [], [], 0
        ep, E = self.episodes, len(self.t)
        while len(done_episodes) < min_episodes:
            actions = self._act(epsilon)
            obs, reward, terminated, truncated, info = self.envs.step(actions)
            t, rows = self.t, np.arange(E)
            ep["state_batch"][rows, t] = self.state
            ep["obs_batch"][rows, t] = self.obs
            ep["available_actions_batch"][rows, t] = self.avail
            ep["actions_batch"][rows, t] = actions
            ep["reward_batch"][rows, t, 0] = reward.sum(axis=1)
            ep["terminated_batch"][rows, t, 0] = terminated
            steps += E
            self.t += 1
            self.ep_return += reward
            self.last_actions = actions
            for e in np.flatnonzero(terminated | truncated):
                end = self.t[e]  # the final observation / state / available actions, stored at step `end`, padding
                ep["state_batch"][e, end] = info["final_state"][e]
                ep["obs_batch"][e, end] = info["final_obs"][e]
                ep["available_actions_batch"][e, end] = info["final_avail_actions"][e]
                ep["filled_batch"][e, end:] = 1.0
                done_episodes.append({k: v[e].copy() for k, v in ep.items()})
                lengths.append(int(end))
                returns.append(float(self.ep_return[e].sum()))
                for v in ep.values():
                    v[e] = 0
                self.t[e], self.last_actions[e], self.ep_return[e] = 0, -1, 0.0
                self.hidden.reshape(E, -1)[e] = 0.0
            self.obs, self.state, self.avail = obs, info["state"], info["avail_actions"]
        episodes = {k: np.stack([d[k] for d in done_episodes]) for k in ep}
        return {"episodes": episodes, "lengths": np.asarray(lengths, np.int64),
                "returns": np.asarray(returns, np.float32), "env_steps": steps,
                "collect_s": time.perf_counter() - start}

    _STATE = ("obs", "state", "avail", "last_actions", "hidden", "t", "ep_return")

    def state_dict(self) -> dict:
        """What the next :meth:`run` depends on (a copy): the action generator, the episodes in progress (their
        steps so far, GRU states ``[E * n_agents, hidden]``, last actions ``[E, n_agents]``) and how each began."""
        return {"rng": self.rng.bit_generator.state, "starts": [env.start for env in self.envs.envs],
                "episodes": {k: v.copy() for k, v in self.episodes.items()},
                **{k: getattr(self, k).copy() for k in self._STATE}}

    def load_state_dict(self, state: dict) -> None:
        """Continue from :meth:`state_dict`'s ``state``: each env is reset as its episode began and takes the
        episode's recorded actions again (the envs' grids are objects a checkpoint cannot hold).

        Raises:
            ValueError: ``state`` is of another number of envs.
        """
        self.rng.bit_generator.state = state["rng"]
        for e, (env, start) in enumerate(zip(self.envs.envs, state["starts"], strict=True)):
            env.restart(start, state["episodes"]["actions_batch"][e, :state["t"][e]])
        self.episodes = {k: np.array(v) for k, v in state["episodes"].items()}
        for k in self._STATE:
            setattr(self, k, np.array(state[k]))


RemoteCollector = parl.remote_class(wait=False)(Collector)


class EpisodeBuffer:
    """The last ``capacity`` episodes, each stored padded to T steps; :meth:`sample` cuts a batch to its longest
    episode (plus its final step)."""

    def __init__(self, capacity: int, shapes: dict, T: int, seed: int) -> None:
        self.data = {k: np.zeros((capacity, T) + shape, dtype) for k, (shape, dtype) in shapes.items()}
        self.lengths = np.zeros(capacity, np.int64)
        self.capacity, self.size, self.next = capacity, 0, 0
        self.rng = np.random.default_rng(seed)

    def add(self, episodes: dict, lengths: np.ndarray) -> None:
        for i in range(len(lengths)):
            for k, v in episodes.items():
                self.data[k][self.next] = v[i]
            self.lengths[self.next] = lengths[i]
            self.next = (self.next + 1) % self.capacity
            self.size = min(self.size + 1, self.capacity)

    def sample(self, batch_size: int) -> dict:
        idx = self.rng.choice(self.size, batch_size, replace=False)
        steps = int(self.lengths[idx].max()) + 1
        return {k: v[idx, :steps] for k, v in self.data.items()}

    def state_dict(self) -> dict:
        """The stored episodes, write position and sampling generator."""
        return {"data": {k: v[:self.size] for k, v in self.data.items()}, "lengths": self.lengths[:self.size],
                "size": self.size, "next": self.next, "rng": self.rng.bit_generator.state}

    def load_state_dict(self, state: dict) -> None:
        self.size, self.next = int(state["size"]), int(state["next"])
        for k, v in state["data"].items():
            self.data[k][:self.size] = v
        self.lengths[:self.size] = state["lengths"]
        self.rng.bit_generator.state = state["rng"]


class RunningMeanStd:
    """Running mean and variance of a stream of numbers (Chan et al.'s parallel update), as EPyMARL's."""

    def __init__(self) -> None:
        self.mean, self.var, self.count = 0.0, 1.0, 1e-4

    def update(self, x: np.ndarray) -> None:
        mean, var, n = float(x.mean()), float(x.var()), x.size
        delta, total = mean - self.mean, self.count + n
        self.mean += delta * n / total
        self.var = (self.var * self.count + var * n + delta**2 * self.count * n / total) / total
        self.count = total

    def state_dict(self) -> dict:
        return dict(vars(self))

    def load_state_dict(self, state: dict) -> None:
        vars(self).update(state)


def evaluate(model: Any, ops: Any, envs: MultiAgentVectorEnv, seed: int) -> np.ndarray:
    """Team returns (summed over agents) of one greedy episode in each env of ``envs``, float64 ``[E]``."""
    E, n, A = envs.num_envs, envs.n_agents, envs.n_actions
    obs, info = envs.reset(seed=seed)
    avail = info["avail_actions"]
    last = np.full((E, n), -1, np.int64)
    hidden = ops.tensor(np.zeros((E * n, model.rnn_hidden_dim), np.float32))
    returns, done = np.zeros(E), np.zeros(E, bool)
    with ops.no_grad():
        while not done.all():
            q, hidden = model(ops.tensor(agent_inputs(obs, last, A).reshape(E * n, -1)), hidden)
            last = np.where(avail, ops.to_numpy(q).reshape(E, n, A), -np.inf).argmax(-1)
            obs, reward, terminated, truncated, info = envs.step(last)
            avail = info["avail_actions"]
            returns += reward.sum(axis=1) * ~done
            done |= terminated | truncated
    return returns


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--env", default="Foraging-8x8-2p-2f-coop-v3",
                        help="LBF Foraging-*-v3, RWARE rware-*-v2 (parl.env.make_multiagent_env), or sc2:<map> (SMAC)")
    parser.add_argument("--backend", choices=("torch", "paddle"), default="torch", help="deep-learning framework")
    parser.add_argument("--actors", type=int, default=0,
                        help="remote collectors (processes); 0 collects in this process")
    parser.add_argument("--address", default=None,
                        help="HOST:PORT of an xparl cluster, or ray / ray://HOST:10001 for a Ray cluster "
                             "(default with --actors >= 1: an embedded xparl cluster)")
    parser.add_argument("--envs-per-actor", type=int, default=None, help="E, envs per collector (default per env)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--device", default=None,
                        help="device of the learner: cpu, cuda / gpu, cuda:1  [default: CUDA when available]")
    parser.add_argument("--logdir", default=None, help="default: runs/qmix/<env>-seed<seed>")
    parser.add_argument("--total-steps", type=int, default=None, help="env-step budget (joint steps; default per env)")
    parser.add_argument("--eval-every", type=int, default=None, help="env steps between evaluations")
    parser.add_argument("--eval-episodes", type=int, default=None, help="greedy episodes per evaluation")
    parser.add_argument("--batch-size", type=int, default=None, help="episodes per QMIX.learn (default per env)")
    parser.add_argument("--epsilon-anneal-steps", type=int, default=None,
                        help="env steps over which epsilon decays linearly to its floor (default per env)")
    parser.add_argument("--target-update-interval", type=int, default=None,
                        help="QMIX.learn calls between target syncs (default per env)")
    parser.add_argument("--no-reward-standardisation", action="store_true",
                        help="train on the raw team reward (default: standardised, as EPyMARL, except on SMAC)")
    parser.add_argument("--restore", default=None, help="a checkpoint (model.ckpt) to start from")
    parser.add_argument("--target-return", type=float, default=None, help="stop once an evaluation reaches it")
    parser.add_argument("--no-progress", action="store_true", help="hide the progress bar")
    add_run_args(parser)
    args = parser.parse_args()
    if args.actors < 0:
        parser.error("--actors must be >= 0")
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s %(levelname)s %(message)s")
    cfg = config_for(args.env)
    for key in ("total_steps", "eval_every", "eval_episodes", "batch_size", "epsilon_anneal_steps",
                "target_update_interval"):
        if getattr(args, key) is not None:
            cfg[key] = getattr(args, key)
    if args.no_reward_standardisation:
        cfg["standardise_rewards"] = False
    E = args.envs_per_actor or cfg["envs_per_collector"]
    logdir = args.resume or args.logdir or os.path.join("runs", "qmix", f"{args.env.replace(':', '_')}-seed{args.seed}")
    start = time.perf_counter()
    run = RunLog(logdir)

    parl.set_backend(args.backend)
    RNNAgentModel, QMixerModel = define_models(args.backend)
    ops = importlib.import_module(f"parl_algorithms.{args.backend}.ops")
    ops.seed(args.seed)
    eval_envs = MultiAgentVectorEnv([functools.partial(make_env, args.env) for _ in range(cfg["eval_episodes"])])
    n, A = eval_envs.n_agents, eval_envs.n_actions
    agent_model = RNNAgentModel(eval_envs.obs_dim + A + n, A, cfg["rnn_hidden_dim"])
    qmixer_model = QMixerModel(n, eval_envs.state_dim, cfg["mixing_embed_dim"], cfg["hypernet_embed_dim"])
    alg = parl.algorithms.QMIX(agent_model, qmixer_model, cfg["double_q"], cfg["gamma"], cfg["lr"],
                               cfg["clip_grad_norm"], device=args.device)
    agent = parl.Agent(alg)
    if args.restore:
        agent.restore(args.restore)
        logger.info("restored %s", args.restore)
    buffer = EpisodeBuffer(cfg["buffer_size"], episode_shapes(eval_envs), eval_envs.episode_limit + 1, args.seed)
    reward_stats = RunningMeanStd()
    ckpt = Checkpointer(run, every_min=args.checkpoint_every, resume=args.resume is not None, config=vars(args),
                        ignore=("address",))
    ckpt.register(alg=alg, buffer=buffer, reward_stats=reward_stats, eval_envs=PlayerPositions(eval_envs.envs))
    if args.actors == 0:  # collect in this process with the learner's own network (on the CPU)
        shared = agent_model if str(alg.device) in ("cpu", "Place(cpu)") else None
        local = Collector(args.env, E, args.seed * 1000, args.backend, cfg, model=shared)
        ckpt.register(collector=local)
    # generation: how many actors each slot has had (a replacement, or a resumed run's actor, gets other seeds)
    c = ckpt.track(env_steps=0, episodes=0, updates=0, next_eval=cfg["eval_every"], eval_steps=-1, eval_returns=None,
                   best_eval=float("-inf"), reached=False, recent=[], learn_s=0.0, collect_s=0.0,
                   generation=[0] * args.actors)
    ckpt.start()  # a resumed run continues from its checkpoint: learner, buffer, counters, generators, curve, clock

    if args.actors:
        if args.address is None:  # one CPU per actor, plus one so that a replacement starts while a dead one is freed
            parl.connect(cpu_num=args.actors + 1)
        else:
            parl.connect(args.address)

        def new_actor(slot: int) -> Any:
            actor = RemoteCollector(args.env, E, args.seed * 1000 + 100 * slot + 10 * c.generation[slot] + 1,
                                    args.backend, cfg)
            c.generation[slot] += 1
            logger.info("actor %d started, pid=%d", slot, actor.pid().result())
            return actor

        actors = ActorPool(new_actor, args.actors, logger=logger)  # started in parallel; a dead one is replaced
    actors_ready_s = time.perf_counter() - start

    def epsilon_at(steps: int) -> float:
        frac = min(steps / cfg["epsilon_anneal_steps"], 1.0)
        return cfg["epsilon_start"] + frac * (cfg["epsilon_finish"] - cfg["epsilon_start"])

    def train_mean() -> float:
        return float(np.mean(c.recent)) if c.recent else float("nan")

    def run_evaluation() -> None:
        c.eval_steps = c.env_steps
        c.eval_returns = evaluate(alg.agent_model, ops, eval_envs, seed=args.seed * 1000 + 500_000)
        mean, wall_s = float(c.eval_returns.mean()), run.elapsed()
        c.best_eval = max(c.best_eval, mean)
        run.scalar("eval/return_mean", mean, c.env_steps)
        run.row({"env_steps": c.env_steps, "wall_s": round(wall_s, 3), "eval_return_mean": mean,
                 "eval_return_std": float(c.eval_returns.std()), "train_return_mean": train_mean(),
                 "epsilon": round(epsilon_at(c.env_steps), 4)})
        logger.info("env steps %d, episodes %d, updates %d, %.0f steps/s, eval return %.3f (train %.3f)",
                    c.env_steps, c.episodes, c.updates, c.env_steps / wall_s, mean, np.mean(c.recent or [0.0]))

    def consume(result: dict) -> None:
        """Store the episodes of one collector call and learn once per episode (EPyMARL's ratio)."""
        buffer.add(result["episodes"], result["lengths"])
        c.env_steps += result["env_steps"]
        c.episodes += len(result["lengths"])
        c.collect_s += result["collect_s"]
        c.recent = (c.recent + result["returns"].tolist())[-100:]
        bar.update(result["env_steps"])
        t0 = time.perf_counter()
        for _ in range(len(result["lengths"]) * cfg["learns_per_episode"]):
            if buffer.size < cfg["batch_size"]:
                break
            batch = buffer.sample(cfg["batch_size"])
            if cfg["standardise_rewards"]:
                reward_stats.update(batch["reward_batch"][:, :-1][batch["filled_batch"][:, :-1] == 0])
                batch["reward_batch"] = ((batch["reward_batch"] - reward_stats.mean) /
                                         np.sqrt(reward_stats.var)).astype(np.float32)
            batch["obs_batch"] = batch_agent_inputs(batch["obs_batch"], batch["actions_batch"], A)
            loss, td_error = alg.learn(**batch)
            c.updates += 1
            if c.updates % cfg["target_update_interval"] == 0:
                alg.sync_target()
            if c.updates % 50 == 0:
                for key, value in {"train/loss": loss, "train/td_error": td_error, **alg.get_info()}.items():
                    run.scalar(key, value, c.env_steps)
        c.learn_s += time.perf_counter() - t0
        wall_s = run.elapsed()
        run.scalar("train/episode_return", train_mean(), c.env_steps)
        run.scalar("train/epsilon", epsilon_at(c.env_steps), c.env_steps)
        run.scalar("time/env_steps_per_s", c.env_steps / wall_s, c.env_steps)
        bar.set_postfix(fps=f"{c.env_steps / wall_s:.0f}", ret=f"{train_mean():.3f}", refresh=False)
        if c.env_steps >= c.next_eval:
            c.next_eval += cfg["eval_every"]
            run_evaluation()
            c.reached = args.target_return is not None and float(c.eval_returns.mean()) >= args.target_return

    def running() -> bool:
        return c.env_steps < cfg["total_steps"] and not c.reached

    bar = tqdm(total=cfg["total_steps"], initial=c.env_steps, disable=args.no_progress, unit="step", smoothing=0.05)
    interrupted = False
    try:
        if args.actors == 0:
            while running():
                consume(local.run(None if shared is not None else agent_model.get_weights(),
                                  epsilon_at(c.env_steps), 1))
                ckpt.maybe_save(c.env_steps)  # (a SIGTERM / Ctrl-C: saved here, then the run exits)
        else:
            def ask(actor: Any) -> Any:  # the current weights and epsilon, also for a dead actor's replacement
                return actor.run(agent_model.get_weights(), epsilon_at(c.env_steps), E)

            for slot in range(args.actors):
                actors.submit(ask, slot=slot)
            for task in actors.as_completed():
                if not running():  # the budget is spent: drop late results
                    continue
                consume(task.result())
                ckpt.maybe_save(c.env_steps)
                if running():
                    actors.submit(ask, slot=task.slot)
    except KeyboardInterrupt:  # a second Ctrl-C: stop now, keep the last checkpoint, still write the summary
        interrupted = True
    except SystemExit:
        if args.actors:
            parl.disconnect()
        raise
    bar.close()
    if c.eval_steps != c.env_steps:  # the final evaluation, unless the last one was at this step count
        run_evaluation()
    agent.save(os.path.join(logdir, "model.ckpt"))
    run.close()
    wall_s, final = run.elapsed(), c.eval_returns
    result = run.write_summary({
        "algorithm": "QMIX", "env_id": args.env, "env_version": eval_envs.env_version,
        "reward_unit": eval_envs.reward_unit, "backend": args.backend, "device": str(alg.device), "seed": args.seed,
        "actors": args.actors, "envs_per_actor": E, "eval_return_mean": float(final.mean()),
        "eval_return_std": float(final.std()), "eval_episodes": int(final.size),
        "best_eval_return_mean": c.best_eval, "train_return_mean": train_mean(),
        "env_steps": c.env_steps, "episodes": c.episodes, "updates": c.updates,
        "target_syncs": c.updates // cfg["target_update_interval"], "wall_s": round(wall_s, 3),
        "env_steps_per_s": round(c.env_steps / wall_s, 1), "learn_s": round(c.learn_s, 3),
        "collect_s": round(c.collect_s, 3), "actors_ready_s": round(actors_ready_s, 3),
        "actors_replaced": actors.replacements if args.actors else 0, "reached": c.reached,
        "target_return": args.target_return, "interrupted": interrupted, "total_steps": cfg["total_steps"],
        "loadavg": [round(x, 2) for x in os.getloadavg()]})
    if interrupted:
        ckpt.close()
    else:
        ckpt.finish(c.env_steps)
    eval_envs.close()
    if args.actors:
        parl.disconnect()
    print(json.dumps(result))


if __name__ == "__main__":
    main()
