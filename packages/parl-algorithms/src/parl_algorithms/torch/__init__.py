"""Torch implementations of the PARL algorithms: ``parl_algorithms.torch.DQN`` ... (imported lazily)."""

import pathlib
from typing import Any

from parl_algorithms import _ALGORITHMS, load_algorithm

# the algorithms this backend implements (a module of that name is here); the others raise ImportError naming
# the backend that has them (``load_algorithm``)
_HERE = pathlib.Path(__file__).parent
__all__ = sorted(name for name, module in _ALGORITHMS.items() if (_HERE / f"{module}.py").exists())


def __getattr__(name: str) -> Any:
    value = load_algorithm("torch", name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
