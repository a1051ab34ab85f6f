"""DDPG on PaddlePaddle: :class:`parl_algorithms.algorithms.ddpg.DDPG` bound to paddle."""

from __future__ import annotations

from parl_algorithms.algorithms import ddpg as _algorithm
from parl_algorithms.paddle._off_policy import DeterministicActorCritic

__all__ = ["DDPG"]


class DDPG(_algorithm.DDPG, DeterministicActorCritic):
    __doc__ = _algorithm.DDPG.__doc__
