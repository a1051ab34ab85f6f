"""IQL on PaddlePaddle: :class:`parl_algorithms.algorithms.iql.IQL` bound to paddle, with the target critics' soft
update by ``Model.sync_weights_to``."""

from __future__ import annotations

from parl_algorithms.algorithms import iql as _algorithm
from parl_algorithms.paddle import ops
from parl_core.paddle import Algorithm

__all__ = ["IQL", "expectile_loss"]


class IQL(_algorithm.IQL, Algorithm):
    __doc__ = _algorithm.IQL.__doc__
    ops = ops

    def sync_target(self, alpha: float = 0.0) -> None:  # noqa: D102 (the docstring is the shared class's)
        self.model.sync_weights_to(self.q_target, decay=1.0 - float(alpha))


expectile_loss = IQL._expectile_loss  # expectile_loss(diff, tau) on this backend
