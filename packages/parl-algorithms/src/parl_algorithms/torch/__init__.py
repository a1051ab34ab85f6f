"""Torch implementations of the PARL algorithms: ``parl_algorithms.torch.DQN`` ... (imported lazily)."""

from typing import Any

from parl_algorithms import _ALGORITHMS, load_algorithm

__all__ = sorted(_ALGORITHMS)


def __getattr__(name: str) -> Any:
    value = load_algorithm("torch", name)
    globals()[name] = value
    return value
