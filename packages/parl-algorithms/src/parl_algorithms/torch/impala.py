"""IMPALA on PyTorch: :class:`parl_algorithms.algorithms.impala.IMPALA` bound to torch."""

from __future__ import annotations

from parl_algorithms.algorithms import impala as _algorithm
from parl_algorithms.algorithms.impala import VTraceLoss
from parl_algorithms.torch import ops
from parl_algorithms.torch._common import LazyInfo
from parl_core.torch import Algorithm

__all__ = ["IMPALA", "VTraceLoss"]


class IMPALA(_algorithm.IMPALA, LazyInfo, Algorithm):
    __doc__ = _algorithm.IMPALA.__doc__
    ops = ops
