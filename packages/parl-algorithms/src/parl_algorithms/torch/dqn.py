"""DQN (Mnih et al. 2015, "Human-level control through deep reinforcement learning") and Double DQN
(van Hasselt et al. 2016), with PARL's ``DQN`` / ``DDQN`` API. Dueling networks (Wang et al. 2016) are
built in the Model."""

from __future__ import annotations

import copy
from typing import Any

import torch
import torch.nn.functional as F

from parl_algorithms._validation import check_model_method
from parl_algorithms.torch import functional
from parl_algorithms.torch._common import (
    LazyInfo,
    accepts_single_obs,
    adam,
    clip_grad_norm,
    column,
    discrete_actions,
    obs_batch,
    optimizer_params,
    positive,
    readable_shape_errors,
    unit_interval,
)
from parl_core.torch import Algorithm, Model
from parl_core.torch.device import DeviceLike, on_device

__all__ = ["DQN", "DDQN"]


class DQN(LazyInfo, Algorithm):
    """Deep Q-network with a target network, MSE loss and Adam (PARL's defaults).

    The model must define ``forward(obs) -> Q``: float32 ``[B, num_actions]``.

    Args:
        model: the Q network; the target network is ``copy.deepcopy(model)``.
        gamma: discount in ``[0, 1]`` (required, as in PARL).
        lr: Adam learning rate > 0 (required).
        loss_type: ``"mse"`` (PARL) or ``"huber"`` (smooth L1, as in the Nature paper and SB3).
        max_grad_norm: clip the global gradient norm to this value; ``None`` (PARL) does not clip.
        device: ``"cpu"``, ``"cuda"``, ``"cuda:1"`` or a ``torch.device``: where the models, optimizer state and
            every tensor of the algorithm live; default CUDA when available (PARL's rule).

    Attributes:
        last_info: diagnostics of the last ``learn`` call: ``train/q_mean``, ``train/target_mean``.

    Raises:
        ValueError: the model lacks ``forward``, or a hyperparameter is missing / out of range.
    """

    double_q = False

    def __init__(self, model: Model, gamma: float | None = None, lr: float | None = None, *,
                 loss_type: str = "mse", max_grad_norm: float | None = None, device: DeviceLike = None) -> None:
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
        self.optimizer = adam(self.model.parameters(), lr=self.lr)
        self.last_info: dict[str, float] = {}

    def _q(self, model: Model, obs: torch.Tensor) -> torch.Tensor:
        q = model(obs)
        if not isinstance(q, torch.Tensor) or q.ndim != 2 or q.shape[0] != obs.shape[0]:
            raise ValueError(f"{type(self).__name__}: model.forward(obs) must return Q values float32 "
                             f"[B, num_actions], got {getattr(q, 'shape', type(q).__name__)}")
        return q

    @accepts_single_obs
    @on_device
    @readable_shape_errors
    def predict(self, obs: torch.Tensor) -> torch.Tensor:
        """Q values of every action.

        Args:
            obs: float32 ``[B, *obs_shape]``, or one vector observation ``[obs_dim]`` (as PARL code passes).

        Returns:
            float32 ``[B, num_actions]`` (``[num_actions]`` for one observation); the greedy action is
            ``argmax(-1)``.
        """
        return self._q(self.model, obs_batch(obs, type(self).__name__))

    @accepts_single_obs
    @on_device
    @readable_shape_errors
    def sample(self, obs: torch.Tensor, epsilon: float = 0.0) -> torch.Tensor:
        """Epsilon-greedy actions.

        Args:
            obs: float32 ``[B, *obs_shape]``.
            epsilon: probability of a uniformly random action, in ``[0, 1]``.

        Returns:
            int64 ``[B]``.
        """
        q = self.predict(obs)
        greedy = q.argmax(dim=1)
        if epsilon <= 0:
            return greedy
        explore = torch.rand(q.shape[0], device=q.device) < epsilon
        return torch.where(explore, torch.randint(q.shape[1], (q.shape[0],), device=q.device), greedy)

    def _target(self, reward: torch.Tensor, next_obs: torch.Tensor, terminal: torch.Tensor) -> torch.Tensor:
        next_q_target = self._q(self.target_model, next_obs)
        return functional.td_target(reward, next_q_target.max(dim=1).values, terminal, self.gamma)

    @on_device
    @readable_shape_errors
    def learn(self, obs: torch.Tensor, action: torch.Tensor, reward: torch.Tensor, next_obs: torch.Tensor,
              terminal: torch.Tensor) -> float:
        """One gradient step on ``loss(Q(s, a), r + gamma * (1 - terminal) * max_a' Q_target(s', a'))``.

        Args:
            obs: float32 ``[B, *obs_shape]``.
            action: int64 ``[B]`` or ``[B, 1]``.
            reward: float32 ``[B]`` or ``[B, 1]``.
            next_obs: float32 ``[B, *obs_shape]``.
            terminal: float32 / bool ``[B]`` or ``[B, 1]``: 1 if the episode terminated (not truncated).

        Returns:
            the loss as a Python float (PARL's ``loss.item()``).

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
        pred = q.gather(1, action.unsqueeze(1)).squeeze(1)
        with torch.no_grad():
            target = self._target(reward, next_obs, terminal)
        loss = F.mse_loss(pred, target) if self.loss_type == "mse" else F.smooth_l1_loss(pred, target)
        self.optimizer.zero_grad()
        loss.backward()
        if self.max_grad_norm is not None:
            clip_grad_norm(optimizer_params(self.optimizer), self.max_grad_norm)
        self.optimizer.step()
        self.last_info = {"train/q_mean": pred.detach().mean(), "train/target_mean": target.mean().detach()}
        return loss.item()

    def sync_target(self) -> None:
        """Copy the model's weights into the target network."""
        self.model.sync_weights_to(self.target_model)

    def get_info(self) -> dict[str, Any]:
        """Diagnostics of the last ``learn`` call (see ``last_info``)."""
        return dict(self.last_info)


class DDQN(DQN):
    """Double DQN: the target uses the online network's greedy action valued by the target network
    (van Hasselt et al. 2016). Same API and arguments as :class:`DQN`."""

    double_q = True

    def _target(self, reward: torch.Tensor, next_obs: torch.Tensor, terminal: torch.Tensor) -> torch.Tensor:
        return functional.double_dqn_target(reward, self._q(self.model, next_obs), self._q(self.target_model, next_obs),
                                            terminal, self.gamma)
