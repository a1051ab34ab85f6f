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

    def _register_statistics(self, outputs: int, device: Any) -> None:
        del device  # (paddle's device is process-wide)
        self.register_buffer("mean", paddle.zeros([outputs], dtype="float32"))
        self.register_buffer("mean_sq", paddle.zeros([outputs], dtype="float32"))
        self.register_buffer("debiasing_term", paddle.zeros([], dtype="float32"))

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

    @staticmethod
    def _check_v_out(v_out: Any) -> None:
        if not isinstance(v_out, paddle.nn.Linear) or v_out.weight.shape[-1] != 1 or v_out.bias is None:
            raise ValueError(f"MAPPO(use_popart=True): model.critic.v_out must be a paddle.nn.Linear(hidden, 1) "
                             f"with a bias, got {v_out!r}; or pass use_popart=False")
