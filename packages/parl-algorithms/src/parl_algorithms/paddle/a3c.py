"""A3C on PaddlePaddle: :class:`parl_algorithms.algorithms.a3c.A3C` bound to paddle."""

from __future__ import annotations

from parl_algorithms.algorithms import a3c as _algorithm
from parl_algorithms.paddle import ops
from parl_core.paddle import Algorithm

__all__ = ["A3C"]


class A3C(_algorithm.A3C, Algorithm):
    __doc__ = _algorithm.A3C.__doc__
    ops = ops
