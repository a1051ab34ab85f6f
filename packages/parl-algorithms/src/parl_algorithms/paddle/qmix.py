"""QMIX on PaddlePaddle: :class:`parl_algorithms.algorithms.qmix.QMIX` bound to paddle (RMSprop with PyTorch's
arithmetic, :class:`parl_algorithms.paddle.rmsprop.RMSprop`)."""

from __future__ import annotations

from typing import Any

import paddle

from parl_algorithms.algorithms import qmix as _algorithm
from parl_algorithms.paddle import ops
from parl_algorithms.paddle.rmsprop import RMSprop
from parl_core.paddle import Algorithm, Model
from parl_core.paddle.algorithm import check_paddle_model

__all__ = ["QMIX"]


class QMIX(_algorithm.QMIX, Algorithm):
    __doc__ = _algorithm.QMIX.__doc__
    ops = ops

    @staticmethod
    def _check_model(model: Any, role: str) -> None:
        check_paddle_model(model, "QMIX")

    def _placed(self, model: Model, device: Any) -> Model:
        if device is not None:  # (paddle's device is process-wide: a model is already there unless one is named)
            model.to(device=self.device)
        return model

    def _rmsprop(self, params: list[paddle.Tensor]) -> RMSprop:
        clip = None if self.clip_grad_norm is None else paddle.nn.ClipGradByGlobalNorm(self.clip_grad_norm)
        return RMSprop(params, learning_rate=self.lr, alpha=0.99, eps=1e-5, grad_clip=clip)
