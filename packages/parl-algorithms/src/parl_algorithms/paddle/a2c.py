"""A2C on PaddlePaddle: :class:`parl_algorithms.algorithms.a2c.A2C` bound to paddle."""

from __future__ import annotations

from parl_algorithms.algorithms import a2c as _algorithm
from parl_algorithms.paddle import ops
from parl_core.paddle import Algorithm

__all__ = ["A2C"]


class A2C(_algorithm.A2C, Algorithm):
    __doc__ = _algorithm.A2C.__doc__
    ops = ops
