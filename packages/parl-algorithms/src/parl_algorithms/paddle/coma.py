"""COMA on PaddlePaddle: :class:`parl_algorithms.algorithms.coma.COMA` bound to paddle (``paddle.optimizer.RMSProp``;
PARL 2.2.1 had no paddle COMA)."""

from __future__ import annotations

import paddle

from parl_algorithms.algorithms import coma as _algorithm
from parl_algorithms.paddle import ops
from parl_core.paddle import Algorithm

__all__ = ["COMA"]


class COMA(_algorithm.COMA, Algorithm):
    __doc__ = _algorithm.COMA.__doc__
    ops = ops

    def _rmsprop(self, params: list[paddle.Tensor], lr: float) -> paddle.optimizer.RMSProp:
        return paddle.optimizer.RMSProp(learning_rate=lr, rho=0.99, epsilon=1e-16, parameters=params,
                                        grad_clip=paddle.nn.ClipGradByGlobalNorm(self.grad_norm_clip))

    def learn(self, batch: dict, epsilon: float) -> tuple[paddle.Tensor, paddle.Tensor]:
        losses = super().learn(batch, epsilon)
        self.actor_optimizer.clear_grad()  # (paddle keeps a step's gradients until they are cleared)
        self.critic_optimizer.clear_grad()
        return losses

    learn.__doc__ = _algorithm.COMA.learn.__doc__
