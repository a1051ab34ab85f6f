"""Test-only ``d4rl``: ``qlearning_dataset(env)`` from a ``ReplayMemory.save`` file, for PARL's CQL example.

No D4RL dataset can be downloaded here. Set ``D4RL_SHIM_DATASET`` to an ``.npz`` written by
``parl.utils.ReplayMemory.save`` (e.g. the ``dataset.npz`` of ``examples/cql/train.py``, transitions of a
partly trained SAC policy); ``qlearning_dataset`` returns it under D4RL's keys.
"""

from __future__ import annotations

import os
from typing import Any

import numpy as np


def qlearning_dataset(env: Any = None, **kwargs: Any) -> dict[str, np.ndarray]:
    """D4RL's dict: ``observations``, ``actions``, ``next_observations``, ``rewards``, ``terminals``."""
    path = os.environ.get("D4RL_SHIM_DATASET")
    if not path:
        raise RuntimeError("the test-only d4rl needs D4RL_SHIM_DATASET=<ReplayMemory .npz file>")
    with np.load(path) as data:
        return {"observations": data["obs"], "actions": data["action"], "next_observations": data["next_obs"],
                "rewards": data["reward"], "terminals": data["terminal"]}


def get_normalized_score(env_name: str, score: Any) -> np.ndarray:
    """D4RL normalises by a random and an expert reference return per dataset; there are none here, so
    this returns the raw ``score`` (PARL's examples only log it)."""
    return np.asarray(score, dtype=np.float64)
