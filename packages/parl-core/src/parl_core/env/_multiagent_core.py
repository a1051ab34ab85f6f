"""The :class:`MultiAgentEnv` interface: a multi-agent env as numpy arrays in agent order (the families are in
``_multiagent_families``; build one with :func:`parl_core.env.multiagent.make_multiagent_env`)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

__all__ = ["MultiAgentEnv"]


class MultiAgentEnv:
    """One multi-agent env as numpy arrays in agent order (built by :func:`make_multiagent_env`).

    Observations of agents with fewer features are zero-padded to ``obs_dim``; Discrete action spaces with
    fewer actions are padded to ``n_actions`` with actions marked unavailable in ``avail_actions``. The
    global state is the concatenation of the agents' own (unpadded) observations in agent order: mpe2's
    ``state()`` for MPE, EPyMARL's convention for LBF and RWARE.

    Attributes:
        env_id: the id it was made with.
        env_version: the env package and its version, e.g. ``"mpe2 1.1.1"`` (for results tables).
        n_agents: number of agents.
        agents: agent names in agent order (mpe2's ``possible_agents``; ``agent_0 ...`` for LBF / RWARE).
        obs_dim: per-agent observation size, the largest agent's.
        obs_dims: each agent's own observation size.
        state_dim: size of the global state (``sum(obs_dims)``).
        discrete: True for Discrete action spaces, False for Box.
        n_actions: Discrete: the largest agent's number of actions; Box: ``act_dim``. The width of
            ``avail_actions``.
        act_dim: Box: the largest agent's action size; Discrete: ``n_actions`` (the one-hot width).
        act_dims: each agent's own Box size or Discrete n.
        action_low, action_high: Box: float32 [n_agents, act_dim], the bounds (padding entries 0);
            Discrete: int64 [n_agents], 0 and each agent's ``n - 1``.
        observation_spaces, action_spaces: the env's own gymnasium spaces, lists in agent order.
        episode_limit: the step limit of an episode (reaching it is a truncation).
        reward_unit: one sentence: per-agent or shared, local or global.
    """

    env_id: str
    env_version: str
    agents: list[str]
    episode_limit: int
    reward_unit: str

    def _setup(
        self, agents: list[str], observation_spaces: list[Any], action_spaces: list[Any], episode_limit: int
    ) -> None:
        """Derives the array attributes from the env's per-agent spaces (called by a family's ``__init__``)."""
        from gymnasium import spaces

        self.agents = list(agents)
        self.n_agents = len(self.agents)
        self.observation_spaces = list(observation_spaces)
        self.action_spaces = list(action_spaces)
        self.episode_limit = int(episode_limit)
        self.obs_dims = [int(np.prod(space.shape)) for space in self.observation_spaces]
        self.obs_dim = max(self.obs_dims)
        self.state_dim = sum(self.obs_dims)
        # all agents' observations are vectors of one size: packing is one np.array call
        self._same_obs = len(set(self.obs_dims)) == 1 and all(len(s.shape) == 1 for s in self.observation_spaces)
        kinds = {type(space) for space in self.action_spaces}
        if all(issubclass(kind, spaces.Discrete) for kind in kinds):
            self.discrete = True
            starts = [int(space.start) for space in self.action_spaces]
            self._starts = starts if any(starts) else None
            self.act_dims = [int(space.n) for space in self.action_spaces]
            self._uniform_n = self.act_dims[0] if len(set(self.act_dims)) == 1 else 0
            self.n_actions = self.act_dim = max(self.act_dims)
            self.action_low = np.zeros(self.n_agents, np.int64)
            self.action_high = np.array(self.act_dims, np.int64) - 1
            self._avail = np.arange(self.n_actions)[None, :] < np.array(self.act_dims)[:, None]
        elif all(issubclass(kind, spaces.Box) for kind in kinds):
            if any(len(space.shape) != 1 for space in self.action_spaces):
                raise ValueError(f"{self.env_id}: Box actions must be vectors, got {self.action_spaces}")
            self.discrete = False
            self.act_dims = [int(space.shape[0]) for space in self.action_spaces]
            self.n_actions = self.act_dim = max(self.act_dims)
            self.action_low = np.zeros((self.n_agents, self.act_dim), np.float32)
            self.action_high = np.zeros((self.n_agents, self.act_dim), np.float32)
            self._check_low = np.full((self.n_agents, self.act_dim), -np.inf, np.float32)
            self._check_high = np.full((self.n_agents, self.act_dim), np.inf, np.float32)
            for i, space in enumerate(self.action_spaces):
                d = self.act_dims[i]
                self.action_low[i, :d] = self._check_low[i, :d] = space.low
                self.action_high[i, :d] = self._check_high[i, :d] = space.high
            self._avail = np.ones((self.n_agents, self.n_actions), bool)
        else:
            raise ValueError(
                f"{self.env_id}: every agent needs a Discrete or a Box action space (not mixed), "
                f"got {self.action_spaces}"
            )
        self._raw_obs: Sequence[np.ndarray] | None = None
        self._needs_reset = True

    # ------------------------------------------------------------------ family hooks
    def _reset_raw(self, seed: int | None) -> Sequence[np.ndarray]:
        raise NotImplementedError

    def _step_raw(self, actions: list[Any]) -> tuple[Sequence[np.ndarray], Any, bool, bool]:
        raise NotImplementedError

    # ------------------------------------------------------------------ the interface
    def reset(self, seed: int | None = None) -> tuple[np.ndarray, dict[str, np.ndarray]]:
        """Starts an episode.

        Args:
            seed: seeds the env's random generator (None: continue its stream).

        Returns:
            ``(obs float32 [n_agents, obs_dim], info)`` with ``info["state"]`` float32 [state_dim] and
            ``info["avail_actions"]`` bool [n_agents, n_actions].

        Raises:
            TypeError: ``seed`` is not an int (numpy integers are accepted).
        """
        if seed is not None:
            if not isinstance(seed, int | np.integer) or isinstance(seed, bool):
                raise TypeError(f"reset(seed=...) takes an int or None, got {seed!r}")
            seed = int(seed)
        raw = self._reset_raw(seed)
        self._raw_obs = raw
        self._needs_reset = False
        obs = self._pack(raw)
        return obs, {"state": self._state_of(obs, raw), "avail_actions": self.avail_actions()}

    def step(self, actions: Any) -> tuple[np.ndarray, np.ndarray, bool, bool, dict[str, np.ndarray]]:
        """Every agent acts once (one joint env step).

        Args:
            actions: Discrete: int [n_agents], each agent's action index (an available one); Box: float32
                [n_agents, act_dim] within ``[action_low, action_high]`` (agent ``i`` uses its first
                ``act_dims[i]`` entries).

        Returns:
            ``(obs float32 [n_agents, obs_dim], reward float32 [n_agents], terminated, truncated, info)``:
            ``reward[i]`` is agent i's own reward as the env gives it (``reward.sum()`` is the team reward);
            ``terminated`` (the episode reached a terminal state) and ``truncated`` (cut by the step limit)
            are episode-level bools, never both True; ``info["state"]`` float32 [state_dim],
            ``info["avail_actions"]`` bool [n_agents, n_actions].

        Raises:
            ValueError: wrong shape, an action out of range or unavailable padding, a Box action outside the bounds.
            TypeError: Discrete actions that are not integers.
            RuntimeError: the episode has ended (or never started): call ``reset()`` first.
        """
        if self._needs_reset:
            raise RuntimeError(f"{self.env_id}: the episode has ended or not started; call reset() before step()")
        raw, reward, terminated, truncated = self._step_raw(self._env_actions(actions))
        self._raw_obs = raw
        if terminated or truncated:
            self._needs_reset = True
        obs = self._pack(raw)
        info = {"state": self._state_of(obs, raw), "avail_actions": self.avail_actions()}
        return obs, np.array(reward, np.float32), terminated, truncated, info

    def state(self) -> np.ndarray:
        """The global state, float32 [state_dim]: the agents' own observations concatenated in agent order.

        Raises:
            RuntimeError: before the first ``reset()``.
        """
        if self._raw_obs is None:
            raise RuntimeError(f"{self.env_id}: call reset() before state()")
        return self._state_of(self._pack(self._raw_obs), self._raw_obs)

    def avail_actions(self) -> np.ndarray:
        """Which actions each agent may take now, bool [n_agents, n_actions] (all True for Box; False marks padding)."""
        return self._avail.copy()

    @property
    def np_random(self) -> np.random.Generator:
        """The random generator of the env package's own env (``unwrapped.np_random``: gymnasium's for LBF and RWARE,
        mpe2's own): the state a checkpoint saves so that a resumed run draws what the uninterrupted one would."""
        return self._env.unwrapped.np_random

    def render(self) -> Any:
        """Renders through the env (make it with ``render_mode=...``)."""
        return self._env.render()

    def close(self) -> None:
        """Closes the env (its render window)."""
        self._env.close()

    def __repr__(self) -> str:
        kind = f"Discrete({self.n_actions})" if self.discrete else f"Box({self.act_dim})"
        return (
            f"{type(self).__name__}({self.env_id!r}, n_agents={self.n_agents}, obs_dim={self.obs_dim}, "
            f"state_dim={self.state_dim}, actions={kind}, episode_limit={self.episode_limit})"
        )

    # ------------------------------------------------------------------ helpers
    def _pack(self, raw: Sequence[np.ndarray]) -> np.ndarray:
        """The observations float32 [n_agents, obs_dim], zero-padded where an agent has fewer features."""
        if self._same_obs:
            return np.array(raw, np.float32)
        out = np.zeros((self.n_agents, self.obs_dim), np.float32)
        for i, obs in enumerate(raw):
            flat = np.ravel(obs)
            out[i, : flat.shape[0]] = flat
        return out

    def _state_of(self, obs: np.ndarray, raw: Sequence[np.ndarray]) -> np.ndarray:
        """The state float32 [state_dim] (the unpadded observations concatenated), a new array."""
        if self._same_obs:
            return obs.reshape(-1).copy()  # not a view: writing into obs must not change the state
        return np.concatenate([np.ravel(o) for o in raw]).astype(np.float32, copy=False)

    def _env_actions(self, actions: Any) -> list[Any]:
        """Checks ``actions`` and converts them to one action per agent for the env."""
        a = actions if type(actions) is np.ndarray else np.asarray(actions)
        if self.discrete:
            if a.shape != (self.n_agents,) or a.dtype.kind not in "iu":
                self._raise_bad_discrete(a)
            out = a.tolist()
            n = self._uniform_n
            if n:
                if min(out) < 0 or max(out) >= n:
                    self._raise_bad_discrete(a)
            elif not all(0 <= x < m for x, m in zip(out, self.act_dims, strict=True)):
                self._raise_bad_discrete(a)
            if self._starts is not None:
                out = [x + s for x, s in zip(out, self._starts, strict=True)]
            return out
        a = a.astype(np.float32, copy=False)
        if a.shape != (self.n_agents, self.act_dim):
            raise ValueError(
                f"{self.env_id}: expected Box actions of shape ({self.n_agents}, {self.act_dim}) "
                f"[n_agents, act_dim], got shape {a.shape}"
            )
        if not ((a >= self._check_low) & (a <= self._check_high)).all():
            raise ValueError(
                f"{self.env_id}: Box actions outside the bounds (or NaN); clip them with "
                f"np.clip(actions, env.action_low, env.action_high), got {a.tolist()}"
            )
        return [a[i, :d] for i, d in enumerate(self.act_dims)]

    def _raise_bad_discrete(self, a: np.ndarray) -> None:
        if a.shape != (self.n_agents,):
            raise ValueError(
                f"{self.env_id}: expected one integer action per agent, shape ({self.n_agents},), got shape "
                f"{a.shape}; pass e.g. q.argmax(-1) over [n_agents, n_actions]"
            )
        if a.dtype.kind not in "iu":
            raise TypeError(
                f"{self.env_id}: Discrete actions must be integers, got dtype {a.dtype}; pass actions.astype(np.int64)"
            )
        for i, (x, n) in enumerate(zip(a.tolist(), self.act_dims, strict=True)):
            if not 0 <= x < n:
                raise ValueError(
                    f"{self.env_id}: agent {i} ({self.agents[i]}) has {n} actions (0..{n - 1}), got action {x}; "
                    "mask the unavailable ones with avail_actions()"
                )
