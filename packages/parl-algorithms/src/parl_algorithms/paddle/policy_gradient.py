"""REINFORCE on PaddlePaddle: :class:`parl_algorithms.algorithms.policy_gradient.PolicyGradient` bound to paddle."""

from __future__ import annotations

from parl_algorithms.algorithms import policy_gradient as _algorithm
from parl_algorithms.paddle import ops
from parl_core.paddle import Algorithm

__all__ = ["PolicyGradient"]


class PolicyGradient(_algorithm.PolicyGradient, Algorithm):
    __doc__ = _algorithm.PolicyGradient.__doc__
    ops = ops
