"""``parl.utils``: re-exports ``parl_core.utils`` (see that package for the documentation).

Submodules are aliases, not copies: ``parl.utils.X`` is the very module object ``parl_core.utils.X``.
"""

import importlib as _importlib
import pkgutil as _pkgutil
import sys as _sys

import parl_core.utils as _impl
from parl_core.utils import *  # noqa: F401,F403

__all__ = list(getattr(_impl, "__all__", []))

for _info in _pkgutil.iter_modules(_impl.__path__):
    if not _info.name.startswith("_"):
        _sys.modules.setdefault(f"{__name__}.{_info.name}",
                                _importlib.import_module(f"{_impl.__name__}.{_info.name}"))


def __getattr__(name):
    return getattr(_impl, name)
