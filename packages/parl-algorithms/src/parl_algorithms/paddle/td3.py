"""TD3 on PaddlePaddle: :class:`parl_algorithms.algorithms.td3.TD3` bound to paddle."""

from __future__ import annotations

from parl_algorithms.algorithms import td3 as _algorithm
from parl_algorithms.paddle._off_policy import DeterministicActorCritic

__all__ = ["TD3"]


class TD3(_algorithm.TD3, DeterministicActorCritic):
    __doc__ = _algorithm.TD3.__doc__
    checkpoint_attrs = ("total_it", "_last_actor_loss")  # the last actor loss is a host float on paddle
    learn_returns_actor_loss = False
