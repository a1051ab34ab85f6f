"""Test-only ``gym``: gymnasium presented through the old gym API (gym 0.21), to run PARL 2.x code unchanged.

PARL 2.2.1's examples ``import gym`` and use the API of gym < 0.26::

    env = gym.make("CartPole-v0")
    env.seed(0)
    obs = env.reset()
    obs, reward, done, info = env.step(action)
    env._max_episode_steps

With ``tests/parl2/shims`` on ``PYTHONPATH`` that ``import gym`` finds this module: ``make`` builds the
gymnasium env and wraps it in :class:`OldApiEnv`, which speaks the old API (a time-limit end is
reported as ``done`` with ``info["TimeLimit.truncated"] = True``, as gym's ``TimeLimit`` did). Env ids
that gymnasium lacks are swapped for their gymnasium equivalents (:data:`ENV_ID_SWAPS`). ALE (Atari)
envs are registered when ``ale_py`` is installed (ale-py registers gym's ``Pong-v0`` ids too). As in gym,
a ``Discrete`` action space's ``n`` is an ``int`` (gymnasium's is an ``np.int64``); ``gym.spaces.Box.contains``
is gym 0.18's (no dtype check; PARL's course targets gym 0.18); ``gym.logger`` and ``gym.utils.seeding``
(``np_random`` gives a ``RandomState``) serve envs written against gym.

This module is written for the project's tests only; it is not a gym re-implementation and is not
shipped.
"""

from __future__ import annotations

import copy
from typing import Any

import gymnasium
from gymnasium import error, logger  # noqa: F401 - ``gym.error`` / ``gym.logger`` as in gym

from gym import spaces, utils  # noqa: F401 - gym 0.18's Box.contains; ``gym.utils.seeding`` (a RandomState)

# gym < 0.26's ``gym.Wrapper``: forwards everything to ``self.env``, checks nothing
from parl_core.env.compat_wrappers import Wrapper

__version__ = "0.21.0"  # the old API (PARL's CompatWrapper checks gym.__version__ < 0.26)

# env ids of gym that gymnasium does not register -> gymnasium's equivalent
ENV_ID_SWAPS = {
    "Pendulum-v0": "Pendulum-v1",
    "LunarLanderContinuous-v2": "LunarLanderContinuous-v3",
    "HalfCheetah-v2": "HalfCheetah-v4",
    "HalfCheetah-v3": "HalfCheetah-v4",
    "Hopper-v2": "Hopper-v4",
    "Hopper-v3": "Hopper-v4",
    "Walker2d-v2": "Walker2d-v4",
    "Walker2d-v3": "Walker2d-v4",
    "Humanoid-v2": "Humanoid-v4",
    "Humanoid-v3": "Humanoid-v4",
}


def _register_ale() -> None:
    try:
        import ale_py
    except ImportError:
        return
    gymnasium.register_envs(ale_py)


class OldApiEnv(Wrapper):
    """A gymnasium env with gym 0.21's API: ``seed``, ``reset() -> obs``, 4-tuple ``step``."""

    def __init__(self, env: gymnasium.Env) -> None:
        super().__init__(env)
        self._max_episode_steps = env.spec.max_episode_steps if env.spec is not None else None
        self._elapsed_steps = 0
        self._seed: int | None = None
        n = getattr(env.action_space, "n", None)
        if n is not None and type(n) is not int:  # gym's Discrete.n is an int; gymnasium's an np.int64
            self.action_space = copy.copy(env.action_space)
            self.action_space.n = int(n)

    def seed(self, seed: int | None = None) -> list[int | None]:
        self._seed = seed
        if seed is not None:
            self.action_space.seed(seed)
        return [seed]

    def reset(self, **kwargs: Any) -> Any:
        if self._seed is not None:
            kwargs.setdefault("seed", self._seed)
            self._seed = None
        self._elapsed_steps = 0
        obs, _ = self.env.reset(**kwargs)
        return obs

    def step(self, action: Any) -> tuple[Any, float, bool, dict]:
        obs, reward, terminated, truncated, info = self.env.step(action)
        self._elapsed_steps += 1
        info = dict(info)
        if truncated and not terminated:
            info["TimeLimit.truncated"] = True
        return obs, float(reward), bool(terminated or truncated), info

    def render(self, mode: str = "human") -> Any:
        return self.env.render()


def make(id: str, **kwargs: Any) -> OldApiEnv:  # noqa: A002 - gym's own signature
    """``gym.make``: the gymnasium env ``ENV_ID_SWAPS.get(id, id)`` with the old API."""
    _register_ale()
    return OldApiEnv(gymnasium.make(ENV_ID_SWAPS.get(id, id), **kwargs))


Env = gymnasium.Env
ObservationWrapper = Wrapper
ActionWrapper = Wrapper
RewardWrapper = Wrapper
