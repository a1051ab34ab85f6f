"""A3C on PyTorch: :class:`parl_algorithms.algorithms.a3c.A3C` bound to torch."""

from __future__ import annotations

from parl_algorithms.algorithms import a3c as _algorithm
from parl_algorithms.torch import ops
from parl_algorithms.torch._common import LazyInfo
from parl_core.torch import Algorithm

__all__ = ["A3C"]


class A3C(_algorithm.A3C, LazyInfo, Algorithm):
    __doc__ = _algorithm.A3C.__doc__
    ops = ops
