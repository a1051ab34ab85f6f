"""MinAtar (Young & Tian 2019, "MinAtar: An Atari-Inspired Testbed for Thorough and Reproducible Reinforcement
Learning Experiments") through gymnasium, with flat float observations, so that the scripts written for small
vector-observation envs (CartPole) run its games unchanged.

The ``minatar`` package (``pip install "parl-core[minatar]"``) registers ``MinAtar/<Game>-v0`` (all 6 actions) and
``MinAtar/<Game>-v1`` (the game's minimal action set) for Asterix, Breakout, Freeway, Seaquest and SpaceInvaders;
``minatar`` is imported only when a MinAtar env is made.
"""

from __future__ import annotations

from typing import Any

import gymnasium as gym
import numpy as np

PREFIX = "MinAtar/"


def is_minatar(env_id: str) -> bool:
    """True for a MinAtar id (``"MinAtar/Breakout-v1"``)."""
    return env_id.startswith(PREFIX)


def make_minatar(env_id: str, flatten: bool = True, max_episode_steps: int | None = 10_000, **kwargs: Any) -> gym.Env:
    """Makes a MinAtar game as a gymnasium env.

    Args:
        env_id: ``"MinAtar/<Game>-v0"`` or ``"MinAtar/<Game>-v1"``.
        flatten: True: observations float32 [10 * 10 * C] in {0, 1} (for MLPs); False: float32 [10, 10, C].
        max_episode_steps: truncate an episode after this many steps (MinAtar's Breakout, for one, has no limit
            of its own, so a greedy policy that never misses would play forever); None: no limit.
        **kwargs: passed to ``gymnasium.make`` (e.g. ``sticky_action_prob``, ``difficulty_ramping``).

    Returns:
        The env; its game's channels C: Breakout 4, Asterix 4, Freeway 7, Seaquest 10, SpaceInvaders 6.

    Raises:
        ValueError: ``env_id`` is not a MinAtar id.
        ImportError: the ``minatar`` package is missing (names the extra to install).
    """
    if not is_minatar(env_id):
        raise ValueError(f"{env_id!r} is not a MinAtar id; use e.g. 'MinAtar/Breakout-v1'")
    try:
        import minatar.gym
    except ImportError as exc:
        raise ImportError(
            f"{env_id} needs the minatar package: pip install 'parl-core[minatar]' (or pip install minatar)"
        ) from exc
    if env_id not in gym.registry:
        minatar.gym.register_envs()
    env = gym.make(env_id, max_episode_steps=max_episode_steps, **kwargs)
    shape = env.observation_space.shape
    size = int(np.prod(shape))
    out_shape = (size,) if flatten else shape
    space = gym.spaces.Box(0.0, 1.0, shape=out_shape, dtype=np.float32)
    return gym.wrappers.TransformObservation(env, lambda obs: np.asarray(obs, np.float32).reshape(out_shape), space)
