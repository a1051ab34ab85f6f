"""Atari games on EnvPool (C++ batched ALE with its own thread pool), with :func:`wrap_deepmind`'s preprocessing.

:class:`EnvPoolAtari` is a gymnasium vector env of E Atari games whose observations, rewards and episode
ends are those of E ``wrap_deepmind(gym.make("<Game>NoFrameskip-v4"), dim, obs_format="NCHW")`` envs
stepped in a loop with a reset after each end (the IMPALA actor's loop), computed in EnvPool's C++ pool:

- EnvPool does the per-frame work: ``noop_max`` random no-ops on a game reset, frame skip 4 with a max-pool
  over the last two frames, ALE's grey screen resized to ``dim x dim`` with OpenCV's ``INTER_AREA``
  (gymnasium's ``AtariPreprocessing`` does the same), episodic life (a lost life ends the episode for the
  learner, the game goes on) and reward clipping (``sign(r)``, which is ``clip(r, -1, 1)`` for Atari's
  integer rewards).
- This class does, as :func:`wrap_deepmind`: FIRE then action 2 after every reset of a game with a FIRE
  action (:class:`~parl_core.env.atari_wrappers.FireResetEnv`), the stack of the last 4 frames
  (gymnasium's ``FrameStackObservation``: after a reset the stack is 4 copies of the first frame), and
  the whole-game unclipped returns (:class:`~parl_core.env.atari_wrappers.MonitorEnv`).
- Auto-reset is gymnasium's ``SAME_STEP`` mode: the observation of an env whose episode ended in a step is
  the first one of its next episode (the actor's ``if done: obs = env.reset()``); its final observation
  is not returned.

Where the two paths differ (``tests/test_core_envpool_atari.py`` checks the rest frame by frame, with
``noop_max=1`` on both sides: one no-op frame after a reset, and then equal observations):

- the no-op count of a game reset (1..noop_max frames) is drawn from EnvPool's random generator, not
  gymnasium's: the same seed gives a different count;
- after a lost life, ``wrap_deepmind`` plays one no-op step (4 frames, ``EpisodicLifeEnv``) before FIRE,
  EnvPool its own reset-in-game (its no-op frames, not the same count): the games go on a few frames apart
  (Breakout's screens differ from the first lost life on; the test checks the episodic-life behaviour);
- a game is cut at 100,000 steps (400,000 frames, ale-py's limit for ``*NoFrameskip-v4``) by EnvPool;
- :meth:`EnvPoolAtari.next_episode_results` gives game lengths in steps of 4 frames (``MonitorEnv``,
  under the frame skip, counts frames).

Only ``<Game>NoFrameskip-v4`` ids are taken (no sticky actions; ``wrap_deepmind`` max-pools only those).
EnvPool is an optional dependency (``pip install 'parl-core[envpool]'``); ale-py names the game's actions.
"""

from __future__ import annotations

import re
from typing import Any

import gymnasium as gym
import numpy as np

__all__ = ["EnvPoolAtari", "envpool_available", "envpool_task_id"]

INSTALL_HINT = "EnvPool is not installed: pip install 'parl-core[envpool]' (or pip install envpool)"
_NO_FRAMESKIP = re.compile(r"^(?P<game>[A-Za-z]+)NoFrameskip-v4$")


def envpool_available() -> bool:
    """Whether ``import envpool`` works (the examples' ``--envpool`` needs it)."""
    try:
        import envpool  # noqa: F401
    except ImportError:
        return False
    return True


def envpool_task_id(env_id: str) -> str:
    """EnvPool's task id for a gymnasium ``"<Game>NoFrameskip-v4"`` id: ``"PongNoFrameskip-v4"`` -> ``"Pong-v5"``.

    Raises:
        ValueError: ``env_id`` is not of that form.
    """
    match = _NO_FRAMESKIP.match(env_id)
    if match is None:
        raise ValueError(f"EnvPoolAtari takes '<Game>NoFrameskip-v4' ids (as wrap_deepmind), got {env_id!r}")
    return f"{match['game']}-v5"


def _action_meanings(env_id: str) -> list[str]:
    """The game's minimal action set, named by ale-py (EnvPool uses the same set, and has no names)."""
    try:
        import ale_py
    except ImportError as err:
        raise ImportError("EnvPoolAtari names the game's actions with ale-py: pip install ale-py") from err
    gym.register_envs(ale_py)
    env = gym.make(env_id)
    try:
        return list(env.unwrapped.get_action_meanings())
    finally:
        env.close()


