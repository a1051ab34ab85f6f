"""PARL's :class:`CompatWrapper`: a gymnasium (or gym >= 0.26) env presented through the old gym API.

PARL 2.x code is written against the old gym API::

    obs = env.reset()
    obs, reward, done, info = env.step(action)
    env.seed(seed)
    env._max_episode_steps

and wraps every env in ``CompatWrapper`` so that it also runs on the new API (``reset() -> (obs, info)``,
5-tuple ``step``, ``reset(seed=...)``). This module is that wrapper. An env that already follows the old
API passes through unchanged, as PARL's does under gym < 0.26.

The reverse direction (an old env presented as a gymnasium env, keeping ``truncated``) is
:class:`parl_core.env.OldGymToGymnasiumWrapper`.
"""

from __future__ import annotations

import copy
import importlib
import numbers
import re
from typing import Any

__all__ = ["V_GYM_CHANGED", "V_NPRANDOM_CHANGED", "CompatWrapper", "Wrapper", "is_gym_version_ge"]

#: the gym version that changed ``seed()``, ``reset()`` and ``step()`` (PARL's constant)
V_GYM_CHANGED = "0.26.0"
#: the gym version that changed ``env.np_random`` from ``.randint()`` to ``.integers()`` (PARL's constant)
V_NPRANDOM_CHANGED = "0.22.0"


def _release(version: str) -> tuple[int, ...]:
    """``"0.26.2"`` -> ``(0, 26, 2)``; a component's leading digits only (``"1.0.0a1"`` -> ``(1, 0, 0)``)."""
    parts = []
    for piece in version.split("."):
        digits = re.match(r"\d+", piece)
        if digits is None:
            break
        parts.append(int(digits.group()))
    return tuple(parts)


def is_gym_version_ge(compare_version: str) -> bool:
    """Whether the installed gym is at least ``compare_version`` (PARL's ``is_gym_version_ge``).

    PARL's examples branch on it between the old gym API and the new one (``reset() -> (obs, info)``,
    5-tuple ``step``, ``render_mode=`` at ``make``). The version asked is that of the module ``gym`` when one
    is importable (real gym, or a gym-compatible shim), else that of gymnasium, the maintained successor of
    gym that this project uses: gymnasium's versions (1.x) all speak the new API, so every comparison with a
    gym 0.x version is true, as it is with gym >= 0.26.

    Args:
        compare_version: a release such as ``"0.26.0"`` (:data:`V_GYM_CHANGED`).

    Returns:
        True when the installed version is greater than or equal to ``compare_version``, compared release
        component by component (``0.26.2 >= 0.26``; PARL's own comparison raised IndexError when the two had
        different numbers of components).

    Raises:
        ImportError: neither gym nor gymnasium is installed.
    """
    try:
        gym = importlib.import_module("gym")
    except ImportError:
        gym = importlib.import_module("gymnasium")
    return _release(gym.__version__) >= _release(compare_version)


def _max_episode_steps_of(env: Any) -> int | None:
    limit = getattr(env, "_max_episode_steps", None)
    if limit is None:
        limit = getattr(getattr(env, "spec", None), "max_episode_steps", None)
    return int(limit) if limit else None


class Wrapper:
    """Base of PARL's old-API wrappers: forwards everything it does not define to ``self.env``.

    Unlike ``gymnasium.Wrapper`` it accepts any env object (old API or new) and checks nothing, as
    ``gym.Wrapper`` did in gym < 0.26.

    Args:
        env: the wrapped environment.
    """

    def __init__(self, env: Any) -> None:
        self.env = env

    def __getattr__(self, name: str) -> Any:
        if name == "env":  # not set yet (e.g. during unpickling): do not recurse
            raise AttributeError(name)
        return getattr(self.env, name)

    def reset(self, **kwargs: Any) -> Any:
        """Reset the wrapped env."""
        return self.env.reset(**kwargs)

    def step(self, action: Any) -> Any:
        """Step the wrapped env."""
        return self.env.step(action)

    def seed(self, seed: int | None = None) -> Any:
        """Seed the wrapped env (old API)."""
        return self.env.seed(seed)

    def render(self, *args: Any, **kwargs: Any) -> Any:
        """Render the wrapped env."""
        return self.env.render(*args, **kwargs)

    def close(self) -> None:
        """Close the wrapped env."""
        close = getattr(self.env, "close", None)
        if callable(close):
            close()

    @property
    def unwrapped(self) -> Any:
        """The innermost environment."""
        return getattr(self.env, "unwrapped", self.env)

    def __repr__(self) -> str:
        return f"<{type(self).__name__}{self.env!r}>"


