"""CQL on PyTorch: :class:`parl_algorithms.algorithms.cql.CQL` bound to torch."""

from __future__ import annotations

from parl_algorithms.algorithms import cql as _algorithm
from parl_algorithms.torch.sac import SAC

__all__ = ["CQL"]


class CQL(_algorithm.CQL, SAC):
    __doc__ = _algorithm.CQL.__doc__
    learn_returns_bellman_and_min_q = False
