"""``parl.utils``: re-exports ``parl_core.utils`` (see that package for the documentation), plus the helpers
of PARL 2.x's ``parl.utils.utils`` and ``parl.utils.globvars`` modules that live only in this facade.

Submodules are aliases, not copies: ``parl.utils.X`` is the very module object ``parl_core.utils.X``.
"""

from typing import Any

from parl._reexport import reexport

_core_getattr = reexport(globals(), "parl_core.utils")

# name -> facade submodule (PARL 2.x's own modules; not in parl_core.utils)
_FACADE = {
    "GlobalConfig": "globvars",
    "global_config": "globvars",
    "MAX_INT32": "utils",
    "has_func": "utils",
    "to_byte": "utils",
    "to_str": "utils",
}
__all__ = sorted([*__all__, *_FACADE])  # noqa: F821 - set by reexport()


def __getattr__(name: str) -> Any:
    if name in _FACADE:
        import importlib

        value = getattr(importlib.import_module(f"parl.utils.{_FACADE[name]}"), name)
        globals()[name] = value
        return value
    return _core_getattr(name)
