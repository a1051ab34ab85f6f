"""PaddlePaddle implementations of the PARL algorithms (imported lazily by ``parl_algorithms``).

Same names, constructor keywords, defaults and return values as PARL 2.2.1's ``parl.algorithms.paddle``;
the math lives in :mod:`parl_algorithms.paddle.functional`, which mirrors the torch functions and is
tested against them on the same inputs.
"""

import pathlib
from typing import Any

from parl_algorithms import _ALGORITHMS, load_algorithm

# the algorithms this backend implements (a module of that name is here); the others raise ImportError naming
# the backend that has them (``load_algorithm``)
_HERE = pathlib.Path(__file__).parent
__all__ = sorted(name for name, module in _ALGORITHMS.items() if (_HERE / f"{module}.py").exists())


def __getattr__(name: str) -> Any:
    value = load_algorithm("paddle", name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
