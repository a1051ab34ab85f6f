"""PARL's module path ``parl.utils.window_stat``: :class:`WindowStat` (defined in :mod:`parl_core.utils.stats`)."""

from parl_core.utils.stats import WindowStat

__all__ = ["WindowStat"]
