"""TD3 on PyTorch: :class:`parl_algorithms.algorithms.td3.TD3` bound to torch."""

from __future__ import annotations

from parl_algorithms.algorithms import td3 as _algorithm
from parl_algorithms.torch._off_policy import DeterministicActorCritic

__all__ = ["TD3"]


class TD3(_algorithm.TD3, DeterministicActorCritic):
    __doc__ = _algorithm.TD3.__doc__
    checkpoint_attrs = ("total_it",)  # _last_actor_loss, a tensor, is checkpointed as one
    learn_returns_actor_loss = True
