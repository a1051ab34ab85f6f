"""gymnasium helpers: :class:`CompatWrapper` (old gym API -> gymnasium), :class:`ActionMappingWrapper`.

gymnasium (a dependency of parl-core) is imported when a helper is first used, not by ``import parl``.
"""

from __future__ import annotations

from typing import Any

__all__ = ["ActionMappingWrapper", "CompatWrapper"]


def __getattr__(name: str) -> Any:
    if name in __all__:
        from parl_core.env import compat_wrappers

        return getattr(compat_wrappers, name)
    raise AttributeError(f"module 'parl_core.env' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
