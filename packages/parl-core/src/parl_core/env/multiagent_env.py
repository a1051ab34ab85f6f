"""PARL's ``parl.env.multiagent_env.MAenv``: the multi-agent particle envs (MPE) with PARL's list-based API,
on ``mpe2`` (PARL 2.2.1 used ``pettingzoo.mpe``, which current PettingZoo no longer ships).

``from parl.env.multiagent_env import MAenv`` works as in PARL; mpe2 is imported when an env is made
(``pip install 'parl-core[marl]'``). PARL's MADDPG examples run on it unchanged::

    env = MAenv("simple_spread")                 # N=3, local_ratio=0 (one global reward), 25 steps
    obs_n = env.reset()                          # list of n arrays, agent i's float32 [obs_shape_n[i]]
    obs_n, reward_n, done_n, info_n = env.step(action_n)   # four lists of n entries
"""

from __future__ import annotations

from typing import Any

import numpy as np

from parl_core.env._multiagent_families import MPE2_MODULES, MPE2Env

__all__ = ["MAenv"]

# PARL's scenario list and settings (parl/env/multiagent_env.py), plus simple_reference; max_cycles=25 for all
SCENARIO_KWARGS: dict[str, dict[str, Any]] = {
    "simple": {},
    "simple_adversary": {"N": 2},
    "simple_crypto": {},
    "simple_push": {},
    "simple_reference": {},
    "simple_speaker_listener": {},
    "simple_spread": {"N": 3, "local_ratio": 0},
    "simple_tag": {"num_good": 1, "num_adversaries": 3, "num_obstacles": 2},
    "simple_world_comm": {"num_good": 2, "num_adversaries": 4, "num_obstacles": 1, "num_food": 2, "num_forests": 2},
}
# PARL's continuous actions may exceed [-1, 1] by this much before they are rejected (then clipped)
_TOLERANCE = 1e-3


