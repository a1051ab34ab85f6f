"""Environment helpers, under PARL's module paths.

- :class:`CompatWrapper` (``compat_wrappers``): a gymnasium env presented through the old gym API, as
  PARL code expects (``reset() -> obs``, 4-tuple ``step``, ``seed()``, ``_max_episode_steps``); PARL's
  :func:`is_gym_version_ge`, :data:`V_GYM_CHANGED` and :data:`V_NPRANDOM_CHANGED` beside it.
- :class:`OldGymToGymnasiumWrapper` (``gymnasium_wrappers``): the reverse, an old gym-style env
  presented as a gymnasium env, keeping ``truncated`` apart from ``terminated``.
- :class:`ActionMappingWrapper` (``continuous_wrappers``), :func:`wrap_rms` (``mujoco_wrappers``),
  :class:`VectorEnv` (``vector_env``).
- :func:`make_minatar` (``minatar_wrappers``): MinAtar's games with flat float32 observations.
- :func:`make_multiagent_env`, :class:`MultiAgentEnv`, :class:`MultiAgentVectorEnv` (``multiagent``): the
  multi-agent envs (mpe2's MPE, LBF ``Foraging-*-v3``, RWARE ``rware-*-v2``) as per-agent arrays
  ``[n_agents, obs_dim]`` with the global state, available-action masks and ``terminated`` / ``truncated``
  apart; a serial vector form with same-step auto-reset.
- :class:`MAenv` (``multiagent_env``): PARL's MPE wrapper (lists in, lists out) on mpe2.
- :class:`EnvPoolAtari` (``envpool_atari``): E Atari games on EnvPool's C++ pool with ``wrap_deepmind``'s
  preprocessing, as a gymnasium vector env with same-step auto-reset (``pip install 'parl-core[envpool]'``).
- :class:`EnvPoolMuJoCo` (``envpool_mujoco``): gymnasium's MuJoCo tasks (HalfCheetah, Hopper, Walker2d, ... v4 /
  v5) on EnvPool, as ``gym.make_vec`` gives them (same observations and rewards, next-step auto-reset).

gymnasium (a dependency of parl-core) is imported when a helper is first used, not by ``import parl``; the
multi-agent env packages (``pip install 'parl-core[marl]'``: mpe2, lbforaging, rware) when an env is made.
"""

from __future__ import annotations

import importlib
from typing import Any

# public name -> submodule that defines it
_HOMES = {
    "ActionMappingWrapper": "continuous_wrappers",
    "CompatWrapper": "compat_wrappers",
    "EnvPoolAtari": "envpool_atari",
    "EnvPoolMuJoCo": "envpool_mujoco",
    "MAenv": "multiagent_env",
    "MultiAgentEnv": "multiagent",
    "MultiAgentVectorEnv": "multiagent",
    "OldGymToGymnasiumWrapper": "gymnasium_wrappers",
    "V_GYM_CHANGED": "compat_wrappers",
    "V_NPRANDOM_CHANGED": "compat_wrappers",
    "VectorEnv": "vector_env",
    "is_gym_version_ge": "compat_wrappers",
    "is_minatar": "minatar_wrappers",
    "make_minatar": "minatar_wrappers",
    "make_multiagent_env": "multiagent",
    "wrap_rms": "mujoco_wrappers",
}
__all__ = sorted(_HOMES)


def __getattr__(name: str) -> Any:
    if name in _HOMES:
        return getattr(importlib.import_module(f"parl_core.env.{_HOMES[name]}"), name)
    raise AttributeError(f"module 'parl_core.env' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
