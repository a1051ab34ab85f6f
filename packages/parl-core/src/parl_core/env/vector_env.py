"""PARL's :class:`VectorEnv`: a list of old-API envs stepped together, each reset when it is done."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

__all__ = ["VectorEnv"]


class VectorEnv:
    """Step a list of old gym-style envs together (PARL's ``VectorEnv``), in this process.

    An env whose episode ends is reset at once, and the observation returned for it is the first of
    the next episode (as in PARL). For gymnasium envs use ``gymnasium.vector.SyncVectorEnv``, or wrap
    each one in :class:`~parl_core.env.CompatWrapper` first.

    Args:
        envs: the environments (``reset() -> obs``, ``step(a) -> (obs, reward, done, info)``).

    Raises:
        ValueError: ``envs`` is empty.
    """

    def __init__(self, envs: Sequence[Any]) -> None:
        if len(envs) == 0:
            raise ValueError("VectorEnv needs at least one env, got an empty list")
        self.envs = list(envs)
        self.envs_num = len(self.envs)

    def reset(self) -> list[Any]:
        """Reset every env; returns the list of first observations."""
        return [env.reset() for env in self.envs]

    def step(self, actions: Sequence[Any]) -> tuple[list[Any], list[float], list[bool], list[dict]]:
        """Step env ``i`` with ``actions[i]``.

        Args:
            actions: one action per env (a list or an array ``[envs_num, *action_shape]``).

        Returns:
            ``(obs_batch, reward_batch, done_batch, info_batch)``, lists of length ``envs_num``.

        Raises:
            ValueError: the number of actions differs from the number of envs.
        """
        if len(actions) != self.envs_num:
            raise ValueError(f"VectorEnv.step got {len(actions)} actions for {self.envs_num} envs; pass one per env")
        obs_batch, reward_batch, done_batch, info_batch = [], [], [], []
        for env, action in zip(self.envs, actions, strict=True):
            obs, reward, done, info = env.step(action)
            if done:
                obs = env.reset()
            obs_batch.append(obs)
            reward_batch.append(reward)
            done_batch.append(done)
            info_batch.append(info)
        return obs_batch, reward_batch, done_batch, info_batch
