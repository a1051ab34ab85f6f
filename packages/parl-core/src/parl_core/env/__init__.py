"""Environment helpers, under PARL's module paths.

- :class:`CompatWrapper` (``compat_wrappers``): a gymnasium env presented through the old gym API, as
  PARL code expects (``reset() -> obs``, 4-tuple ``step``, ``seed()``, ``_max_episode_steps``).
- :class:`OldGymToGymnasiumWrapper` (``gymnasium_wrappers``): the reverse, an old gym-style env
  presented as a gymnasium env, keeping ``truncated`` apart from ``terminated``.
- :class:`ActionMappingWrapper` (``continuous_wrappers``), :func:`wrap_rms` (``mujoco_wrappers``),
  :class:`VectorEnv` (``vector_env``).
- :func:`make_minatar` (``minatar_wrappers``): MinAtar's games with flat float32 observations.

gymnasium (a dependency of parl-core) is imported when a helper is first used, not by ``import parl``.
"""

from __future__ import annotations

import importlib
from typing import Any

# public name -> submodule that defines it
_HOMES = {
    "ActionMappingWrapper": "continuous_wrappers",
    "CompatWrapper": "compat_wrappers",
    "OldGymToGymnasiumWrapper": "gymnasium_wrappers",
    "VectorEnv": "vector_env",
    "is_minatar": "minatar_wrappers",
    "make_minatar": "minatar_wrappers",
    "wrap_rms": "mujoco_wrappers",
}
__all__ = sorted(_HOMES)


def __getattr__(name: str) -> Any:
    if name in _HOMES:
        return getattr(importlib.import_module(f"parl_core.env.{_HOMES[name]}"), name)
    raise AttributeError(f"module 'parl_core.env' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