class MAenv:
    """An MPE scenario with PARL 2.2.1's ``MAenv`` API (``mpe_wrapper_for_pettingzoo``), on mpe2.

    Args:
        scenario_name: one of PARL's scenarios: ``simple``, ``simple_adversary`` (N=2), ``simple_crypto``,
            ``simple_push``, ``simple_reference``, ``simple_speaker_listener``, ``simple_spread`` (N=3,
            ``local_ratio=0``: every agent gets the same global reward), ``simple_tag`` (1 good, 3 adversaries,
            2 obstacles), ``simple_world_comm`` (2 good, 4 adversaries, 1 obstacle, 2 food, 2 forests); all
            with ``max_cycles=25``.
        continuous_actions: False: Discrete actions; True: Box actions, given in [-1, 1] and mapped linearly
            onto the env's Box ``[low, high]`` (mpe2's is [0, 1]), as PARL does.

    Attributes:
        n: number of agents.
        agents_name: agent names in agent order.
        observation_space, action_space: lists of the agents' gymnasium spaces (``gym.spaces`` in old code).
        obs_shape_n: each agent's observation size (int).
        act_shape_n: each agent's action size: the Box dim, or the Discrete n (the one-hot width).
        env: the mpe2 ``parallel_env``; other attributes are looked up on it, as PARL's ``gym.Wrapper`` did.

    Raises:
        ValueError: an unknown scenario, or an old PettingZoo name (``"simple_spread_v2"``: use
            ``MAenv("simple_spread")``).
        ImportError: mpe2 is missing (names ``pip install 'parl-core[marl]'``).
    """

    def __init__(self, scenario_name: str, continuous_actions: bool = False) -> None:
        if scenario_name not in SCENARIO_KWARGS:
            base = str(scenario_name)
            for prefix in ("pettingzoo.mpe.", "mpe2:", "mpe:"):
                base = base.removeprefix(prefix)
            base = base.rsplit("_v", 1)[0] if "_v" in base else base
            if base in SCENARIO_KWARGS:
                raise ValueError(
                    f"MAenv takes PARL's scenario names without a version: use MAenv({base!r}) "
                    f"(not {scenario_name!r}); it runs mpe2's {MPE2_MODULES[base]}"
                )
            raise ValueError(f"Env {scenario_name!r} not found; valid scenarios: {sorted(SCENARIO_KWARGS)}")
        self.scenario_name = scenario_name
        self.continuous_actions = bool(continuous_actions)
        self._ma = MPE2Env(
            f"mpe2:{MPE2_MODULES[scenario_name]}",
            max_cycles=25,
            continuous_actions=self.continuous_actions,
            **SCENARIO_KWARGS[scenario_name],
        )
        self.env = self._ma._env
        self.observation_space = list(self._ma.observation_spaces)
        self.action_space = list(self._ma.action_spaces)
        self.n = self._ma.n_agents
        self.agents_name = list(self._ma.agents)
        self.obs_shape_n = list(self._ma.obs_dims)
        self.act_shape_n = list(self._ma.act_dims)
        self.reward_unit = self._ma.reward_unit
        self.env_version = self._ma.env_version
        self._low = [np.asarray(space.low, np.float32) for space in self.action_space] if continuous_actions else []
        self._high = [np.asarray(space.high, np.float32) for space in self.action_space] if continuous_actions else []
        self._seed: int | None = None

    def __getattr__(self, name: str) -> Any:
        # only reached for names MAenv lacks: PARL's wrapper forwarded them to the PettingZoo env
        if name.startswith("_") or name == "env":
            raise AttributeError(name)
        return getattr(self.env, name)

    def seed(self, seed: int | None = None) -> list[int | None]:
        """Seeds the next ``reset()`` (old gym API)."""
        self._seed = seed
        return [seed]

    def reset(self, seed: int | None = None) -> list[np.ndarray]:
        """Starts an episode; returns the list of the agents' observations (agent i: float32 [obs_shape_n[i]])."""
        if seed is None:
            seed, self._seed = self._seed, None
        obs, _ = self._ma.reset(seed=seed)
        return [obs[i, :d] for i, d in enumerate(self.obs_shape_n)]

    def step(self, actions: list[Any]) -> tuple[list[np.ndarray], list[float], list[bool], list[dict]]:
        """Every agent acts once.

        Args:
            actions: one action per agent. Discrete: a vector of ``act_shape_n[i]`` scores (one-hot or
                probabilities; its argmax is taken, as PARL) or an int. Continuous: float [act_shape_n[i]] in
                [-1, 1], mapped onto the Box.

        Returns:
            ``(obs_n, reward_n, done_n, info_n)``, lists of ``n``: float32 observations, float rewards, bool
            dones (the episode ended: terminated or truncated at 25 steps), the agents' info dicts.

        Raises:
            ValueError: not one action per agent, a vector of the wrong size, a continuous action outside [-1, 1].
            RuntimeError: the episode has ended: call ``reset()``.
        """
        if len(actions) != self.n:
            raise ValueError(
                f"MAenv({self.scenario_name!r}) has {self.n} agents, got {len(actions)} actions; pass one per agent"
            )
        if self.continuous_actions:
            mapped = np.zeros((self.n, self._ma.act_dim), np.float32)
            for i, act in enumerate(actions):
                act = np.asarray(act, np.float32).reshape(-1)
                if act.shape[0] != self.act_shape_n[i]:
                    raise ValueError(
                        f"agent {i} ({self.agents_name[i]}) takes {self.act_shape_n[i]} values, got {act.shape[0]}"
                    )
                if not (np.all(act <= 1.0 + _TOLERANCE) and np.all(act >= -1.0 - _TOLERANCE)):
                    raise ValueError(
                        f"the action of agent {i} ({self.agents_name[i]}) should be in range [-1.0, 1.0], but got "
                        f"{act.tolist()}; squash it (tanh) or clip it with np.clip(act, -1, 1)"
                    )
                low, high = self._low[i], self._high[i]
                mapped[i, : act.shape[0]] = np.clip(low + (act + 1.0) * ((high - low) / 2.0), low, high)
            env_actions: Any = mapped
        else:
            env_actions = np.empty(self.n, np.int64)
            for i, act in enumerate(actions):
                env_actions[i] = self._discrete_action(i, act)
        obs, reward, terminated, truncated, _ = self._ma.step(env_actions)
        done = bool(terminated or truncated)
        infos = self._ma.agent_infos
        return (
            [obs[i, :d] for i, d in enumerate(self.obs_shape_n)],
            reward.tolist(),
            [done] * self.n,
            [dict(infos.get(name, {})) for name in self.agents_name],
        )

    def _discrete_action(self, i: int, act: Any) -> int:
        if isinstance(act, int | np.integer):
            return int(act)
        act = np.asarray(act)
        if act.ndim == 0:
            if act.dtype.kind not in "iu":
                raise TypeError(f"agent {i}: a scalar Discrete action must be an int, got {act!r}; pass int(a)")
            return int(act)
        if act.shape != (self.act_shape_n[i],):
            raise ValueError(
                f"agent {i} ({self.agents_name[i]}) has {self.act_shape_n[i]} actions: pass a vector of "
                f"{self.act_shape_n[i]} scores (its argmax is taken) or an int, got shape {act.shape}"
            )
        return int(np.argmax(act))

    def render(self, mode: str = "human") -> Any:
        """Renders through mpe2 (PARL's examples call ``env.render()`` with ``--show``).

        Args:
            mode: the old gym API's mode, used when the env was made without a render mode: ``"human"`` opens a
                window (mpe2 then also draws every step), ``"rgb_array"`` returns the frame.

        Returns:
            ``"rgb_array"``: uint8 [700, 700, 3]; ``"human"``: None.
        """
        core = self.env.unwrapped
        if core.render_mode is None:
            core.render_mode = mode
        return self.env.render()

    def close(self) -> None:
        """Closes the env."""
        self.env.close()

    def __repr__(self) -> str:
        kind = "continuous" if self.continuous_actions else "discrete"
        return (
            f"MAenv({self.scenario_name!r}, {kind}, n={self.n}, obs_shape_n={self.obs_shape_n}, "
            f"act_shape_n={self.act_shape_n})"
        )
