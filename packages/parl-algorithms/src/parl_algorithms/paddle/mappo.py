"""MAPPO and PopArt on PaddlePaddle: :class:`parl_algorithms.algorithms.mappo.MAPPO` and ``PopArt`` bound to paddle
(PARL 2.2.1 had no paddle MAPPO)."""

from __future__ import annotations

from typing import Any

import numpy as np
import paddle

from parl_algorithms.algorithms import mappo as _algorithm
from parl_algorithms.paddle import ops
from parl_core.paddle import Algorithm

__all__ = ["MAPPO", "PopArt"]


class PopArt(_algorithm.PopArt, paddle.nn.Layer):
    __doc__ = _algorithm.PopArt.__doc__
    ops = ops
    linear_out_axis = 1  # paddle.nn.Linear's weight is [in, out]

    def _zeros(self, shape: list[int], device: Any) -> paddle.Tensor:
        return paddle.zeros(shape, dtype="float32")  # (on paddle's device: process-wide)

    def _assign(self, target: paddle.Tensor, value: paddle.Tensor) -> None:
        target.set_value(value)

    def statistics(self) -> dict[str, np.ndarray]:
        return {k: v.numpy().copy() for k, v in self.state_dict().items()}

    def load_statistics(self, stats: dict[str, Any], device: Any) -> None:
        for key, value in stats.items():
            getattr(self, key).set_value(value.numpy() if isinstance(value, paddle.Tensor) else np.asarray(value))


class MAPPO(_algorithm.MAPPO, Algorithm):
    __doc__ = _algorithm.MAPPO.__doc__
    ops = ops
    popart_class = PopArt
    linear = paddle.nn.Linear
