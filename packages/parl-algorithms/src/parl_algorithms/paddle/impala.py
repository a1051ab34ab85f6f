"""IMPALA on PaddlePaddle: :class:`parl_algorithms.algorithms.impala.IMPALA` bound to paddle."""

from __future__ import annotations

from parl_algorithms.algorithms import impala as _algorithm
from parl_algorithms.algorithms.impala import VTraceLoss
from parl_algorithms.paddle import ops
from parl_core.paddle import Algorithm

__all__ = ["IMPALA", "VTraceLoss"]


class IMPALA(_algorithm.IMPALA, Algorithm):
    __doc__ = _algorithm.IMPALA.__doc__
    ops = ops
