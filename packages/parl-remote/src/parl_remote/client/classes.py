"""How a class travels to a job: by reference (module + name) when the job can import it, else by value."""

from __future__ import annotations

import pathlib
import sys
import threading
from typing import Any

import cloudpickle

from parl_remote import files
from parl_remote.wire import serialization

_CLASS_CACHE: dict[tuple[type, bool], tuple[Any, bytes | None]] = {}
_BY_VALUE_LOCK = threading.Lock()


def _importable_remotely(module: Any, entry_shipped: bool) -> bool:
    """True when a job can import ``module`` itself: shipped with the entry directory, or installed."""
    path = getattr(module, "__file__", None)
    if not path:
        return False
    resolved = pathlib.Path(path).resolve()
    entry = files.entry_directory()
    if entry is not None and entry in resolved.parents:
        return entry_shipped
    prefixes = {pathlib.Path(p).resolve() for p in (sys.prefix, sys.base_prefix)}
    if any(p in resolved.parents for p in prefixes):
        return True
    top = module.__name__.partition(".")[0]
    return top in _installed_top_levels()


_TOP_LEVELS: set[str] | None = None


def _installed_top_levels() -> set[str]:
    global _TOP_LEVELS
    if _TOP_LEVELS is None:
        import importlib.metadata

        _TOP_LEVELS = set(importlib.metadata.packages_distributions())
    return _TOP_LEVELS



def class_parts(cls: type, entry_shipped: bool = True) -> tuple[Any, bytes | None]:
    """How the class travels: ``(module, qualname)`` when the job can import it, else by value.

    A class is sent by reference when its module is shipped (under the entry script's directory, unless
    ``entry_shipped`` is False) or installed (site-packages, or an installed distribution's package); otherwise
    its whole module is pickled by value with cloudpickle (classes in ``__main__``, notebooks, test modules,
    local files).
    """
    cached = _CLASS_CACHE.get((cls, entry_shipped))
    if cached is not None:
        return cached
    module = sys.modules.get(cls.__module__)
    ref = None
    if module is not None and cls.__module__ != "__main__" and "<locals>" not in cls.__qualname__:
        if _importable_remotely(module, entry_shipped):
            ref = (cls.__module__, cls.__qualname__)
    blob = None
    if ref is None:
        by_value = module is not None and cls.__module__ != "__main__" and getattr(module, "__file__", None)
        with _BY_VALUE_LOCK:  # cloudpickle's by-value registry is global: threads starting actors take turns
            if by_value:
                cloudpickle.register_pickle_by_value(module)
            try:
                blob = serialization.dumps_code(cls)
            finally:
                if by_value:
                    cloudpickle.unregister_pickle_by_value(module)
    _CLASS_CACHE[(cls, entry_shipped)] = (ref, blob)
    return ref, blob

