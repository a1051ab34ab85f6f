"""The old home of MADDPG's framework-free pieces, now :mod:`parl_algorithms.algorithms.maddpg`: pickles of a
MADDPG written before it was written once name ``parl_algorithms._maddpg.ActionSpec``."""

from parl_algorithms.algorithms.maddpg import ActionSpec

__all__ = ["ActionSpec"]
