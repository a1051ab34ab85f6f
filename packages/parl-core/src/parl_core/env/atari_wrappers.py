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

PARL 2.x code passes an **old-API** env (``gym.make(...)`` under gym < 0.26, or any object with
``reset() -> obs`` and a 4-tuple ``step``) and uses the old API on what comes back (``env.seed(s)``,
``obs = env.reset()``, ``obs, reward, done, info = env.step(a)``, and on an evaluation env PARL's
``TestEnv`` methods ``get_real_done()`` / ``get_eval_rewards()``). The API out follows the API in: a
gymnasium env gives a gymnasium env; any other env gives :class:`OldApiAtariEnv`.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

import gymnasium as gym
import numpy as np

from parl_core.env.compat_wrappers import CompatWrapper
from parl_core.env.gymnasium_wrappers import OldGymToGymnasiumWrapper

__all__ = ["EpisodicLifeEnv", "FireResetEnv", "MonitorEnv", "OldApiAtariEnv", "get_wrapper_by_cls", "wrap_deepmind"]


def get_wrapper_by_cls(env: Any, cls: type) -> Any:
    """The first wrapper of class ``cls`` in ``env``'s wrapper chain (``env`` included), or ``None``.

    The chain is followed through every wrapper's ``env`` attribute: gymnasium wrappers and the old-API
    ones (:class:`OldApiAtariEnv`, :class:`~parl_core.env.CompatWrapper`) alike.
    """
    current = env
    while current is not None:
        if isinstance(current, cls):
            return current
        current = getattr(current, "env", None)
    return None


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
            info = dict(
                info,
                episode={"r": self._current_reward, "l": self._num_steps, "t": round(time.time() - self.tstart, 6)},
            )
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
            raise ValueError(
                f"FireResetEnv needs action 1 to be FIRE and >= 3 actions, got {meanings}; wrap only "
                "games with a FIRE action"
            )

    def reset(self, **kwargs: Any) -> tuple[Any, dict]:  # noqa: D102
        self.env.reset(**kwargs)
        for action in (1, 2):
            obs, _, terminated, truncated, info = self.env.step(action)
            if terminated or truncated:
                obs, info = self.env.reset(**kwargs)
        return obs, info


class OldApiAtariEnv(CompatWrapper):
    """:func:`wrap_deepmind`'s result for an old-API env: PARL's old API and PARL's ``TestEnv`` methods.

    ``seed(s)`` (seeds the next ``reset``), ``reset() -> obs``, ``step(a) -> (obs, reward, done, info)``
    (:class:`~parl_core.env.CompatWrapper`), and PARL's evaluation bookkeeping: after every
    ``test_episodes`` whole games (counted by the :class:`MonitorEnv` inside), the ``reset`` that follows
    sets ``get_real_done()`` and ``get_eval_rewards()`` (those games' unclipped returns).

    Args:
        env: the gymnasium pipeline built by :func:`wrap_deepmind` (it holds a :class:`MonitorEnv`).
        test_episodes: games per evaluation.

    Raises:
        ValueError: ``env`` holds no :class:`MonitorEnv`, or ``test_episodes < 1``.
    """

    def __init__(self, env: gym.Env, test_episodes: int = 3) -> None:
        super().__init__(env)
        monitor = get_wrapper_by_cls(env, MonitorEnv)
        if monitor is None:
            raise ValueError("OldApiAtariEnv needs a MonitorEnv in the wrapped chain; build it with wrap_deepmind")
        if test_episodes < 1:
            raise ValueError(f"test_episodes must be >= 1, got {test_episodes}")
        self._monitor = monitor
        self._test_episodes = int(test_episodes)
        self._end_episode = len(monitor.get_episode_rewards()) + self._test_episodes
        self._was_real_done = False
        self._eval_rewards: list[float] | None = None

    def reset(self, **kwargs: Any) -> Any:
        """Reset (old API: returns the observation only) and update the evaluation bookkeeping."""
        obs = super().reset(**kwargs)
        if len(self._monitor.get_episode_rewards()) >= self._end_episode:
            self._was_real_done = True
            self._eval_rewards = self._monitor.get_episode_rewards()[-self._test_episodes :]
            self._end_episode += self._test_episodes
        else:
            self._was_real_done, self._eval_rewards = False, None
        return obs

    def step(self, action: Any) -> tuple[Any, float, bool, dict]:
        """Step the game (old API). ``action``: an int, or a one-element array as PARL's PPO agent's
        ``predict`` returns it (old gym's Atari env took both; ale-py takes only a scalar).

        Raises:
            ValueError: ``action`` holds more than one value.
        """
        if isinstance(action, (np.ndarray, list, tuple)):
            values = np.asarray(action)
            if values.size != 1:
                raise ValueError(
                    f"an Atari env takes one discrete action per step, got {values.size} values "
                    f"{values.tolist()!r}; pass an int (or a one-element array)"
                )
            action = int(values.reshape(()))
        return super().step(action)

    def get_real_done(self) -> bool:
        """Whether the last ``reset`` came after ``test_episodes`` more whole games ended."""
        return self._was_real_done

    def get_eval_rewards(self) -> list[float] | None:
        """The returns of those games (``None`` between evaluations)."""
        return self._eval_rewards


