"""Gymnasium's MuJoCo tasks on EnvPool (C++ batched MuJoCo with its own thread pool), as a gymnasium vector env.

:class:`EnvPoolMuJoCo` steps E copies of a gymnasium MuJoCo task (``"HalfCheetah-v5"``, ``"Hopper-v4"``, ...)
in EnvPool's C++ pool and answers as ``gym.make_vec(env_id, num_envs=E, vectorization_mode="sync")`` does:
float64 observations ``[E, obs_dim]``, gymnasium's rewards, ``terminated`` / ``truncated`` (the 1000-step
limit), and gymnasium's default ``NEXT_STEP`` auto-reset (the step after an episode's end returns the first
observation of the next one, reward 0, and ignores its action).

Which tasks match gymnasium's (``tests/test_core_envpool_mujoco.py``, EnvPool 1.2.5 against gymnasium 1.x on
MuJoCo 4.0, both with ``reset_noise_scale=0``, the same actions):

- :data:`MATCHED_TASKS` (planar and fixed-base bodies: HalfCheetah, Hopper, Walker2d, Swimmer in versions v4
  and v5; InvertedPendulum-v5, InvertedDoublePendulum-v5, whose v4 in gymnasium has no ``reset_noise_scale``
  to compare with): the same model and observations to
  floating-point round-off (<= 1e-12 per step), rewards to float32 precision (EnvPool computes them in
  float32; given here as float64: absolute difference <= 1e-6); a chaotic task (HalfCheetah) then amplifies
  the round-off, as it would between two MuJoCo builds (1e-6 after ~60 steps).
- Ant, Humanoid, HumanoidStandup (a free-floating torso): the torso's orientation and angular velocity differ
  by 1e-8 to 1e-4 after the first step (not traced further; EnvPool bundles its own MuJoCo build), and the
  trajectories part within ~10-20 steps: the same task, not the same numbers. :class:`EnvPoolMuJoCo` takes them
  only with ``allow_unmatched=True``.
- Reacher, Pusher: EnvPool samples their goals differently (no ``reset_noise_scale``); not compared, not taken.

What differs on every task: the initial-state noise comes from EnvPool's generator (env ``i`` seeded
``seed + i`` when the pool is built), not from gymnasium's ``reset(seed=...)`` of each env: the same seed gives
other initial states, from the same distribution. ``info`` is empty (gymnasium's reward terms are not copied).
EnvPool is an optional dependency (``pip install 'parl-core[envpool]'``).
"""

from __future__ import annotations

from typing import Any

import gymnasium as gym
import numpy as np

from parl_core.env.envpool_atari import INSTALL_HINT

__all__ = ["MATCHED_TASKS", "UNMATCHED_TASKS", "EnvPoolMuJoCo"]

# EnvPool's tasks whose dynamics, observations and rewards equal gymnasium's same-version task (see above)
MATCHED_TASKS = frozenset([f"{name}-{v}" for name in ("HalfCheetah", "Hopper", "Walker2d", "Swimmer")
                           for v in ("v4", "v5")] + ["InvertedPendulum-v5", "InvertedDoublePendulum-v5"])
# the same task in EnvPool, with trajectories that part from gymnasium's after a few steps (free-floating torso)
UNMATCHED_TASKS = frozenset(f"{name}-{v}" for name in ("Ant", "Humanoid", "HumanoidStandup") for v in ("v4", "v5"))


