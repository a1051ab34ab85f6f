"""``parl.env``: re-exports ``parl_core.env`` (see that package for the documentation).

Submodules are aliases, not copies: ``parl.env.X`` is the very module object ``parl_core.env.X``.
"""

import importlib as _importlib
import pkgutil as _pkgutil
import sys as _sys

import parl_core.env as _impl
from parl_core.env import *  # noqa: F401,F403

__all__ = list(getattr(_impl, "__all__", []))

for _info in _pkgutil.iter_modules(_impl.__path__):
    if not _info.name.startswith("_"):
        _sys.modules.setdefault(f"{__name__}.{_info.name}",
                                _importlib.import_module(f"{_impl.__name__}.{_info.name}"))


def __getattr__(name):
    return getattr(_impl, name)
