"""DecisionTransformer on PyTorch: :class:`parl_algorithms.algorithms.dt.DecisionTransformer` bound to torch."""

from __future__ import annotations

from parl_algorithms.algorithms import dt as _algorithm
from parl_algorithms.torch import ops
from parl_core.torch import Algorithm

__all__ = ["DecisionTransformer"]


class DecisionTransformer(_algorithm.DecisionTransformer, Algorithm):
    __doc__ = _algorithm.DecisionTransformer.__doc__
    ops = ops
