"""PARL's :class:`ActionMappingWrapper`: a policy acting in ``[-1, 1]`` on any ``Box`` action bounds."""

from __future__ import annotations

from typing import Any

import numpy as np
from gymnasium import spaces

from parl_core.env.compat_wrappers import Wrapper

__all__ = ["ActionMappingWrapper"]

# PARL's tolerance on the [-1, 1] range (noise added then clipped may overshoot by rounding)
_RANGE_TOLERANCE = 1e-3


class ActionMappingWrapper(Wrapper):
    """Map a policy's action in ``[-1, 1]`` to the env's ``Box`` bounds (PARL's wrapper).

    ``env_action = low + (action + 1) / 2 * (high - low)``, clipped to ``[low, high]``; bounds are per
    dimension (PARL used the first dimension's bounds for all). Everything else — ``reset``, ``seed``,
    ``_max_episode_steps``, the observation space — passes through, whichever API (old gym or
    gymnasium) the wrapped env follows; the wrapper's ``action_space`` is ``Box(-1, 1)``.

    Args:
        env: an env with a ``Box`` action space (``low`` / ``high`` arrays, finite).

    Attributes:
        low_bound, high_bound: float32 ``[*action_shape]``, the env's bounds.

    Raises:
        TypeError: the action space is not a ``Box`` (has no ``low`` / ``high``).
        ValueError: the bounds are not finite with ``high > low``; from :meth:`step`, an action outside
            ``[-1, 1]`` (clip it with ``np.clip(action, -1, 1)`` or squash the policy with ``tanh``).
    """

    def __init__(self, env: Any) -> None:
        super().__init__(env)
        space = env.action_space
        if not (hasattr(space, "low") and hasattr(space, "high")):
            raise TypeError(f"ActionMappingWrapper needs a Box action space, got {space!r}; it rescales continuous "
                            "actions only")
        self.low_bound = np.asarray(space.low, dtype=np.float32)
        self.high_bound = np.asarray(space.high, dtype=np.float32)
        if not (np.all(np.isfinite(self.low_bound)) and np.all(np.isfinite(self.high_bound))
                and np.all(self.high_bound > self.low_bound)):
            raise ValueError(f"ActionMappingWrapper needs finite bounds with high > low, got low={space.low}, "
                             f"high={space.high}")
        self.action_space = spaces.Box(-1.0, 1.0, shape=self.low_bound.shape, dtype=np.float32)
        limit = getattr(env, "_max_episode_steps", None)
        if limit is None:
            limit = getattr(getattr(env, "spec", None), "max_episode_steps", None)
        if limit is not None:
            self._max_episode_steps = int(limit)

    def action(self, model_output_act: Any) -> np.ndarray:
        """The env action for a policy output in ``[-1, 1]``: float32 ``[*action_shape]``.

        Raises:
            ValueError: an element lies outside ``[-1, 1]`` (beyond PARL's 1e-3 tolerance).
        """
        act = np.asarray(model_output_act, dtype=np.float32)
        if np.any(act < -1.0 - _RANGE_TOLERANCE) or np.any(act > 1.0 + _RANGE_TOLERANCE):
            raise ValueError(f"ActionMappingWrapper expects actions in [-1, 1], got {model_output_act!r}; clip them "
                             "with np.clip(action, -1, 1) or squash the policy output with tanh")
        mapped = self.low_bound + (act + 1.0) * 0.5 * (self.high_bound - self.low_bound)
        return np.clip(mapped, self.low_bound, self.high_bound)

    def step(self, model_output_act: Any) -> Any:
        """Step the env with the mapped action; returns what the wrapped env's ``step`` returns."""
        return self.env.step(self.action(model_output_act))
