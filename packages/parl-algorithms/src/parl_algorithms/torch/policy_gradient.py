"""REINFORCE on PyTorch: :class:`parl_algorithms.algorithms.policy_gradient.PolicyGradient` bound to torch."""

from __future__ import annotations

from parl_algorithms.algorithms import policy_gradient as _algorithm
from parl_algorithms.torch import ops
from parl_core.torch import Algorithm

__all__ = ["PolicyGradient"]


class PolicyGradient(_algorithm.PolicyGradient, Algorithm):
    __doc__ = _algorithm.PolicyGradient.__doc__
    ops = ops
