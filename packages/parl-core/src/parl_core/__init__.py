"""PARL core: the Model / Algorithm / Agent abstractions, utils and gymnasium helpers.

``parl_core.Model``, ``parl_core.Algorithm`` and ``parl_core.Agent`` resolve lazily to the classes of
the selected deep-learning backend (see :mod:`parl_core.backend`): importing this package imports no
deep-learning framework and changes no global state (threads, logging, warnings, start methods).
"""

from __future__ import annotations

from typing import Any

from parl_core.backend import get_backend, set_backend

__version__ = "3.0.0"
__all__ = ["Model", "Algorithm", "Agent", "get_backend", "set_backend", "__version__"]

_BACKEND_CLASSES = ("Model", "Algorithm", "Agent")


def __getattr__(name: str) -> Any:
    if name in _BACKEND_CLASSES:
        from parl_core.backend import backend_module

        return getattr(backend_module(), name)
    raise AttributeError(f"module 'parl_core' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_BACKEND_CLASSES))
