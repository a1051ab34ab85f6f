"""A2C (Mnih et al. 2016, "Asynchronous Methods for Deep Reinforcement Learning", synchronous variant)
with PARL's torch ``A2C`` API."""

from __future__ import annotations

from collections.abc import Mapping
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
)
from parl_core.torch import Algorithm, Model
from parl_core.torch.device import DeviceLike, on_device

__all__ = ["A2C"]


class A2C(LazyInfo, Algorithm):
    """Advantage actor-critic for discrete actions.

    ``loss = pi_loss + vf_loss_coeff * vf_loss + entropy_coeff * entropy`` with
    ``pi_loss = -sum(log pi(a|s) * adv)``, ``vf_loss = 0.5 * sum((V(s) - target)^2)`` and
    ``entropy = sum(H(pi(.|s)))`` (PARL's sums; ``reduction="mean"`` averages over the batch instead).
    PARL's ``entropy_coeff`` is negative (e.g. ``-0.01``) to reward entropy.

    The model must define ``policy(obs) -> logits`` float32 ``[B, num_actions]`` and
    ``value(obs) -> float32 [B] or [B, 1]``; ``policy_and_value(obs)`` is used when defined.

    Args:
        model: the actor-critic model.
        config: PARL's dict with ``vf_loss_coeff`` and ``learning_rate`` (optional: the keyword
            arguments below take precedence when given explicitly).
        vf_loss_coeff: weight of the value loss.
        learning_rate: initial Adam learning rate.
        max_grad_norm: global gradient-norm clip (PARL: 40).
        reduction: ``"sum"`` (PARL) or ``"mean"``.
        device: ``"cpu"``, ``"cuda"``, ``"cuda:1"`` or a ``torch.device``: where the models, optimizer state and
            every tensor of the algorithm live; default CUDA when available (PARL's rule).

    Raises:
        ValueError: the model lacks ``policy`` / ``value``, or a hyperparameter is out of range.
    """

    def __init__(self, model: Model, config: Mapping[str, Any] | None = None, *, vf_loss_coeff: float | None = None,
                 learning_rate: float | None = None, max_grad_norm: float | None = 40.0,
                 reduction: str = "sum", device: DeviceLike = None) -> None:
        super().__init__(model, device=device)
        check_model_method(model, "value", "A2C")
        check_model_method(model, "policy", "A2C")
        config = dict(config or {})
        vf = vf_loss_coeff if vf_loss_coeff is not None else config.get("vf_loss_coeff", 0.5)
        lr = learning_rate if learning_rate is not None else config.get("learning_rate", 1e-3)
        if float(vf) < 0:
            raise ValueError(f"A2C: vf_loss_coeff must be >= 0, got {vf}")
        self.vf_loss_coeff = float(vf)
        self.learning_rate = positive(lr, "learning_rate", "A2C", "1e-3")
        self.max_grad_norm = None if max_grad_norm is None else positive(max_grad_norm, "max_grad_norm", "A2C", "40")
        if reduction not in ("sum", "mean"):
            raise ValueError(f"A2C: reduction must be 'sum' or 'mean', got {reduction!r}")
        self.reduction = reduction
        self.optimizer = adam(self.model.parameters(), lr=self.learning_rate)
        self.last_info: dict[str, float] = {}

    def _logits(self, obs: torch.Tensor) -> torch.Tensor:
        logits = self.model.policy(obs)
        if isinstance(logits, (tuple, list)) or logits.ndim != 2:
            raise ValueError("A2C needs model.policy(obs) to return logits float32 [B, num_actions]; A2C supports "
                             "Discrete action spaces only (use PPO(continuous_action=True) or SAC for Box)")
        return logits

    def _value(self, obs: torch.Tensor) -> torch.Tensor:
        value = self.model.value(obs)
        return value.squeeze(1) if value.ndim == 2 and value.shape[1] == 1 else value

    def _policy_and_value(self, obs: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        fused = getattr(self.model, "policy_and_value", None)
        if callable(fused):
            logits, value = fused(obs)
            return logits, (value.squeeze(1) if value.ndim == 2 and value.shape[1] == 1 else value)
        return self._logits(obs), self._value(obs)

    @accepts_single_obs
    @on_device
    @readable_shape_errors
    def sample(self, obs: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """Sample actions.

        Args:
            obs: float32 ``[B, *obs_shape]``.

        Returns:
            ``(action int64 [B], value float32 [B])``.
        """
        logits, value = self._policy_and_value(obs_batch(obs, "A2C"))
        return torch.multinomial(F.softmax(logits, dim=-1), 1).squeeze(1), value

    @accepts_single_obs
    @on_device
    @readable_shape_errors
    def predict(self, obs: torch.Tensor) -> torch.Tensor:
        """Greedy actions int64 ``[B]`` for obs ``[B, *obs_shape]``."""
        return self._logits(obs_batch(obs, "A2C")).argmax(dim=-1)

    @accepts_single_obs
    @on_device
    @readable_shape_errors
    def value(self, obs: torch.Tensor) -> torch.Tensor:
        """State values float32 ``[B]`` for obs ``[B, *obs_shape]``."""
        return self._value(obs_batch(obs, "A2C"))

    @accepts_single_obs
    @on_device
    @readable_shape_errors
    def prob_and_value(self, obs: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """``(probs float32 [B, num_actions], value float32 [B])``."""
        logits, value = self._policy_and_value(obs_batch(obs, "A2C"))
        return F.softmax(logits, dim=-1), value

    @on_device
    @readable_shape_errors
    def learn(self, obs: torch.Tensor, actions: torch.Tensor, advantages: torch.Tensor, target_values: torch.Tensor,
              learning_rate: float | None = None, entropy_coeff: float = -0.01
              ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
        """One Adam step.

        Args:
            obs: float32 ``[B, *obs_shape]``.
            actions: int64 ``[B]``.
            advantages: float32 ``[B]``.
            target_values: float32 ``[B]`` value targets (n-step or GAE returns).
            learning_rate: if given, set the optimizer's learning rate first.
            entropy_coeff: multiplies the entropy in the loss (negative rewards entropy; PARL's sign).

        Returns:
            ``(total_loss, pi_loss, vf_loss, entropy)`` scalar tensors (PARL's return).
        """
        obs = obs_batch(obs, "A2C")
        batch = obs.shape[0]
        advantages = column(advantages, "advantages", batch, "A2C")
        target_values = column(target_values, "target_values", batch, "A2C")
        logits, values = self._policy_and_value(obs)
        actions = discrete_actions(actions, batch, logits.shape[1], "A2C")
        action_log_probs, entropy_per = functional.categorical_log_prob_entropy(logits, actions)
        reduce = torch.sum if self.reduction == "sum" else torch.mean
        pi_loss = -reduce(action_log_probs * advantages)
        vf_loss = 0.5 * reduce((values - target_values).pow(2))
        entropy = reduce(entropy_per)
        total_loss = pi_loss + self.vf_loss_coeff * vf_loss + float(entropy_coeff) * entropy
        if learning_rate is not None:
            for group in self.optimizer.param_groups:
                group["lr"] = float(learning_rate)
        self.optimizer.zero_grad()
        total_loss.backward()
        if self.max_grad_norm is not None:
            clip_grad_norm(optimizer_params(self.optimizer), self.max_grad_norm)
        self.optimizer.step()
        self.last_info = {"train/pi_loss": pi_loss.detach(), "train/vf_loss": vf_loss.detach(),
                          "train/entropy": entropy.detach()}
        return total_loss, pi_loss, vf_loss, entropy

    def get_info(self) -> dict[str, Any]:
        """Diagnostics of the last ``learn`` call."""
        return dict(self.last_info)
