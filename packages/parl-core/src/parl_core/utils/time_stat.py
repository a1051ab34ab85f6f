"""PARL's module path ``parl.utils.time_stat``: :class:`TimeStat` (defined in :mod:`parl_core.utils.stats`)."""

from parl_core.utils.stats import TimeStat

__all__ = ["TimeStat"]
