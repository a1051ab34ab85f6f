"""Test-only ``gym.spaces``: gymnasium's spaces, with gym 0.18's ``Box.contains``.

gym <= 0.18 checked only the shape and the bounds of a ``Box`` sample; gym 0.21 (and gymnasium) also
require its dtype to cast safely to the space's. PARL's course (``lesson5/ddpg/env.py``, written for gym
0.18) asserts ``self.action_space.contains(action)`` on a float64 action in a float32 ``Box``.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from gymnasium.spaces import *  # noqa: F403 - gym.spaces.Discrete, Dict, Tuple, ... as in gym
from gymnasium.spaces import Box as _Box


class Box(_Box):
    """gymnasium's ``Box`` whose ``contains`` is gym 0.18's: shape and bounds, any numeric dtype."""

    def contains(self, x: Any) -> bool:
        if isinstance(x, list):
            x = np.array(x)
        return bool(x.shape == self.shape and np.all(x >= self.low) and np.all(x <= self.high))
