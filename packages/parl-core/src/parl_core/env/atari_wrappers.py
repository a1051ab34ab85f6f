"""DeepMind-style Atari preprocessing as PARL's ``parl.env.atari_wrappers.wrap_deepmind``, on gymnasium.

The pipeline (Mnih et al. 2015, "Human-level control through deep reinforcement learning"; Machado et
al. 2018 for the names) is built from gymnasium's wrappers where they fit:

``MonitorEnv`` (whole-game returns, before any change) -> ``gymnasium.wrappers.AtariPreprocessing``
(no-op reset of 1..30 steps, frame skip 4 with a max-pool over the last two frames, grey, ``dim x dim``)
-> :class:`EpisodicLifeEnv` (a lost life ends the episode for the learner, the game goes on) ->
:class:`FireResetEnv` (games that wait for FIRE) -> ``gymnasium.wrappers.ClipReward`` (to ``[-1, 1]``)
-> ``gymnasium.wrappers.FrameStackObservation`` (the last 4 frames).

The Atari environments come from ``ale-py`` (ROMs ship in its wheel; ``pip install ale-py``), and the
resize needs OpenCV (``pip install opencv-python-headless``); neither is imported by this module::

    import ale_py, gymnasium as gym
    gym.register_envs(ale_py)
    env = wrap_deepmind(gym.make("PongNoFrameskip-v4"), dim=84, obs_format="NCHW")
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

import gymnasium as gym
import numpy as np

__all__ = ["EpisodicLifeEnv", "FireResetEnv", "MonitorEnv", "get_wrapper_by_cls", "wrap_deepmind"]


def get_wrapper_by_cls(env: gym.Env, cls: type) -> gym.Env | None:
    """The first wrapper of class ``cls`` in ``env``'s wrapper chain (``env`` included), or ``None``."""
    current = env
    while True:
        if isinstance(current, cls):
            return current
        if not isinstance(current, gym.Wrapper):
            return None
        current = current.env


class MonitorEnv(gym.Wrapper):
    """Records the undiscounted return and length of every finished episode (PARL's ``MonitorEnv``).

    Placed first in :func:`wrap_deepmind`, an episode is a whole game with its unclipped score.
    """

    def __init__(self, env: gym.Env) -> None:
        super().__init__(env)
        self._current_reward = 0.0
        self._num_steps = 0
        self._total_steps = 0
        self._episode_rewards: list[float] = []
        self._episode_lengths: list[int] = []
        self._num_returned = 0
        self.tstart = time.time()

    def reset(self, **kwargs: Any) -> tuple[Any, dict]:  # noqa: D102 (gymnasium's contract)
        self._current_reward, self._num_steps = 0.0, 0
        return self.env.reset(**kwargs)

    def step(self, action: Any) -> tuple[Any, float, bool, bool, dict]:  # noqa: D102
        obs, reward, terminated, truncated, info = self.env.step(action)
        self._current_reward += float(reward)
        self._num_steps += 1
        self._total_steps += 1
        if terminated or truncated:
            self._episode_rewards.append(self._current_reward)
            self._episode_lengths.append(self._num_steps)
            info = dict(info, episode={"r": self._current_reward, "l": self._num_steps,
                                       "t": round(time.time() - self.tstart, 6)})
            self._current_reward, self._num_steps = 0.0, 0
        return obs, reward, terminated, truncated, info

    def get_episode_rewards(self) -> list[float]:
        """Returns of all finished episodes."""
        return self._episode_rewards

    def get_episode_lengths(self) -> list[int]:
        """Lengths (in steps of the wrapped env) of all finished episodes."""
        return self._episode_lengths

    def get_total_steps(self) -> int:
        """Steps taken through this wrapper."""
        return self._total_steps

    def next_episode_results(self) -> Iterator[tuple[float, int]]:
        """``(return, length)`` of each episode finished since the last call."""
        for i in range(self._num_returned, len(self._episode_rewards)):
            yield self._episode_rewards[i], self._episode_lengths[i]
        self._num_returned = len(self._episode_rewards)


