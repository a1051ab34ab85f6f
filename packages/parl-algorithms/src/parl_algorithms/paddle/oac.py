"""OAC on PaddlePaddle: :class:`parl_algorithms.algorithms.oac.OAC` bound to paddle."""

from __future__ import annotations

from parl_algorithms.algorithms import oac as _algorithm
from parl_algorithms.paddle.sac import SAC

__all__ = ["OAC"]


class OAC(_algorithm.OAC, SAC):
    __doc__ = _algorithm.OAC.__doc__