class EnvPoolAtari(gym.vector.VectorEnv):
    """E Atari games on EnvPool, observations as :func:`~parl_core.env.atari_wrappers.wrap_deepmind` gives.

    Args:
        env_id: a gymnasium Atari id, ``"PongNoFrameskip-v4"`` (:func:`envpool_task_id`).
        num_envs: E, games stepped together.
        dim: side of the square grey frames, in pixels (PARL's IMPALA: 42; DQN / A2C: 84).
        obs_format: ``"NCHW"`` (observations uint8 ``[E, 4, dim, dim]``) or ``"NHWC"`` (``[E, dim, dim, 4]``).
        noop_max: most random no-op frames after a game reset (EnvPool plays 1..noop_max of them; 0 counts as 1).
        test: an evaluation env: whole games (no episodic life) and unclipped rewards, as ``wrap_deepmind``'s
            ``test=True``.
        num_threads: EnvPool's worker threads (default: 1, the one CPU of an actor process).
        seed: seed of game ``i`` is ``seed + i`` (EnvPool's scheme); ``reset(seed=s)`` rebuilds the pool with
            seed ``s``.

    Raises:
        ImportError: EnvPool is missing (the message names the extra to install).
        ValueError: a bad ``env_id``, ``obs_format``, ``num_envs`` or ``dim``.
    """

    metadata = {"autoreset_mode": gym.vector.AutoresetMode.SAME_STEP}

    def __init__(
        self,
        env_id: str,
        num_envs: int,
        *,
        dim: int = 84,
        obs_format: str = "NCHW",
        noop_max: int = 30,
        test: bool = False,
        num_threads: int = 1,
        seed: int = 0,
    ) -> None:
        try:
            import envpool
        except ImportError as err:
            raise ImportError(INSTALL_HINT) from err
        if obs_format not in ("NHWC", "NCHW"):
            raise ValueError(f"EnvPoolAtari: obs_format must be 'NHWC' or 'NCHW', got {obs_format!r}")
        if num_envs < 1 or dim < 1:
            raise ValueError(f"EnvPoolAtari needs num_envs >= 1 and dim >= 1, got {num_envs} and {dim}")
        task_id = envpool_task_id(env_id)
        meanings = _action_meanings(env_id)
        self._envpool = envpool
        self._kwargs = dict(
            env_type="gymnasium",
            num_envs=num_envs,
            batch_size=num_envs,
            num_threads=num_threads,
            stack_num=1,
            img_height=dim,
            img_width=dim,
            gray_scale=True,
            frame_skip=4,
            noop_max=max(int(noop_max), 1),
            episodic_life=not test,
            reward_clip=not test,
            use_fire_reset=False,
            repeat_action_probability=0.0,
            max_episode_steps=100_000,
        )
        self._task_id = task_id
        self._test = test
        self._nchw = obs_format == "NCHW"
        self._pool = envpool.make(task_id, seed=seed, **self._kwargs)
        self.num_envs = num_envs
        self.single_action_space = gym.spaces.Discrete(int(self._pool.action_space.n))
        self.action_space = gym.vector.utils.batch_space(self.single_action_space, num_envs)
        shape = (4, dim, dim) if self._nchw else (dim, dim, 4)
        self.single_observation_space = gym.spaces.Box(0, 255, shape, np.uint8)
        self.observation_space = gym.vector.utils.batch_space(self.single_observation_space, num_envs)
        if len(meanings) != self.single_action_space.n:
            raise ValueError(
                f"EnvPool's {task_id} has {self.single_action_space.n} actions, ale-py's {env_id} "
                f"{len(meanings)}: install matching versions"
            )
        self._fire = "FIRE" in meanings  # FIRE, then action 2, after a reset (FireResetEnv)
        self._stack = np.zeros((num_envs, 4, dim, dim), np.uint8)
        self._game_return = np.zeros(num_envs)
        self._game_length = np.zeros(num_envs, np.int64)
        self._lives = np.zeros(num_envs, np.int64)
        self._finished: list[tuple[float, int]] = []

    def _obs(self) -> np.ndarray:
        return self._stack.copy() if self._nchw else np.moveaxis(self._stack, 1, -1).copy()

    def _step_ids(self, actions: np.ndarray, ids: np.ndarray) -> tuple:
        """Step games ``ids`` (ascending) only; returns their ``(frame [n, dim, dim], reward, terminated,
        truncated, info)`` in the order of ``ids``, ``info`` holding ``reward`` (unclipped) and ``lives``."""
        obs, reward, terminated, truncated, info = self._pool.step(actions.astype(np.int32), ids.astype(np.int32))
        env_id, lives, raw = info["env_id"], info["lives"], info["reward"]
        if (np.diff(env_id) < 0).any():  # the pool answered in its own order
            order = np.argsort(env_id)
            obs, reward, terminated, truncated = obs[order], reward[order], terminated[order], truncated[order]
            lives, raw = lives[order], raw[order]
        return obs[:, -1], reward, terminated, truncated, {"reward": raw, "lives": lives}

    def _start(self, ids: np.ndarray, frames: np.ndarray) -> None:
        """After EnvPool's reset of games ``ids`` (first frames ``frames [n, dim, dim]``): FIRE and action 2
        (FireResetEnv), then a stack of 4 copies of the last frame (FrameStackObservation)."""
        frames = frames.copy()
        if self._fire:
            for action in (1, 2):
                frame, _reward, _terminated, _truncated, info = self._step_ids(np.full(len(ids), action), ids)
                frames[:] = frame
                self._game_return[ids] += info["reward"]
                self._game_length[ids] += 1
                self._lives[ids] = info["lives"]
        self._stack[ids] = frames[:, None]

    def reset(self, *, seed: int | None = None, options: dict | None = None) -> tuple[np.ndarray, dict]:
        """Reset every game.

        Returns:
            ``(obs uint8 [E, 4, dim, dim] or [E, dim, dim, 4], info)``; ``info["lives"]`` int ``[E]``.
        """
        if seed is not None:
            self._pool.close()
            self._pool = self._envpool.make(self._task_id, seed=int(seed), **self._kwargs)
        obs, info = self._pool.reset()
        order = np.argsort(info["env_id"])
        ids = np.arange(self.num_envs)
        self._game_return[:] = 0.0
        self._game_length[:] = 0
        self._lives[:] = info["lives"][order]
        self._start(ids, obs[order, -1])
        return self._obs(), {"lives": self._lives.copy()}

    def step(self, actions: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, dict]:
        """Step every game once (4 frames) and reset the games whose episode ended (``SAME_STEP``).

        Args:
            actions: int ``[E]``, one discrete action per game.

        Returns:
            ``obs`` uint8 ``[E, 4, dim, dim]`` (``NHWC``: ``[E, dim, dim, 4]``), ``reward`` float32 ``[E]``
            (in ``{-1, 0, 1}`` unless ``test``), ``terminated`` bool ``[E]`` (a lost life too unless
            ``test``), ``truncated`` bool ``[E]`` (the step limit), ``info`` with ``lives`` int ``[E]``.
        """
        actions = np.asarray(actions).reshape(self.num_envs)
        ids = np.arange(self.num_envs)
        frame, reward, terminated, truncated, info = self._step_ids(actions, ids)
        self._game_return += info["reward"]
        self._game_length += 1
        lives = info["lives"]
        # a game is over when the emulator says so or at the step limit; a lost life (lives > 0) is not
        lost_life = terminated & ~truncated & (lives > 0) & (lives < self._lives) & (not self._test)
        self._lives[:] = lives
        self._stack[:, :-1] = self._stack[:, 1:]
        self._stack[:, -1] = frame
        done = terminated | truncated
        for i in np.nonzero(done & ~lost_life)[0]:
            self._finished.append((float(self._game_return[i]), int(self._game_length[i])))
            self._game_return[i], self._game_length[i] = 0.0, 0
        if done.any():
            reset_ids = np.nonzero(done)[0]
            # EnvPool resets an ended episode on its next step (the action is ignored): 1..noop_max no-op
            # frames, after an ALE reset if the game is over
            new_frames, _, _, _, reset_info = self._step_ids(np.zeros(len(reset_ids)), reset_ids)
            self._lives[reset_ids] = reset_info["lives"]
            self._start(reset_ids, new_frames)
        return (
            self._obs(),
            reward.astype(np.float32),
            terminated.astype(bool),
            truncated.astype(bool),
            {"lives": self._lives.copy()},
        )

    def next_episode_results(self) -> list[tuple[float, int]]:
        """``(return, length)`` of each whole game finished since the last call: the unclipped score and the
        steps (of 4 frames) it took, as :class:`~parl_core.env.atari_wrappers.MonitorEnv` reports them."""
        finished, self._finished = self._finished, []
        return finished

    def close(self, **kwargs: Any) -> None:  # noqa: D102 (gymnasium's contract)
        self._pool.close()
