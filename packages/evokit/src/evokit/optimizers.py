"""First-order optimizers for the BASIC_ES update, on flat float32 parameter vectors (minimisation).

Every optimizer is ``step(params, grad) -> new params`` with ``grad`` the gradient of the loss to *minimise*
(the ES agent passes the negated fitness gradient), and ``state_dict()`` / ``load_state_dict()`` for
``save_solver`` / ``load_solver``.

Formulas (``t`` counts steps from 1, ``lr`` is ``base_lr``):

- SGD:       ``theta <- theta - lr * g``
- MOMENTUM:  ``v <- momentum * v + g``;  ``theta <- theta - lr * v``  (heavy ball, as ``torch.optim.SGD``)
- ADAM:      ``m <- beta1 * m + (1 - beta1) * g``;  ``v <- beta2 * v + (1 - beta2) * g**2``;
  ``theta <- theta - lr * (m / (1 - beta1**t)) / (sqrt(v / (1 - beta2**t)) + epsilon)``
  (Kingma & Ba 2015, Algorithm 1)
"""

from __future__ import annotations

import numpy as np

from evokit.errors import ConfigError

__all__ = ["Optimizer", "SGD", "Momentum", "Adam", "make_optimizer"]


class Optimizer:
    """Base class: holds ``base_lr`` and the step count ``t``.

    Args:
        num_params: length of the parameter vector.
        base_lr: the learning rate (> 0).
    """

    def __init__(self, num_params: int, base_lr: float) -> None:
        if base_lr <= 0:
            raise ValueError(f"base_lr must be > 0, got {base_lr}")
        self.num_params = int(num_params)
        self.base_lr = float(base_lr)
        self.t = 0

    def step(self, params: np.ndarray, grad: np.ndarray) -> np.ndarray:
        """Return the updated parameters.

        Args:
            params: float32 [num_params] current parameters (not modified).
            grad: float [num_params] gradient of the loss to minimise.

        Returns:
            float32 [num_params] the new parameters.

        Raises:
            ValueError: a shape differs from ``[num_params]`` or ``grad`` is not finite.
        """
        params = np.asarray(params)
        grad = np.asarray(grad, dtype=np.float64)
        if params.shape != (self.num_params,) or grad.shape != (self.num_params,):
            raise ValueError(f"params and grad must have shape ({self.num_params},), got {params.shape} and "
                             f"{grad.shape}")
        if not np.all(np.isfinite(grad)):
            raise ValueError("grad contains NaN or inf; check the rewards passed to update()")
        self.t += 1
        return (params.astype(np.float64) - self._delta(grad)).astype(np.float32)

    def _delta(self, grad: np.ndarray) -> np.ndarray:
        raise NotImplementedError

    def state_dict(self) -> dict[str, np.ndarray]:
        """Return the optimizer state as arrays (for ``np.savez``)."""
        return {"t": np.asarray(self.t)}

    def load_state_dict(self, state: dict[str, np.ndarray]) -> None:
        """Restore the state written by :meth:`state_dict`."""
        self.t = int(state["t"])


class SGD(Optimizer):
    """Plain gradient descent: ``theta <- theta - lr * g``."""

    def _delta(self, grad: np.ndarray) -> np.ndarray:
        return self.base_lr * grad


class Momentum(Optimizer):
    """Heavy-ball momentum: ``v <- momentum * v + g``, ``theta <- theta - lr * v``.

    Args:
        num_params: length of the parameter vector.
        base_lr: the learning rate.
        momentum: the velocity decay in [0, 1) (default 0.9).
    """

    def __init__(self, num_params: int, base_lr: float, momentum: float = 0.9) -> None:
        super().__init__(num_params, base_lr)
        self.momentum = float(momentum)
        self.velocity = np.zeros(self.num_params, dtype=np.float64)

    def _delta(self, grad: np.ndarray) -> np.ndarray:
        self.velocity = self.momentum * self.velocity + grad
        return self.base_lr * self.velocity

    def state_dict(self) -> dict[str, np.ndarray]:
        return {**super().state_dict(), "velocity": self.velocity}

    def load_state_dict(self, state: dict[str, np.ndarray]) -> None:
        super().load_state_dict(state)
        self.velocity = np.asarray(state["velocity"], dtype=np.float64).copy()


class Adam(Optimizer):
    """Adam with bias correction (Kingma & Ba 2015, Algorithm 1).

    Args:
        num_params: length of the parameter vector.
        base_lr: the step size alpha.
        beta1: decay of the first moment (default 0.9).
        beta2: decay of the second moment (default 0.999).
        epsilon: added to the square root of the second moment (default 1e-8).
    """

    def __init__(self, num_params: int, base_lr: float, beta1: float = 0.9, beta2: float = 0.999,
                 epsilon: float = 1e-8) -> None:
        super().__init__(num_params, base_lr)
        self.beta1, self.beta2, self.epsilon = float(beta1), float(beta2), float(epsilon)
        self.m = np.zeros(self.num_params, dtype=np.float64)
        self.v = np.zeros(self.num_params, dtype=np.float64)

    def _delta(self, grad: np.ndarray) -> np.ndarray:
        self.m = self.beta1 * self.m + (1 - self.beta1) * grad
        self.v = self.beta2 * self.v + (1 - self.beta2) * grad * grad
        m_hat = self.m / (1 - self.beta1 ** self.t)
        v_hat = self.v / (1 - self.beta2 ** self.t)
        return self.base_lr * m_hat / (np.sqrt(v_hat) + self.epsilon)

    def state_dict(self) -> dict[str, np.ndarray]:
        return {**super().state_dict(), "m": self.m, "v": self.v}

    def load_state_dict(self, state: dict[str, np.ndarray]) -> None:
        super().load_state_dict(state)
        self.m = np.asarray(state["m"], dtype=np.float64).copy()
        self.v = np.asarray(state["v"], dtype=np.float64).copy()


def make_optimizer(optimizer_config, num_params: int) -> Optimizer:
    """Build the optimizer of an ``OptimizerConfig`` message.

    Raises:
        ConfigError: an optimizer type this module does not know.
    """
    from evokit.config import enum_name

    kind = enum_name(optimizer_config, "type")
    lr = optimizer_config.base_lr
    if kind == "SGD":
        return SGD(num_params, lr)
    if kind == "MOMENTUM":
        return Momentum(num_params, lr, optimizer_config.momentum.momentum)
    if kind == "ADAM":
        adam = optimizer_config.adam
        return Adam(num_params, lr, adam.beta1, adam.beta2, adam.epsilon)
    raise ConfigError(f"unknown optimizer type {kind!r}; use SGD, MOMENTUM or ADAM")  # pragma: no cover
