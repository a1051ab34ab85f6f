"""MADDPG on PaddlePaddle: :class:`parl_algorithms.algorithms.maddpg.MADDPG` bound to paddle."""

from __future__ import annotations

from parl_algorithms.algorithms import maddpg as _algorithm
from parl_algorithms.paddle._off_policy import OffPolicyActorCritic

__all__ = ["MADDPG"]


class MADDPG(_algorithm.MADDPG, OffPolicyActorCritic):
    __doc__ = _algorithm.MADDPG.__doc__
