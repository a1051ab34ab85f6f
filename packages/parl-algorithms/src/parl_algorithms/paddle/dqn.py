"""DQN and Double DQN on PaddlePaddle: :mod:`parl_algorithms.algorithms.dqn` bound to paddle."""

from __future__ import annotations

from parl_algorithms.algorithms import dqn as _algorithm
from parl_algorithms.paddle import ops
from parl_core.paddle import Algorithm

__all__ = ["DQN", "DDQN"]


class DQN(_algorithm.DQN, Algorithm):
    __doc__ = _algorithm.DQN.__doc__
    ops = ops
    learn_returns_float = False


class DDQN(_algorithm.DDQN, DQN):
    __doc__ = _algorithm.DDQN.__doc__
