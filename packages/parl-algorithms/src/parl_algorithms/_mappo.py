"""The old home of MAPPO's framework-free half, now :mod:`parl_algorithms.algorithms.mappo`: pickles of a MAPPO
written before it was written once name ``parl_algorithms._mappo.ActionLayout``."""

from parl_algorithms.algorithms.mappo import ActionLayout

__all__ = ["ActionLayout"]
