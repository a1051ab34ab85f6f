"""Torch implementations of the PARL algorithms: ``parl_algorithms.torch.DQN`` ... (imported lazily)."""

from typing import Any

from parl_algorithms import _implemented, load_algorithm

__all__ = _implemented("torch")


def __getattr__(name: str) -> Any:
    value = load_algorithm("torch", name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
