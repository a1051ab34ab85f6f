"""DQN and Double DQN on PyTorch: :mod:`parl_algorithms.algorithms.dqn` bound to torch."""

from __future__ import annotations

from parl_algorithms.algorithms import dqn as _algorithm
from parl_algorithms.torch import ops
from parl_algorithms.torch._common import LazyInfo
from parl_core.torch import Algorithm

__all__ = ["DQN", "DDQN"]


class DQN(_algorithm.DQN, LazyInfo, Algorithm):
    __doc__ = _algorithm.DQN.__doc__
    ops = ops
    learn_returns_float = True


class DDQN(_algorithm.DDQN, DQN):
    __doc__ = _algorithm.DDQN.__doc__
