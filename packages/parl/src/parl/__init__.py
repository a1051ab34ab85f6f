"""PARL: a high-performance, distributed reinforcement-learning framework.

This meta-package only re-exports the five PARL packages, lazily (``import parl`` imports no
deep-learning framework):

- ``parl.Model``, ``parl.Algorithm``, ``parl.Agent``      -> ``parl_core`` (selected backend)
- ``parl.algorithms``                                      -> ``parl_algorithms``
- ``parl.utils``, ``parl.env``                             -> ``parl_core.utils``, ``parl_core.env``
- ``parl.remote_class``, ``parl.connect``, ``parl.disconnect`` -> ``parl_remote``
- ``parl.remote`` (``.client``, ``.exceptions``, ``.remote_decorator``) -> PARL 2.x's paths into ``parl_remote``
- ``parl.evokit``                                          -> ``evokit``
"""

from __future__ import annotations

import importlib
from typing import Any

__version__ = "3.0.0"

# attribute -> (module, attribute in it or None for the module itself)
_EXPORTS: dict[str, tuple[str, str | None]] = {
    "Model": ("parl_core", "Model"),
    "Algorithm": ("parl_core", "Algorithm"),
    "Agent": ("parl_core", "Agent"),
    "get_backend": ("parl_core", "get_backend"),
    "set_backend": ("parl_core", "set_backend"),
    "algorithms": ("parl.algorithms", None),
    "utils": ("parl.utils", None),
    "env": ("parl.env", None),
    "remote": ("parl.remote", None),
    "remote_class": ("parl_remote", "remote_class"),
    "connect": ("parl_remote", "connect"),
    "disconnect": ("parl_remote", "disconnect"),
    "evokit": ("evokit", None),
}

__all__ = sorted(_EXPORTS) + ["__version__"]


def __getattr__(name: str) -> Any:
    try:
        module_name, attr = _EXPORTS[name]
    except KeyError:
        raise AttributeError(f"module 'parl' has no attribute {name!r}") from None
    module = importlib.import_module(module_name)
    value = module if attr is None else getattr(module, attr)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_EXPORTS))
