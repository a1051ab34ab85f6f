"""``parl.utils.utils``: the small helpers of PARL 2.x's module of that name that user code calls.

``check_model_method`` is ``parl_core.utils.check_model_method``. Not offered (listed with the reason in
``packages/parl/tests/test_parl221_names.py``): ``get_fluid_version``, ``check_version_for_fluid`` and
``check_version_for_xpu`` (Paddle's fluid API and XPU devices are not supported), ``kill_process`` (xparl's
own helper, killing processes by a regular expression) and ``isnotebook`` (the logger's own helper).
"""

from __future__ import annotations

import importlib.util
import sys
from typing import Any

from parl_core.utils import check_model_method

__all__ = [
    "MAX_INT32",
    "_HAS_FLUID",
    "_HAS_PADDLE",
    "_HAS_TORCH",
    "_IS_MAC",
    "_IS_WINDOWS",
    "check_model_method",
    "has_func",
    "to_byte",
    "to_str",
]

#: the largest int32, PARL's seed bound
MAX_INT32 = 0x7FFFFFFF
#: Paddle's fluid (static-graph) API is not supported here
_HAS_FLUID = False
#: whether paddle / torch are installed (found, not imported)
_HAS_PADDLE = importlib.util.find_spec("paddle") is not None
_HAS_TORCH = importlib.util.find_spec("torch") is not None
_IS_WINDOWS = sys.platform.startswith("win")
_IS_MAC = sys.platform == "darwin"


def has_func(obj: Any, fun: str) -> bool:
    """Whether ``obj`` has a callable attribute named ``fun``."""
    return callable(getattr(obj, fun, None))


def to_str(byte: bytes) -> str:
    """``bytes`` -> ``str`` (UTF-8)."""
    return str(byte.decode())


def to_byte(string: str) -> bytes:
    """``str`` -> ``bytes`` (UTF-8)."""
    return string.encode()
