"""REINFORCE (Williams 1992, "Simple statistical gradient-following algorithms for connectionist
reinforcement learning"), with PARL's ``PolicyGradient`` API."""

from __future__ import annotations

import torch
from torch.distributions import Categorical

from parl_algorithms._validation import as_float_tensor, check_model_method
from parl_algorithms.torch._common import adam, readable_shape_errors
from parl_core.torch import Algorithm, Model
from parl_core.torch.device import DeviceLike, on_device

__all__ = ["PolicyGradient"]


class PolicyGradient(Algorithm):
    """Monte-Carlo policy gradient for discrete actions.

    ``loss = mean(-log pi(a_t | s_t) * G_t)`` where ``G_t`` is the (usually normalised) return the
    caller passes as ``reward``, optimised with Adam.

    The model must define ``forward(obs) -> probs``: float32 ``[B, act_dim]`` action probabilities
    (a softmax output, as in PARL's quickstart).

    Args:
        model: the policy network.
        lr: Adam learning rate (> 0).
        device: ``"cpu"``, ``"cuda"``, ``"cuda:1"`` or a ``torch.device``: where the models, optimizer state and
            every tensor of the algorithm live; default CUDA when available (PARL's rule).

    Raises:
        ValueError: the model does not define ``forward``, or ``lr`` is missing / not positive.
    """

    def __init__(self, model: Model, lr: float | None = None, *, device: DeviceLike = None) -> None:
        super().__init__(model, device=device)
        check_model_method(model, "forward", type(self).__name__)
        if lr is None or not float(lr) > 0:
            raise ValueError(f"PolicyGradient needs a positive learning rate, got lr={lr!r}; "
                             "e.g. PolicyGradient(model, lr=1e-3)")
        self.lr = float(lr)
        self.optimizer = adam(self.model.parameters(), lr=self.lr)

    def _probs(self, obs: torch.Tensor) -> torch.Tensor:
        probs = self.model(obs)
        if not isinstance(probs, torch.Tensor) or probs.ndim not in (1, 2):
            raise ValueError("PolicyGradient: model.forward(obs) must return action probabilities float32 "
                             "[B, act_dim] (end the network with softmax)")
        return probs

    @on_device
    @readable_shape_errors
    def predict(self, obs: torch.Tensor) -> torch.Tensor:
        """Action probabilities.

        Args:
            obs: float32 ``[B, obs_dim]`` (or ``[obs_dim]``).

        Returns:
            float32 ``[B, act_dim]`` probabilities (``model.forward(obs)``).
        """
        return self._probs(as_float_tensor(obs, "obs"))

    @on_device
    @readable_shape_errors
    def sample(self, obs: torch.Tensor) -> torch.Tensor:
        """Sample actions from the policy.

        Args:
            obs: float32 ``[B, obs_dim]`` (or ``[obs_dim]``).

        Returns:
            int64 ``[B]`` (or a 0-d tensor for one observation) sampled action indices.
        """
        return Categorical(probs=self.predict(obs)).sample()

    @on_device
    @readable_shape_errors
    def learn(self, obs: torch.Tensor, action: torch.Tensor, reward: torch.Tensor) -> torch.Tensor:
        """One gradient step on ``mean(-log pi(a|s) * reward)``.

        Args:
            obs: float32 ``[B, obs_dim]``.
            action: int64 ``[B]`` or ``[B, 1]`` action indices.
            reward: float32 ``[B]`` or ``[B, 1]`` returns (or advantages) weighting each log-prob.

        Returns:
            the scalar loss tensor (before the step).

        Raises:
            ValueError: batch sizes differ or an action index is out of range.
        """
        obs = as_float_tensor(obs, "obs")
        action = torch.as_tensor(action, device=self.device).reshape(-1).long()
        reward = as_float_tensor(reward, "reward").reshape(-1)
        probs = self._probs(obs)
        if probs.ndim != 2 or probs.shape[0] != action.shape[0] or reward.shape[0] != action.shape[0]:
            raise ValueError(f"PolicyGradient.learn: obs {tuple(obs.shape)}, action {tuple(action.shape)} and "
                             f"reward {tuple(reward.shape)} must share the batch size B (obs [B, obs_dim], "
                             "action [B], reward [B])")
        low, high = torch.stack(torch.aminmax(action)).tolist() if action.numel() else (0, 0)  # one copy
        if low < 0 or high >= probs.shape[1]:
            raise ValueError(f"PolicyGradient.learn: action indices must lie in [0, {probs.shape[1]}); "
                             "PolicyGradient supports discrete action spaces only")
        log_prob = torch.log(probs.gather(1, action.unsqueeze(1)).squeeze(1).clamp_min(1e-8))
        loss = torch.mean(-log_prob * reward)
        self.optimizer.zero_grad()
        loss.backward()
        self.optimizer.step()
        return loss
