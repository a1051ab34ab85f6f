"""Explicit, lazy selection of the deep-learning backend.

The backend is chosen, in order, by :func:`set_backend`, by the ``PARL_BACKEND`` environment variable
(``torch`` or ``paddle``), or by the first framework found installed (torch, then paddle). Nothing is
imported until a backend class (``parl_core.Model`` ...) is first used, and the choice is then fixed
for the process: switching afterwards raises ``RuntimeError`` instead of silently mixing frameworks.
"""

from __future__ import annotations

import importlib
import importlib.util
import os
from types import ModuleType

BACKENDS = ("torch", "paddle")
_IMPLEMENTED = ("torch",)

_selected: str | None = None
_resolved: str | None = None


def _validate(name: str, source: str) -> str:
    if not isinstance(name, str) or name.strip().lower() not in BACKENDS:
        raise ValueError(f"unknown PARL backend {name!r} from {source}; choose one of {BACKENDS}")
    return name.strip().lower()


def set_backend(name: str) -> None:
    """Select the deep-learning backend for this process.

    Args:
        name: ``"torch"`` or ``"paddle"`` (case-insensitive).

    Raises:
        ValueError: ``name`` is not a known backend.
        RuntimeError: a different backend was already resolved (a backend class was already used).
    """
    global _selected
    name = _validate(name, "set_backend()")
    if _resolved is not None and _resolved != name:
        raise RuntimeError(
            f"the PARL backend is already {_resolved!r} (its classes are in use); call "
            f"parl_core.set_backend({name!r}) before the first use of parl.Model / Algorithm / Agent")
    _selected = name


def get_backend() -> str:
    """Return the backend that is (or will be) used: ``"torch"`` or ``"paddle"``.

    Raises:
        ValueError: ``PARL_BACKEND`` holds an unknown name.
        ImportError: no backend was selected and neither torch nor paddle is installed.
    """
    if _resolved is not None:
        return _resolved
    if _selected is not None:
        return _selected
    env = os.environ.get("PARL_BACKEND", "").strip()
    if env:
        return _validate(env, "the PARL_BACKEND environment variable")
    for name, module in (("torch", "torch"), ("paddle", "paddle")):
        if importlib.util.find_spec(module) is not None:
            return name
    raise ImportError(
        "no deep-learning framework found for parl.Model / Algorithm / Agent; install one with "
        "`pip install 'parl-core[torch]'` (the remote runtime, parl_remote, needs none)")


def backend_module() -> ModuleType:
    """Import and return the module holding the selected backend's ``Model``, ``Algorithm``, ``Agent``.

    Raises:
        NotImplementedError: the paddle backend was selected; this release implements torch only.
        ImportError: the selected framework is not installed.
    """
    global _resolved
    name = get_backend()
    if name not in _IMPLEMENTED:
        raise NotImplementedError(
            f"the {name!r} backend of parl-core is not available in this release; "
            "use torch (unset PARL_BACKEND or set PARL_BACKEND=torch)")
    if importlib.util.find_spec(name) is None:
        raise ImportError(f"PARL backend {name!r} is selected but not installed; "
                          f"`pip install 'parl-core[{name}]'` or choose another backend")
    module = importlib.import_module(f"parl_core.{name}")
    _resolved = name
    return module
