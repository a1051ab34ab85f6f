"""A2C on PyTorch: :class:`parl_algorithms.algorithms.a2c.A2C` bound to torch."""

from __future__ import annotations

from parl_algorithms.algorithms import a2c as _algorithm
from parl_algorithms.torch import ops
from parl_algorithms.torch._common import LazyInfo
from parl_core.torch import Algorithm

__all__ = ["A2C"]


class A2C(_algorithm.A2C, LazyInfo, Algorithm):
    __doc__ = _algorithm.A2C.__doc__
    ops = ops
