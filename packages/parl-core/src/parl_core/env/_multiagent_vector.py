"""Several multi-agent envs stepped together in this process, each reset on the step its episode ends."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

__all__ = ["MultiAgentVectorEnv"]

# attributes every env of a vector must share (the vector env exposes them too)
_SHARED = (
    "n_agents",
    "agents",
    "obs_dim",
    "obs_dims",
    "state_dim",
    "discrete",
    "n_actions",
    "act_dim",
    "act_dims",
    "episode_limit",
)
_COPIED = _SHARED + (
    "env_id",
    "env_version",
    "reward_unit",
    "observation_spaces",
    "action_spaces",
    "action_low",
    "action_high",
)


class MultiAgentVectorEnv:
    """``E`` :class:`~parl_core.env.multiagent.MultiAgentEnv` stepped serially, with same-step auto-reset.

    Where env ``e``'s episode ends (``terminated[e] | truncated[e]``), ``obs[e]`` (and ``info["state"][e]``,
    ``info["avail_actions"][e]``) is already the first of its next episode, and ``info["final_obs"][e]``,
    ``info["final_state"][e]``, ``info["final_avail_actions"][e]`` hold the last ones of the ended episode
    (bootstrap a truncated episode from them), ``info["episode_return"][e]`` its per-agent return and
    ``info["episode_length"][e]`` its number of steps. Those four are zero where no episode ended.

    It has the attributes of its envs (``n_agents``, ``obs_dim``, ``state_dim``, ``n_actions``, ...) and
    ``num_envs``.

    Args:
        env_fns: one callable per env, each returning a fresh ``MultiAgentEnv`` (e.g.
            ``lambda: make_multiagent_env("rware-tiny-2ag-v2")``).

    Raises:
        ValueError: ``env_fns`` is empty, or the envs differ in agents, sizes or action kind.
    """

    def __init__(self, env_fns: Sequence[Callable[[], Any]]) -> None:
        if len(env_fns) == 0:
            raise ValueError("MultiAgentVectorEnv needs at least one env function, got an empty list")
        self.envs = [fn() for fn in env_fns]
        self.num_envs = len(self.envs)
        first = self.envs[0]
        for e, env in enumerate(self.envs[1:], start=1):
            for name in _SHARED:
                if getattr(env, name) != getattr(first, name):
                    raise ValueError(
                        f"MultiAgentVectorEnv: env {e} has {name}={getattr(env, name)!r} but env 0 has "
                        f"{getattr(first, name)!r}; make every env with the same id and arguments"
                    )
        for name in _COPIED:
            setattr(self, name, getattr(first, name))
        self._returns = np.zeros((self.num_envs, self.n_agents), np.float32)
        self._lengths = np.zeros(self.num_envs, np.int64)

    def reset(self, seed: int | Sequence[int] | None = None) -> tuple[np.ndarray, dict[str, np.ndarray]]:
        """Resets every env.

        Args:
            seed: None (continue each env's stream), an int (env ``e`` gets ``seed + e``) or one seed per env.

        Returns:
            ``(obs float32 [E, n_agents, obs_dim], info)`` with ``info["state"]`` float32 [E, state_dim] and
            ``info["avail_actions"]`` bool [E, n_agents, n_actions].

        Raises:
            ValueError: a list of seeds whose length is not ``num_envs``.
        """
        if seed is None or isinstance(seed, int | np.integer):
            seeds = [None if seed is None else int(seed) + e for e in range(self.num_envs)]
        else:
            seeds = list(seed)
            if len(seeds) != self.num_envs:
                raise ValueError(f"reset got {len(seeds)} seeds for {self.num_envs} envs; pass one per env or an int")
        obs = np.empty((self.num_envs, self.n_agents, self.obs_dim), np.float32)
        state = np.empty((self.num_envs, self.state_dim), np.float32)
        avail = np.empty((self.num_envs, self.n_agents, self.n_actions), bool)
        for e, env in enumerate(self.envs):
            obs[e], info = env.reset(seed=seeds[e])
            state[e], avail[e] = info["state"], info["avail_actions"]
        self._returns[:] = 0
        self._lengths[:] = 0
        return obs, {"state": state, "avail_actions": avail}

    def step(self, actions: Any) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, dict[str, np.ndarray]]:
        """Steps env ``e`` with ``actions[e]``; an env whose episode ends is reset at once.

        Args:
            actions: Discrete: int [E, n_agents]; Box: float32 [E, n_agents, act_dim].

        Returns:
            ``(obs float32 [E, n_agents, obs_dim], reward float32 [E, n_agents], terminated bool [E],
            truncated bool [E], info)``; ``info`` has ``state`` float32 [E, state_dim], ``avail_actions`` bool
            [E, n_agents, n_actions], ``final_obs``, ``final_state``, ``final_avail_actions``,
            ``episode_return`` float32 [E, n_agents] and ``episode_length`` int64 [E] (the last five valid
            where ``terminated | truncated``).

        Raises:
            ValueError: ``actions`` has not one entry per env (and the env's own checks per entry).
        """
        if len(actions) != self.num_envs:
            raise ValueError(
                f"MultiAgentVectorEnv.step got actions for {len(actions)} envs, expected {self.num_envs} "
                "([E, n_agents] or [E, n_agents, act_dim])"
            )
        E, n = self.num_envs, self.n_agents
        obs = np.empty((E, n, self.obs_dim), np.float32)
        reward = np.empty((E, n), np.float32)
        terminated = np.zeros(E, bool)
        truncated = np.zeros(E, bool)
        state = np.empty((E, self.state_dim), np.float32)
        avail = np.empty((E, n, self.n_actions), bool)
        final_obs = np.zeros((E, n, self.obs_dim), np.float32)
        final_state = np.zeros((E, self.state_dim), np.float32)
        final_avail = np.zeros((E, n, self.n_actions), bool)
        episode_return = np.zeros((E, n), np.float32)
        episode_length = np.zeros(E, np.int64)
        returns, lengths = self._returns, self._lengths
        for e, env in enumerate(self.envs):
            o, r, term, trunc, info = env.step(actions[e])
            reward[e] = r
            returns[e] += r
            lengths[e] += 1
            if term or trunc:
                terminated[e], truncated[e] = term, trunc
                final_obs[e], final_state[e], final_avail[e] = o, info["state"], info["avail_actions"]
                episode_return[e], episode_length[e] = returns[e], lengths[e]
                returns[e], lengths[e] = 0, 0
                o, info = env.reset()
            obs[e], state[e], avail[e] = o, info["state"], info["avail_actions"]
        info = {
            "state": state,
            "avail_actions": avail,
            "final_obs": final_obs,
            "final_state": final_state,
            "final_avail_actions": final_avail,
            "episode_return": episode_return,
            "episode_length": episode_length,
        }
        return obs, reward, terminated, truncated, info

    def close(self) -> None:
        """Closes every env."""
        for env in self.envs:
            env.close()
