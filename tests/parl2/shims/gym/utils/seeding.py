"""Test-only ``gym.utils.seeding``: gym < 0.22's ``np_random``, which gave a ``numpy.random.RandomState``.

Envs written for old gym (PARL's course: ``lesson5/ddpg/env.py``) call ``self.np_random, seed =
seeding.np_random(seed)`` and then RandomState methods. gymnasium's ``np_random`` gives a ``Generator``
instead. The stream is not gym's (gym hashed the seed first); only the type and the contract are.
"""

from __future__ import annotations

import numpy as np
from gymnasium import error


def np_random(seed: int | None = None) -> tuple[np.random.RandomState, int]:
    """A RandomState seeded with ``seed`` (a fresh random seed when None) and that seed.

    Raises:
        gymnasium.error.Error: ``seed`` is not None and not a non-negative int.
    """
    if seed is not None and not (isinstance(seed, int) and seed >= 0):
        raise error.Error(f"Seed must be a non-negative integer or omitted, not {seed!r}")
    if seed is None:
        seed = int(np.random.SeedSequence().entropy % 2**32)
    return np.random.RandomState(seed % 2**32), seed
