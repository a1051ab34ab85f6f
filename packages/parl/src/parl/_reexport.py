"""Make a sub-package of the ``parl`` facade an alias of another package."""

from __future__ import annotations

import importlib
import pkgutil
import sys
from collections.abc import Callable
from typing import Any


def reexport(namespace: dict[str, Any], target: str) -> Callable[[str], Any]:
    """Fill ``namespace`` (a facade module's globals) with the public names of package ``target``.

    Public names are ``target.__all__`` (or its non-underscore attributes), resolved on first access
    (so ``import parl.algorithms`` imports no framework, and an algorithm that the selected backend lacks
    raises only when it is used). Each public submodule
    ``target.X`` is registered as ``<facade>.X`` in ``sys.modules``, so ``import parl.utils.summary``
    yields the very module object ``parl_core.utils.summary`` (one module, one state), not a copy.

    Args:
        namespace: the facade module's ``globals()``.
        target: the dotted name of the package to re-export, e.g. ``"parl_core.utils"``.

    Returns:
        A module-level ``__getattr__`` that forwards any other attribute to ``target``.
    """
    impl = importlib.import_module(target)
    names = list(getattr(impl, "__all__", [n for n in vars(impl) if not n.startswith("_")]))
    namespace["__all__"] = names
    facade = namespace["__name__"]
    for info in pkgutil.iter_modules(impl.__path__):
        if not info.name.startswith("_"):
            sys.modules.setdefault(f"{facade}.{info.name}", importlib.import_module(f"{target}.{info.name}"))

    def __getattr__(name: str) -> Any:
        value = getattr(impl, name)
        namespace[name] = value
        return value

    return __getattr__
