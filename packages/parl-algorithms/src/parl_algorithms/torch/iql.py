"""IQL on PyTorch: :class:`parl_algorithms.algorithms.iql.IQL` bound to torch, with the target critics' soft
update in place (``functional.soft_update_``)."""

from __future__ import annotations

from parl_algorithms.algorithms import iql as _algorithm
from parl_algorithms.torch import ops
from parl_algorithms.torch._common import LazyInfo
from parl_core.torch import Algorithm

__all__ = ["IQL", "expectile_loss"]


class IQL(_algorithm.IQL, LazyInfo, Algorithm):
    __doc__ = _algorithm.IQL.__doc__
    ops = ops

    def sync_target(self, alpha: float = 0.0) -> None:  # noqa: D102 (the docstring is the shared class's)
        ops.functional.soft_update_(self.q_target.parameters(), self.model.parameters(), alpha)


expectile_loss = IQL._expectile_loss  # expectile_loss(diff, tau) on this backend
