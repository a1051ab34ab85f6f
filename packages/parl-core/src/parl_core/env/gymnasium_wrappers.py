"""An old gym-style environment presented through the gymnasium API.

:class:`OldGymToGymnasiumWrapper` is the reverse of PARL's :class:`~parl_core.env.CompatWrapper`: it makes
an **old** gym-style env (``reset() -> obs``,
``step() -> (obs, reward, done, info)``, ``seed(s)``) look like a gymnasium env (``reset(seed=...) ->
(obs, info)``, ``step() -> (obs, reward, terminated, truncated, info)``), keeping time-limit truncation
apart from true termination so that algorithms bootstrap correctly.
"""

from __future__ import annotations

from typing import Any

import gymnasium as gym
import numpy as np
from gymnasium import spaces

__all__ = ["OldGymToGymnasiumWrapper"]


def _to_gymnasium_space(space: Any) -> spaces.Space:
    """Convert a ``gym.spaces`` object (or anything shaped like one) into a gymnasium space."""
    if space is None or isinstance(space, spaces.Space):
        return space
    if hasattr(space, "n") and not hasattr(space, "low"):
        return spaces.Discrete(int(space.n))
    if hasattr(space, "low") and hasattr(space, "high"):
        dtype = np.dtype(getattr(space, "dtype", None) or np.float32)
        return spaces.Box(low=np.asarray(space.low, dtype=dtype), high=np.asarray(space.high, dtype=dtype),
                          dtype=dtype)
    raise TypeError(f"OldGymToGymnasiumWrapper cannot convert the space {space!r}; give the env gymnasium spaces "
                    "(gymnasium.spaces.Box / Discrete)")


def _find_max_episode_steps(env: Any) -> int | None:
    spec = getattr(env, "spec", None)
    limit = getattr(spec, "max_episode_steps", None)
    if limit is None:
        limit = getattr(env, "_max_episode_steps", None)
    return int(limit) if limit else None


class OldGymToGymnasiumWrapper(gym.Env):
    """Present an old gym-style environment through the gymnasium API.

    - ``reset(seed=None, options=None) -> (obs, info)``: a seed is passed to the old env's ``seed(s)``
      (or to ``reset(seed=s)`` if it has no ``seed``).
    - ``step(action) -> (obs, reward, terminated, truncated, info)``: a ``done`` is split using
      ``info["TimeLimit.truncated"]`` when the env reports it (gym's ``TimeLimit`` does); otherwise a
      ``done`` on the ``max_episode_steps``-th step counts as truncation. The wrapper also enforces
      ``max_episode_steps`` itself (``truncated=True`` at the limit, as gymnasium's ``TimeLimit``).
    - An env that already follows the gymnasium API (5-tuple ``step``) passes through unchanged.

    Args:
        env: the old-style environment.
        max_episode_steps: the episode step limit; default: ``env.spec.max_episode_steps`` or
            ``env._max_episode_steps``; ``None`` for no limit.

    Raises:
        TypeError: the env's spaces cannot be converted to gymnasium spaces.
    """

    def __init__(self, env: Any, max_episode_steps: int | None = None) -> None:
        self.env = env
        self.observation_space = _to_gymnasium_space(getattr(env, "observation_space", None))
        self.action_space = _to_gymnasium_space(getattr(env, "action_space", None))
        self.max_episode_steps = max_episode_steps if max_episode_steps is not None else _find_max_episode_steps(env)
        self.metadata = dict(getattr(env, "metadata", None) or {})
        self.render_mode = getattr(env, "render_mode", None)
        self._elapsed_steps = 0

    @property
    def unwrapped(self) -> Any:
        """The innermost environment (the old-style one's own ``unwrapped`` when it has one)."""
        return getattr(self.env, "unwrapped", self.env)

    def __getattr__(self, name: str) -> Any:
        if name.startswith("_") or name == "env":
            raise AttributeError(name)
        return getattr(self.env, name)

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None) -> tuple[Any, dict]:
        """Reset the env; returns ``(obs, info)``."""
        self._elapsed_steps = 0
        kwargs: dict[str, Any] = {}
        if seed is not None:
            if callable(getattr(self.env, "seed", None)):
                self.env.seed(seed)
            else:
                kwargs["seed"] = seed
        if options is not None:
            kwargs["options"] = options
        result = self.env.reset(**kwargs)
        if isinstance(result, tuple) and len(result) == 2 and isinstance(result[1], dict):
            return result[0], dict(result[1])
        return result, {}

    def step(self, action: Any) -> tuple[Any, float, bool, bool, dict]:
        """Step the env; returns ``(obs, reward, terminated, truncated, info)``."""
        result = self.env.step(action)
        self._elapsed_steps += 1
        at_limit = self.max_episode_steps is not None and self._elapsed_steps >= self.max_episode_steps
        if len(result) == 5:
            obs, reward, terminated, truncated, info = result
            return obs, reward, bool(terminated), bool(truncated) or (at_limit and not terminated), info
        if len(result) != 4:
            raise ValueError(f"OldGymToGymnasiumWrapper: the env's step() returned {len(result)} values; "
                             "expected the old gym API (obs, reward, done, info) or gymnasium's 5-tuple")
        obs, reward, done, info = result
        info = dict(info or {})
        done = bool(done)
        if done and "TimeLimit.truncated" in info:
            truncated = bool(info["TimeLimit.truncated"])
            terminated = not truncated
        elif done:
            truncated = at_limit
            terminated = not at_limit
        else:
            terminated, truncated = False, at_limit
        return obs, reward, terminated, truncated, info

    def render(self) -> Any:
        """Render the wrapped env."""
        return self.env.render()

    def close(self) -> None:
        """Close the wrapped env."""
        close = getattr(self.env, "close", None)
        if callable(close):
            close()
