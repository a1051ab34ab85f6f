"""DDPG on PyTorch: :class:`parl_algorithms.algorithms.ddpg.DDPG` bound to torch."""

from __future__ import annotations

from parl_algorithms.algorithms import ddpg as _algorithm
from parl_algorithms.torch._off_policy import DeterministicActorCritic

__all__ = ["DDPG"]


class DDPG(_algorithm.DDPG, DeterministicActorCritic):
    __doc__ = _algorithm.DDPG.__doc__
