"""PaddlePaddle implementations of the PARL algorithms (imported lazily by ``parl_algorithms``).

Same names, constructor keywords, defaults and return values as PARL 2.2.1's ``parl.algorithms.paddle``;
the math lives in :mod:`parl_algorithms.paddle.functional`, which mirrors the torch functions and is
tested against them on the same inputs.
"""

from typing import Any

from parl_algorithms import _implemented, load_algorithm

__all__ = _implemented("paddle")


def __getattr__(name: str) -> Any:
    value = load_algorithm("paddle", name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
