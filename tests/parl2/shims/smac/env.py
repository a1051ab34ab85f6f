"""``StarCraft2Env``: SMAC's methods on an LBF env (see the package docstring)."""

from __future__ import annotations

import os
from typing import Any

import numpy as np


class StarCraft2Env:
    """SMAC's ``StarCraft2Env`` interface on an LBF env: ``get_env_info``, ``reset``, ``step(actions) ->
    (reward, terminated, info)`` with the team reward (sum over agents) and ``terminated`` at the time limit too
    (as SMAC), ``get_obs``, ``get_state``, ``get_avail_agent_actions``, ``win_counted`` (all food collected).

    ``map_name`` and ``difficulty`` (SMAC's) are accepted and ignored; ``SMAC_SHIM_ENV`` names the LBF env and
    ``SMAC_SHIM_SEED`` (default 0) seeds its first reset.
    """

    def __init__(self, map_name: str = "3m", difficulty: str = "7", **kwargs: Any) -> None:
        from parl.env import make_multiagent_env

        self.map_name = map_name
        self.env = make_multiagent_env(os.environ.get("SMAC_SHIM_ENV", "Foraging-8x8-2p-2f-coop-v3"))
        self._seed: int | None = int(os.environ.get("SMAC_SHIM_SEED", "0"))
        self.n_agents = self.env.n_agents
        self.n_actions = self.env.n_actions
        self.episode_limit = self.env.episode_limit
        self.win_counted = False
        self._obs = self._state = self._avail = None

    def get_env_info(self) -> dict[str, int]:
        return {"state_shape": self.env.state_dim, "obs_shape": self.env.obs_dim, "n_actions": self.n_actions,
                "n_agents": self.n_agents, "episode_limit": self.episode_limit}

    def reset(self) -> tuple[Any, Any]:
        obs, info = self.env.reset(seed=self._seed)
        self._seed = None
        self._obs, self._state, self._avail = obs, info["state"], info["avail_actions"]
        self.win_counted = False
        return self.get_obs(), self.get_state()

    def step(self, actions: Any) -> tuple[float, bool, dict[str, Any]]:
        obs, reward, terminated, truncated, info = self.env.step(np.asarray(actions, dtype=np.int64).reshape(-1))
        self._obs, self._state, self._avail = obs, info["state"], info["avail_actions"]
        self.win_counted = bool(terminated)
        return float(np.sum(reward)), bool(terminated or truncated), {"battle_won": self.win_counted}

    def get_obs(self) -> list[np.ndarray]:
        return [np.asarray(o, dtype=np.float32) for o in self._obs]

    def get_state(self) -> np.ndarray:
        return np.asarray(self._state, dtype=np.float32)

    def get_avail_agent_actions(self, agent_id: int) -> list[int]:
        return [int(a) for a in self._avail[agent_id]]

    def close(self) -> None:
        self.env.close()
