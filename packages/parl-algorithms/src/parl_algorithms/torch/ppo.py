"""PPO on PyTorch: :class:`parl_algorithms.algorithms.ppo.PPO` bound to torch, its diagnostics computed when read."""

from __future__ import annotations

from typing import Any

from parl_algorithms.algorithms import ppo as _algorithm
from parl_algorithms.torch import ops
from parl_core.torch import Algorithm

__all__ = ["PPO"]


class PPO(_algorithm.PPO, Algorithm):
    __doc__ = _algorithm.PPO.__doc__
    ops = ops
    sample_axis = False

    def _record_info(self, pending: Any) -> None:
        self._last_info: dict[str, float] | None = None
        self._pending_info = pending

    @property
    def last_info(self) -> dict[str, float]:
        """Diagnostics of the last ``learn`` call (``{}`` before the first); approx-KL and the clip fraction
        are computed when this is first read after a ``learn``, not in every ``learn``."""
        if self._last_info is None:
            if self._pending_info is None:
                return {}
            self._last_info = self._pending_info()
        return self._last_info
