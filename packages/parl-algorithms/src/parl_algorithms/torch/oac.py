"""OAC on PyTorch: :class:`parl_algorithms.algorithms.oac.OAC` bound to torch."""

from __future__ import annotations

from parl_algorithms.algorithms import oac as _algorithm
from parl_algorithms.torch.sac import SAC

__all__ = ["OAC"]


class OAC(_algorithm.OAC, SAC):
    __doc__ = _algorithm.OAC.__doc__