class EnvPoolMuJoCo(gym.vector.VectorEnv):
    """E copies of a gymnasium MuJoCo task stepped in EnvPool, with ``gym.make_vec``'s API and auto-reset.

    Args:
        env_id: a gymnasium MuJoCo id of :data:`MATCHED_TASKS` (``"HalfCheetah-v5"``); EnvPool uses the same id.
        num_envs: E, envs stepped together.
        seed: env ``i``'s initial-state noise is seeded ``seed + i`` (EnvPool's scheme); ``reset(seed=s)``
            rebuilds the pool with seed ``s``.
        num_threads: EnvPool's worker threads (default 1: one CPU per process).
        allow_unmatched: also take :data:`UNMATCHED_TASKS` (same task, different numbers; see the module).
        **task_kwargs: the task's options, as ``gym.make`` takes them (``reset_noise_scale=0.0``,
            ``ctrl_cost_weight``, ...; EnvPool's names are gymnasium's).

    Raises:
        ImportError: EnvPool is missing (the message names the extra to install).
        ValueError: an id EnvPool does not match (the message says which ids are taken), or ``num_envs < 1``.
    """

    metadata = {"autoreset_mode": gym.vector.AutoresetMode.NEXT_STEP}

    def __init__(self, env_id: str, num_envs: int, *, seed: int = 0, num_threads: int = 1,
                 allow_unmatched: bool = False, **task_kwargs: Any) -> None:
        try:
            import envpool
        except ImportError as err:
            raise ImportError(INSTALL_HINT) from err
        taken = MATCHED_TASKS | (UNMATCHED_TASKS if allow_unmatched else frozenset())
        if env_id not in taken:
            hint = " (pass allow_unmatched=True to take it anyway)" if env_id in UNMATCHED_TASKS else ""
            raise ValueError(f"EnvPoolMuJoCo: {env_id!r} is not a task whose EnvPool version matches gymnasium's"
                             f"{hint}; matched: {', '.join(sorted(MATCHED_TASKS))}")
        if num_envs < 1:
            raise ValueError(f"EnvPoolMuJoCo needs num_envs >= 1, got {num_envs}")
        self._envpool = envpool
        self._task_id = env_id
        self._kwargs = dict(env_type="gymnasium", num_envs=num_envs, batch_size=num_envs, num_threads=num_threads,
                            **task_kwargs)
        self._pool = envpool.make(env_id, seed=int(seed), **self._kwargs)
        self.num_envs = num_envs
        space = self._pool.action_space
        self.single_action_space = gym.spaces.Box(space.low.astype(np.float32), space.high.astype(np.float32),
                                                  space.shape, np.float32)
        self.action_space = gym.vector.utils.batch_space(self.single_action_space, num_envs)
        space = self._pool.observation_space
        self.single_observation_space = gym.spaces.Box(-np.inf, np.inf, space.shape, np.float64)
        self.observation_space = gym.vector.utils.batch_space(self.single_observation_space, num_envs)
        self.spec = gym.spec(env_id)

    @staticmethod
    def _in_order(info: dict, *arrays: np.ndarray) -> tuple[np.ndarray, ...]:
        """``arrays`` (rows in the pool's answer order) in env order 0..E-1."""
        env_id = info["env_id"]
        if (np.diff(env_id) < 0).any():
            order = np.argsort(env_id)
            return tuple(a[order] for a in arrays)
        return arrays

    def reset(self, *, seed: int | None = None, options: dict | None = None) -> tuple[np.ndarray, dict]:
        """Reset every env (new initial states from EnvPool's generator).

        Returns:
            ``(obs float64 [E, obs_dim], {})``.
        """
        if seed is not None:
            self._pool.close()
            self._pool = self._envpool.make(self._task_id, seed=int(seed), **self._kwargs)
        obs, info = self._pool.reset()
        (obs,) = self._in_order(info, obs)
        return np.asarray(obs, np.float64), {}

    def step(self, actions: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, dict]:
        """Step every env once; an env whose episode ended in the previous step is reset instead (``NEXT_STEP``).

        Args:
            actions: float ``[E, act_dim]``, within the action space's bounds (EnvPool clips nothing either).

        Returns:
            ``obs`` float64 ``[E, obs_dim]``, ``reward`` float64 ``[E]``, ``terminated`` bool ``[E]``,
            ``truncated`` bool ``[E]`` (the task's step limit), ``info`` ``{}``.
        """
        actions = np.asarray(actions, np.float64).reshape(self.num_envs, *self.single_action_space.shape)
        obs, reward, terminated, truncated, info = self._pool.step(actions)
        obs, reward, terminated, truncated = self._in_order(info, obs, reward, terminated, truncated)
        return (np.asarray(obs, np.float64), np.asarray(reward, np.float64), terminated.astype(bool),
                truncated.astype(bool), {})

    def step_envs(self, actions: np.ndarray, env_ids: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray,
                                                                          np.ndarray]:
        """Step only envs ``env_ids`` (the others keep their state): for episodes played in lockstep until each
        ends, where an env whose episode ended is not stepped again before the next :meth:`reset`.

        Args:
            actions: float ``[n, act_dim]``, row ``k`` for env ``env_ids[k]``.
            env_ids: int ``[n]``, distinct, in ``0..E-1``.

        Returns:
            ``(obs float64 [n, obs_dim], reward float64 [n], terminated bool [n], truncated bool [n])`` in the
            order of ``env_ids``.
        """
        env_ids = np.asarray(env_ids, np.int32).reshape(-1)
        actions = np.asarray(actions, np.float64).reshape(len(env_ids), *self.single_action_space.shape)
        obs, reward, terminated, truncated, info = self._pool.step(actions, env_ids)
        if not np.array_equal(info["env_id"], env_ids):  # the pool answered in its own order
            order = np.argsort(info["env_id"])[np.argsort(np.argsort(env_ids))]
            obs, reward, terminated, truncated = obs[order], reward[order], terminated[order], truncated[order]
        return (np.asarray(obs, np.float64), np.asarray(reward, np.float64), terminated.astype(bool),
                truncated.astype(bool))

    def close(self, **kwargs: Any) -> None:  # noqa: D102 (gymnasium's contract)
        self._pool.close()
