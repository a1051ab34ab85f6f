"""DQN (Mnih et al. 2015, "Human-level control through deep reinforcement learning") and Double DQN
(van Hasselt et al. 2016) on PaddlePaddle, with PARL's paddle ``DQN`` / ``DDQN`` API."""

from __future__ import annotations

import copy
from typing import Any

import paddle
import paddle.nn.functional as F

from parl_algorithms._validation import check_model_method
from parl_algorithms.paddle import functional
from parl_algorithms.paddle._common import (
    adam,
    as_float,
    column,
    discrete_actions,
    host_float,
    obs_batch,
    positive,
    readable_shape_errors,
    rewrite_shape_error,
    step,
    unit_interval,
)
from parl_core.paddle import Algorithm, Model

__all__ = ["DQN", "DDQN"]


class DQN(Algorithm):
    """Deep Q-network with a target network, MSE loss and Adam (PARL's defaults); same API and math as
    ``parl_algorithms.torch.DQN``.

    The model must define ``forward(obs) -> Q``: float32 ``[B, num_actions]``.

    Args:
        model: the Q network (a ``parl_core.paddle.Model``); the target is ``copy.deepcopy(model)``.
        gamma: discount in ``[0, 1]`` (required, as in PARL).
        lr: Adam learning rate > 0 (required).
        loss_type: ``"mse"`` (PARL) or ``"huber"`` (smooth L1).
        max_grad_norm: clip the global gradient norm to this value; ``None`` (PARL) does not clip.
        device: ``"cpu"``, ``"gpu"``, ``"gpu:1"`` (or ``"cuda"``): paddle's device for this algorithm (set
            process-wide with ``paddle.set_device``); default paddle's own (the GPU in a CUDA build).

    Raises:
        TypeError: the model is not a paddle ``parl.Model``.
        ValueError: the model lacks ``forward``, or a hyperparameter is missing / out of range.
    """

    double_q = False

    def __init__(self, model: Model, gamma: float | None = None, lr: float | None = None, *,
                 loss_type: str = "mse", max_grad_norm: float | None = None, device: str | None = None) -> None:
        super().__init__(model, device=device)
        name = type(self).__name__
        check_model_method(model, "forward", name)
        self.gamma = unit_interval(gamma, "gamma", name, "0.99")
        self.lr = positive(lr, "lr", name, "1e-3")
        if loss_type not in ("mse", "huber"):
            raise ValueError(f"{name}: loss_type must be 'mse' or 'huber', got {loss_type!r}")
        self.loss_type = loss_type
        self.max_grad_norm = None if max_grad_norm is None else positive(max_grad_norm, "max_grad_norm", name, "10")
        self.target_model = copy.deepcopy(model)
        self.optimizer = adam(self.model.parameters(), lr=self.lr, max_grad_norm=self.max_grad_norm)
        self.last_info: dict[str, float] = {}

    def _q(self, model: Model, obs: paddle.Tensor, batch: int | None = None) -> paddle.Tensor:
        """``model(obs)``, checked to be float32 ``[B, num_actions]`` (``batch``: B when the caller has read it;
        each shape read is a call into paddle's C++, a few microseconds on the acting path)."""
        q = model(obs)
        shape = q.shape if isinstance(q, paddle.Tensor) else None
        if shape is None or len(shape) != 2 or shape[0] != (obs.shape[0] if batch is None else batch):
            raise ValueError(f"{type(self).__name__}: model.forward(obs) must return Q values float32 "
                             f"[B, num_actions], got {getattr(q, 'shape', type(q).__name__)}")
        return q

    def predict(self, obs: paddle.Tensor) -> paddle.Tensor:
        """Q values of every action.

        Args:
            obs: float32 ``[B, *obs_shape]``, or one observation ``[obs_dim]`` (as PARL's examples pass).

        Returns:
            float32 ``[B, num_actions]`` (``[num_actions]`` for one observation); the greedy action is
            ``argmax(-1)``.

        Raises:
            TypeError: ``obs`` is not numeric.
            ValueError: ``obs`` is 0-d, or the model does not return ``[B, num_actions]``.
        """
        try:  # (not @readable_shape_errors: see rewrite_shape_error)
            obs = as_float(obs, "obs")
            shape = obs.shape
            if len(shape) == 1:
                return self._q(self.model, obs.unsqueeze(0), 1)[0]
            if not shape:
                obs_batch(obs, type(self).__name__)  # raises the message for a 0-d obs
            return self._q(self.model, obs, shape[0])
        except (ValueError, RuntimeError) as err:
            rewrite_shape_error(self, "predict", err, (obs,))
            raise

    @readable_shape_errors
    def sample(self, obs: paddle.Tensor, epsilon: float = 0.0) -> paddle.Tensor:
        """Epsilon-greedy actions int64 ``[B]``; ``epsilon`` in ``[0, 1]`` is the random-action probability."""
        q = self.predict(obs)
        greedy = q.argmax(axis=1)
        if epsilon <= 0:
            return greedy
        explore = paddle.rand([q.shape[0]]) < epsilon
        return paddle.where(explore, paddle.randint(0, q.shape[1], [q.shape[0]], dtype="int64"), greedy)

    def _target(self, reward: paddle.Tensor, next_obs: paddle.Tensor, terminal: paddle.Tensor) -> paddle.Tensor:
        return functional.td_target(reward, self._q(self.target_model, next_obs).max(axis=1), terminal, self.gamma)

    @readable_shape_errors
    def learn(self, obs: paddle.Tensor, action: paddle.Tensor, reward: paddle.Tensor, next_obs: paddle.Tensor,
              terminal: paddle.Tensor) -> paddle.Tensor:
        """One gradient step on ``loss(Q(s, a), r + gamma * (1 - terminal) * max_a' Q_target(s', a'))``.

        Args:
            obs: float32 ``[B, *obs_shape]``.
            action: int64 ``[B]`` or ``[B, 1]``.
            reward: float32 ``[B]`` or ``[B, 1]``.
            next_obs: float32 ``[B, *obs_shape]``.
            terminal: float32 / bool ``[B]`` or ``[B, 1]``: 1 if the episode terminated (not truncated).

        Returns:
            the scalar loss tensor (PARL's return).

        Raises:
            ValueError: shapes do not fit, or the actions are not discrete indices.
        """
        name = type(self).__name__
        obs, next_obs = obs_batch(obs, name), obs_batch(next_obs, name)
        if next_obs.shape != obs.shape:
            raise ValueError(f"{name}: next_obs {tuple(next_obs.shape)} must have the shape of obs {tuple(obs.shape)}")
        batch = obs.shape[0]
        reward = column(reward, "reward", batch, name)
        terminal = column(terminal, "terminal", batch, name)
        q = self._q(self.model, obs)
        action = discrete_actions(action, batch, q.shape[1], name)
        pred = paddle.take_along_axis(q, action.unsqueeze(1), axis=1).squeeze(1)
        with paddle.no_grad():
            target = self._target(reward, next_obs, terminal)
        loss = F.mse_loss(pred, target) if self.loss_type == "mse" else F.smooth_l1_loss(pred, target)
        step(self.optimizer, loss)
        self.last_info = {"train/q_mean": host_float(pred.detach().mean()),
                          "train/target_mean": host_float(target.mean())}
        return loss

    def sync_target(self) -> None:
        """Copy the model's weights into the target network."""
        self.model.sync_weights_to(self.target_model)

    def get_info(self) -> dict[str, Any]:
        """Diagnostics of the last ``learn`` call (see ``last_info``)."""
        return dict(self.last_info)


class DDQN(DQN):
    """Double DQN: the online network picks the next action, the target network values it
    (van Hasselt et al. 2016). Same API and arguments as :class:`DQN`."""

    double_q = True

    def _target(self, reward: paddle.Tensor, next_obs: paddle.Tensor, terminal: paddle.Tensor) -> paddle.Tensor:
        return functional.double_dqn_target(reward, self._q(self.model, next_obs), self._q(self.target_model, next_obs),
                                            terminal, self.gamma)
