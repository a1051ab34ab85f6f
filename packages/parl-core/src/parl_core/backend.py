"""Explicit, lazy selection of the deep-learning backend.

The backend is chosen, in order, by :func:`set_backend`, by the ``PARL_BACKEND`` environment variable
(``torch`` or ``paddle``), or by the framework found installed; with both installed PARL's rule applies:
paddle, and one log line says how to choose torch. Nothing is imported until a backend class
(``parl_core.Model`` ...) is first used, and the choice is then fixed for the process: switching
afterwards raises ``RuntimeError`` instead of silently mixing frameworks. Both backends stay importable
explicitly whatever the default (``parl_core.torch``, ``parl_core.paddle``).
"""

from __future__ import annotations

import importlib
import importlib.util
import logging
import os
from types import ModuleType

BACKENDS = ("torch", "paddle")
_INSTALL_HINT = {"torch": "pip install 'parl-core[torch]'", "paddle": "pip install 'parl-core[paddle]'"}
_MODULE = {"torch": "torch", "paddle": "paddle"}

_selected: str | None = None
_resolved: str | None = None


def _validate(name: str, source: str) -> str:
    if not isinstance(name, str) or name.strip().lower() not in BACKENDS:
        raise ValueError(f"unknown PARL backend {name!r} from {source}; choose one of {BACKENDS}, "
                         "e.g. `export PARL_BACKEND=torch`")
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
    installed = [name for name in BACKENDS if importlib.util.find_spec(_MODULE[name]) is not None]
    if not installed:
        raise ImportError(
            "no deep-learning framework found for parl.Model / Algorithm / Agent; install one with "
            f"`{_INSTALL_HINT['torch']}` or `{_INSTALL_HINT['paddle']}` (the remote runtime, parl_remote, "
            "needs none)")
    return "paddle" if "paddle" in installed else installed[0]


def backend_module() -> ModuleType:
    """Import and return the module holding the selected backend's ``Model``, ``Algorithm``, ``Agent``.

    Raises:
        ImportError: the selected framework is not installed (the message names the pip command).
    """
    global _resolved
    name = get_backend()
    if importlib.util.find_spec(_MODULE[name]) is None:
        other = "torch" if name == "paddle" else "paddle"
        raise ImportError(f"PARL backend {name!r} is selected but {_MODULE[name]} is not installed; "
                          f"`{_INSTALL_HINT[name]}`, or choose the other backend with "
                          f"`export PARL_BACKEND={other}`")
    if (_resolved is None and _selected is None and not os.environ.get("PARL_BACKEND", "").strip()
            and name == "paddle" and importlib.util.find_spec("torch") is not None):
        logging.getLogger("parl_core").warning(
            "PARL detects two backend frameworks: paddlepaddle and torch; using paddle by default. "
            "To use torch, `export PARL_BACKEND=torch` (or call parl_core.set_backend('torch'))")
    module = importlib.import_module(f"parl_core.{name}")
    _resolved = name
    return module
