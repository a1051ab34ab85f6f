"""RMSprop on paddle with PyTorch's arithmetic (epsilon added to the root, not under it).

``paddle.optimizer.RMSProp`` divides by ``sqrt(r + epsilon)``; ``torch.optim.RMSprop`` (PyMARL's, EPyMARL's and
PARL's torch QMIX / COMA optimizer) by ``sqrt(r) + eps``. With QMIX's ``eps = 1e-5`` the two differ by orders of
magnitude while the squared-gradient average is small (the first steps: paddle's step is ~30x smaller for
gradients ~1e-3), so PARL's paddle QMIX did not train like its torch one. :class:`RMSprop` keeps paddle's
optimizer machinery (accumulators, ``state_dict``, ``grad_clip``, ``set_lr``) and replaces the update.
"""

from __future__ import annotations

from typing import Any

import paddle

__all__ = ["RMSprop"]


class RMSprop(paddle.optimizer.RMSProp):
    """``torch.optim.RMSprop(params, lr, alpha, eps)`` (no momentum, not centred) on paddle.

    ``r = alpha * r + (1 - alpha) * g^2``;  ``w = w - lr * g / (sqrt(r) + eps)``.

    Args:
        parameters: the parameters to update.
        learning_rate: ``lr`` > 0.
        alpha: the squared-gradient average's decay (torch's name; paddle's ``rho``).
        eps: added to ``sqrt(r)``.
        grad_clip: a paddle gradient clip (e.g. ``paddle.nn.ClipGradByGlobalNorm(10.0)``) or ``None``.

    Raises:
        NotImplementedError: used in static-graph mode (dygraph only).
    """

    def __init__(self, parameters: Any, learning_rate: float, alpha: float = 0.99, eps: float = 1e-8,
                 grad_clip: Any = None) -> None:
        super().__init__(learning_rate=learning_rate, rho=alpha, epsilon=eps, momentum=0.0, centered=False,
                         parameters=parameters, grad_clip=grad_clip)

    def _append_optimize_op(self, block: Any, param_and_grad: Any) -> None:
        if not paddle.in_dynamic_mode():
            raise NotImplementedError("parl_algorithms.paddle.rmsprop.RMSprop runs in dygraph mode only")
        if isinstance(param_and_grad, dict):
            param_and_grad = self._update_param_group(param_and_grad)
        param, grad = param_and_grad
        square_avg = self._get_accumulator_master(self._mean_square_acc_str, param)
        lr = self._create_param_lr(param_and_grad)
        with paddle.no_grad():
            paddle.assign(self._rho * square_avg + (1.0 - self._rho) * grad * grad, output=square_avg)
            paddle.assign(param - lr * grad / (paddle.sqrt(square_avg) + self._epsilon), output=param)
        return None