class EpisodicLifeEnv(gym.Wrapper):
    """A lost life ends the episode (``terminated=True``) but resets the game only when it is over
    (Mnih et al. 2015): on a lost life, ``reset`` takes one no-op step instead."""

    def __init__(self, env: gym.Env) -> None:
        super().__init__(env)
        self.lives = 0
        self.was_real_done = True

    def step(self, action: Any) -> tuple[Any, float, bool, bool, dict]:  # noqa: D102
        obs, reward, terminated, truncated, info = self.env.step(action)
        self.was_real_done = terminated or truncated
        lives = self.env.unwrapped.ale.lives()
        if 0 < lives < self.lives:  # lives > 0: some games sit at 0 lives for a few frames before game over
            terminated = True
        self.lives = lives
        return obs, reward, terminated, truncated, info

    def reset(self, **kwargs: Any) -> tuple[Any, dict]:  # noqa: D102
        if self.was_real_done:
            obs, info = self.env.reset(**kwargs)
        else:
            obs, _, terminated, truncated, info = self.env.step(0)
            if terminated or truncated:
                obs, info = self.env.reset(**kwargs)
        self.lives = self.env.unwrapped.ale.lives()
        return obs, info


class FireResetEnv(gym.Wrapper):
    """Presses FIRE (then action 2) after a reset, for games that stand still until FIRE."""

    def __init__(self, env: gym.Env) -> None:
        super().__init__(env)
        meanings = env.unwrapped.get_action_meanings()
        if len(meanings) < 3 or meanings[1] != "FIRE":
            raise ValueError(f"FireResetEnv needs action 1 to be FIRE and >= 3 actions, got {meanings}; wrap only "
                             "games with a FIRE action")

    def reset(self, **kwargs: Any) -> tuple[Any, dict]:  # noqa: D102
        self.env.reset(**kwargs)
        for action in (1, 2):
            obs, _, terminated, truncated, info = self.env.step(action)
            if terminated or truncated:
                obs, info = self.env.reset(**kwargs)
        return obs, info


def wrap_deepmind(env: gym.Env, dim: int = 84, framestack: bool = True, obs_format: str = "NHWC",
                  test: bool = False, test_episodes: int = 3) -> gym.Env:
    """DeepMind's Atari preprocessing, PARL's signature.

    Args:
        env: an ALE environment from ``gym.make`` (``*NoFrameskip-v4``: this wrapper skips 4 frames;
            an env that skips frames itself, such as ``ALE/Pong-v5``, is not skipped again).
        dim: side of the square grey observation, in pixels.
        framestack: stack the last 4 frames.
        obs_format: ``"NHWC"`` (observations uint8 ``[dim, dim, 4]``) or ``"NCHW"`` (``[4, dim, dim]``).
        test: an evaluation env: whole games (no episodic life) and unclipped rewards.
        test_episodes: accepted for PARL compatibility; count evaluation games with :class:`MonitorEnv`
            (``get_wrapper_by_cls(env, MonitorEnv).next_episode_results()``).

    Returns:
        The wrapped env; observations uint8 ``[dim, dim, 4]`` / ``[4, dim, dim]`` (``[dim, dim]`` without
        frame stacking), rewards in ``{-1, 0, 1}`` unless ``test``.

    Raises:
        ValueError: ``obs_format`` is neither ``"NHWC"`` nor ``"NCHW"``, or ``env`` is not an ALE env.
        gymnasium.error.DependencyNotInstalled: OpenCV is missing (``pip install opencv-python-headless``).
    """
    if obs_format not in ("NHWC", "NCHW"):
        raise ValueError(f"wrap_deepmind: obs_format must be 'NHWC' or 'NCHW', got {obs_format!r}")
    if not hasattr(env.unwrapped, "ale"):
        raise ValueError(f"wrap_deepmind needs an Atari env from ale-py, got {env.unwrapped!r}; `import ale_py; "
                         "gymnasium.register_envs(ale_py)` and gym.make('PongNoFrameskip-v4')")
    del test_episodes  # PARL's TestEnv bookkeeping is MonitorEnv's here
    frame_skip = 4 if getattr(env.unwrapped, "_frameskip", 1) == 1 else 1
    env = MonitorEnv(env)
    env = gym.wrappers.AtariPreprocessing(env, noop_max=30, frame_skip=frame_skip, screen_size=dim,
                                          terminal_on_life_loss=False, grayscale_obs=True)
    if not test:
        env = EpisodicLifeEnv(env)
    if "FIRE" in env.unwrapped.get_action_meanings():
        env = FireResetEnv(env)
    if not test:
        env = gym.wrappers.ClipReward(env, -1.0, 1.0)
    if framestack:
        env = gym.wrappers.FrameStackObservation(env, 4)
        if obs_format == "NHWC":
            space = env.observation_space
            env = gym.wrappers.TransformObservation(
                env, lambda obs: np.moveaxis(obs, 0, -1),
                gym.spaces.Box(low=0, high=255, shape=(dim, dim, 4), dtype=space.dtype))
    return env
