"""The old home of QMIX's framework-free half, now :mod:`parl_algorithms.algorithms.qmix`: pickles of a QMIX
written before it was written once name ``parl_algorithms._qmix._Hidden`` (its acting hidden state's holder)."""

from parl_algorithms.algorithms.qmix import _Hidden

__all__ = ["_Hidden"]