class CompatWrapper(Wrapper):
    """Present a gymnasium (new-API) env through the old gym API, as PARL's ``CompatWrapper`` does.

    - ``reset(**kwargs) -> obs`` (the ``info`` of the new API is dropped).
    - ``step(action) -> (obs, reward, done, info)`` with ``done = terminated or truncated``; the split is
      kept in ``info["TimeLimit.truncated"]`` (gym's own convention) so code that bootstraps on
      truncation can still tell them apart.
    - ``seed(seed)``: the seed is passed to the next ``reset(seed=...)`` (and to the action space).
      PARL re-passed it to **every** reset, so every episode started from the same state; here only the
      first reset after ``seed()`` is seeded and later episodes continue the env's random stream.
    - ``_max_episode_steps``: the env's step limit (``env.spec.max_episode_steps``); ``done`` is also
      forced at that step, as PARL's wrapper does.
    - ``action_space.n`` of a discrete action space is a Python ``int``, as in gym < 0.26 (gymnasium stores a
      ``np.int64``, which PARL's examples reject: ``assert isinstance(act_dim, int)`` in ``examples/DQN``); the
      wrapper holds a copy of the env's space with that one change.

    The API of the wrapped env is detected from what ``reset`` / ``step`` return, so an old-API env
    passes through unchanged.

    Args:
        env: a gymnasium env (``gymnasium.make(...)``) or an old gym-style env.
    """

    def __init__(self, env: Any) -> None:
        super().__init__(env)
        limit = _max_episode_steps_of(env)
        if limit is not None:
            self._max_episode_steps = limit
        space = getattr(env, "action_space", None)
        n = getattr(space, "n", None)
        if isinstance(n, numbers.Integral) and type(n) is not int:  # np.int64 (gymnasium's Discrete)
            space = copy.copy(space)
            space.n = int(n)
            self.action_space = space
        self._pending_seed: int | None = None
        self._has_old_seed = callable(getattr(env, "seed", None))
        self.count_ep_step = 0

    def reset(self, **kwargs: Any) -> Any:
        """Reset the env; returns the first observation only (old API).

        Args:
            **kwargs: passed to the env's ``reset`` (e.g. ``options=``).
        """
        self.count_ep_step = 0
        if self._pending_seed is not None and not self._has_old_seed:
            kwargs.setdefault("seed", self._pending_seed)
            self._pending_seed = None
        result = self.env.reset(**kwargs)
        if isinstance(result, tuple) and len(result) == 2 and isinstance(result[1], dict):
            return result[0]
        return result

    def seed(self, seed: int | None = None) -> list[int | None]:
        """Seed the env: the next ``reset()`` uses it (old-API envs: their own ``seed``).

        Returns:
            ``[seed]``, as gym's ``Env.seed`` did.
        """
        own_space = self.__dict__.get("action_space")  # the copy with an int ``n`` (see the class docstring)
        if self._has_old_seed:
            result = self.env.seed(seed)
            if seed is not None and own_space is not None:
                own_space.seed(seed)
            return list(result) if isinstance(result, (list, tuple)) else [seed]
        self._pending_seed = seed
        action_space = getattr(self, "action_space", None)
        if seed is not None and callable(getattr(action_space, "seed", None)):
            action_space.seed(seed)
        return [seed]

    def step(self, action: Any) -> tuple[Any, float, bool, dict]:
        """Step the env; returns ``(obs, reward, done, info)``.

        Raises:
            ValueError: the env's ``step`` returned neither 4 nor 5 values.
        """
        result = self.env.step(action)
        self.count_ep_step += 1
        if len(result) == 5:
            obs, reward, terminated, truncated, info = result
            info = dict(info or {})
            done = bool(terminated) or bool(truncated)
            if truncated and not terminated:
                info["TimeLimit.truncated"] = True
        elif len(result) == 4:
            obs, reward, done, info = result
        else:
            raise ValueError(f"CompatWrapper: the env's step() returned {len(result)} values; expected gymnasium's "
                             "(obs, reward, terminated, truncated, info) or the old (obs, reward, done, info)")
        limit = getattr(self, "_max_episode_steps", None)
        if limit is not None and self.count_ep_step >= limit and not done:
            done = True
            info = dict(info or {})
            info["TimeLimit.truncated"] = True
        if done:
            self.count_ep_step = 0
        return obs, reward, done, info
