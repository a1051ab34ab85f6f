"""parl_algorithms: PARL's single-process algorithm zoo on PyTorch.

``import parl_algorithms`` imports no deep-learning framework; the classes resolve lazily:
``parl_algorithms.DQN`` imports ``parl_algorithms.torch.dqn`` on first access.

Algorithms: ``PolicyGradient`` (REINFORCE), ``DQN``, ``DDQN``, ``A2C``, ``PPO``, ``DDPG``, ``TD3``,
``SAC``, ``CQL``.
"""

from __future__ import annotations

import importlib
from typing import Any

__version__ = "3.0.0"

# class name -> module (under parl_algorithms.torch) that defines it
_ALGORITHMS: dict[str, str] = {
    "PolicyGradient": "policy_gradient",
    "DQN": "dqn",
    "DDQN": "dqn",
    "A2C": "a2c",
    "A3C": "a3c",
    "PPO": "ppo",
    "DDPG": "ddpg",
    "TD3": "td3",
    "SAC": "sac",
    "CQL": "cql",
    "IMPALA": "impala",
}

__all__ = sorted(_ALGORITHMS) + ["__version__"]


def __getattr__(name: str) -> Any:
    module = _ALGORITHMS.get(name)
    if module is None:
        raise AttributeError(f"module 'parl_algorithms' has no attribute {name!r}")
    try:
        impl = importlib.import_module(f"parl_algorithms.torch.{module}")
    except ModuleNotFoundError as err:
        if err.name != "torch":
            raise
        raise ImportError(f"parl_algorithms.{name} runs on PyTorch, which is not installed; "
                          "install it with `pip install 'parl-algorithms[torch]'`") from err
    value = getattr(impl, name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_ALGORITHMS))
