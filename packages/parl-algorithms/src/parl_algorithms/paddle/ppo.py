"""PPO on PaddlePaddle: :class:`parl_algorithms.algorithms.ppo.PPO` bound to paddle, with PARL paddle's sample
axis."""

from __future__ import annotations

from typing import Any

from parl_algorithms.algorithms import ppo as _algorithm
from parl_algorithms.paddle import ops
from parl_core.paddle import Algorithm

__all__ = ["PPO"]


class PPO(_algorithm.PPO, Algorithm):
    __doc__ = _algorithm.PPO.__doc__
    ops = ops
    sample_axis = True

    def _record_info(self, pending: Any) -> None:
        self.last_info: dict[str, float] = {} if pending is None else pending()