def wrap_deepmind(
    env: gym.Env,
    dim: int = 84,
    framestack: bool = True,
    obs_format: str = "NHWC",
    test: bool = False,
    test_episodes: int = 3,
    noop_max: int = 30,
) -> gym.Env:
    """DeepMind's Atari preprocessing, PARL's signature.

    Args:
        env: an ALE environment from ``gym.make`` (``*NoFrameskip-v4``: this wrapper skips 4 frames;
            an env that skips frames itself, such as ``ALE/Pong-v5``, is not skipped again): a gymnasium
            env, or an old-API one as PARL code passes (then the result speaks the old API too).
        dim: side of the square grey observation, in pixels.
        framestack: stack the last 4 frames.
        obs_format: ``"NHWC"`` (observations uint8 ``[dim, dim, 4]``) or ``"NCHW"`` (``[4, dim, dim]``).
        test: an evaluation env: whole games (no episodic life) and unclipped rewards. An old-API env
            keeps PARL's pipeline instead (episodic life and clipped rewards in both modes, so a greedy
            policy is FIRE-reset after each lost life; the evaluation returns come from the
            :class:`MonitorEnv` through :meth:`OldApiAtariEnv.get_eval_rewards`).
        test_episodes: games per evaluation of an old-API env (:meth:`OldApiAtariEnv.get_eval_rewards`);
            a gymnasium env counts its games with :class:`MonitorEnv`
            (``get_wrapper_by_cls(env, MonitorEnv).next_episode_results()``).
        noop_max: most random no-op frames after a game reset (1..noop_max of them; 0: none).

    Returns:
        The wrapped env (gymnasium env in, gymnasium env out; old-API env in, :class:`OldApiAtariEnv`
        out); observations uint8 ``[dim, dim, 4]`` / ``[4, dim, dim]`` (``[dim, dim]`` without
        frame stacking), rewards in ``{-1, 0, 1}`` unless ``test`` (an old-API env: always, as PARL).

    Raises:
        ValueError: ``obs_format`` is neither ``"NHWC"`` nor ``"NCHW"``, or ``env`` is not an ALE env.
        gymnasium.error.DependencyNotInstalled: OpenCV is missing (``pip install opencv-python-headless``).
    """
    if obs_format not in ("NHWC", "NCHW"):
        raise ValueError(f"wrap_deepmind: obs_format must be 'NHWC' or 'NCHW', got {obs_format!r}")
    old_api = not isinstance(env, gym.Env)
    if old_api:
        env = OldGymToGymnasiumWrapper(env)
    if not hasattr(env.unwrapped, "ale"):
        raise ValueError(
            f"wrap_deepmind needs an Atari env from ale-py, got {env.unwrapped!r}; `import ale_py; "
            "gymnasium.register_envs(ale_py)` and gym.make('PongNoFrameskip-v4')"
        )
    frame_skip = 4 if getattr(env.unwrapped, "_frameskip", 1) == 1 else 1
    env = MonitorEnv(env)
    env = gym.wrappers.AtariPreprocessing(
        env, noop_max=noop_max, frame_skip=frame_skip, screen_size=dim, terminal_on_life_loss=False, grayscale_obs=True
    )
    parl_pipeline = not test or old_api  # PARL wraps its evaluation env like its training env
    if parl_pipeline:
        env = EpisodicLifeEnv(env)
    if "FIRE" in env.unwrapped.get_action_meanings():
        env = FireResetEnv(env)
    if parl_pipeline:
        env = gym.wrappers.ClipReward(env, -1.0, 1.0)
    if framestack:
        env = gym.wrappers.FrameStackObservation(env, 4)
        if obs_format == "NHWC":
            space = env.observation_space
            env = gym.wrappers.TransformObservation(
                env,
                lambda obs: np.moveaxis(obs, 0, -1),
                gym.spaces.Box(low=0, high=255, shape=(dim, dim, 4), dtype=space.dtype),
            )
    return OldApiAtariEnv(env, test_episodes) if old_api else env
