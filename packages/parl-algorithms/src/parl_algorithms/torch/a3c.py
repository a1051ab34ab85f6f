"""A3C's loss (Mnih et al. 2016, "Asynchronous Methods for Deep Reinforcement Learning", Algorithm S3),
the update shared by synchronous A2C and GA3C (Babaeizadeh et al. 2017, "Reinforcement Learning through
Asynchronous Advantage Actor-Critic on a GPU"), with PARL's ``A3C`` API."""

from __future__ import annotations

from typing import Any

import torch
import torch.nn.functional as F

from parl_algorithms._checks import a3c_hyperparameters, a3c_logits, a3c_value
from parl_algorithms._checks import number as _number
from parl_algorithms._validation import check_model_method
from parl_algorithms.torch import functional
from parl_algorithms.torch._common import (
    LazyInfo,
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

__all__ = ["A3C"]


class A3C(LazyInfo, Algorithm):
    """Advantage actor-critic loss with Adam, for discrete actions (PARL's ``A3C``).

    ``total_loss = pi_loss + vf_loss_coeff * vf_loss + entropy_coeff * entropy`` with
    ``pi_loss = -sum(log pi(a|s) * advantages)``, ``vf_loss = 0.5 * sum((V(s) - target_values)^2)`` and
    ``entropy = sum(H(pi(.|s)))`` over the batch (PARL's sums; ``reduction="mean"`` averages instead),
    then one Adam step after clipping the global gradient norm to 40 (PARL's). PARL's ``entropy_coeff``
    is negative (e.g. ``-0.01``) to reward entropy. The advantages and value targets (n-step returns or
    GAE) are computed by the caller, e.g. with ``parl.utils.compute_gae``; they are treated as constants.

    The model must define ``policy(obs) -> logits`` float32 ``[B, num_actions]`` and
    ``value(obs) -> float32 [B] or [B, 1]``; ``policy_and_value(obs) -> (logits, value)`` (one pass of a
    shared torso) is used when the model defines it.

    Args:
        model: the actor-critic model.
        vf_loss_coeff: weight of the value loss, >= 0 (required, as in PARL; PARL's examples use 0.5).
        max_grad_norm: global gradient-norm clip (PARL: 40); ``None`` does not clip.
        reduction: ``"sum"`` over the batch (PARL) or ``"mean"``.
        device: ``"cpu"``, ``"cuda"``, ``"cuda:1"`` or a ``torch.device``: where the models, optimizer state and
            every tensor of the algorithm live; default CUDA when available (PARL's rule).

    Attributes:
        last_info: diagnostics of the last ``learn`` call: ``train/total_loss``, ``train/pi_loss``,
            ``train/vf_loss``, ``train/entropy`` (floats), ``train/grad_norm`` (before clipping).

    Raises:
        ValueError: the model lacks ``policy`` / ``value``, or a hyperparameter is missing or out of range.
    """

    def __init__(self, model: Model, vf_loss_coeff: float | None = None, *, max_grad_norm: float | None = 40.0,
                 reduction: str = "sum", device: DeviceLike = None) -> None:
        super().__init__(model, device=device)
        check_model_method(model, "policy", "A3C")
        check_model_method(model, "value", "A3C")
        checked = a3c_hyperparameters(vf_loss_coeff, max_grad_norm, reduction)
        self.vf_loss_coeff: float = checked["vf_loss_coeff"]
        self.max_grad_norm: float | None = checked["max_grad_norm"]
        self.reduction: str = checked["reduction"]
        # the learning rate is an argument of every learn() call (PARL's schedule lives in the caller)
        self.optimizer = adam(self.model.parameters(), lr=1e-3)
        self.last_info: dict[str, float] = {}

    def _check_logits(self, logits: Any, obs: torch.Tensor) -> torch.Tensor:
        return a3c_logits(logits, obs.shape[0])

    def _check_value(self, value: torch.Tensor, obs: torch.Tensor) -> torch.Tensor:
        return a3c_value(value, obs.shape[0])

    def _policy_and_value(self, obs: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        fused = getattr(self.model, "policy_and_value", None)
        if callable(fused):
            logits, value = fused(obs)
        else:
            logits, value = self.model.policy(obs), self.model.value(obs)
        return self._check_logits(logits, obs), self._check_value(value, obs)

    @on_device
    @readable_shape_errors
    def sample(self, obs: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """Sample actions from the policy (PARL: ``sample_actions, values``).

        Args:
            obs: float32 ``[B, *obs_shape]``.

        Returns:
            ``(actions int64 [B], values float32 [B])``.
        """
        logits, value = self._policy_and_value(obs_batch(obs, "A3C"))
        return torch.multinomial(F.softmax(logits, dim=-1), 1).squeeze(1), value

    @on_device
    @readable_shape_errors
    def predict(self, obs: torch.Tensor) -> torch.Tensor:
        """Greedy actions: int64 ``[B]`` for obs float32 ``[B, *obs_shape]``."""
        obs = obs_batch(obs, "A3C")
        return self._check_logits(self.model.policy(obs), obs).argmax(dim=-1)

    @on_device
    @readable_shape_errors
    def value(self, obs: torch.Tensor) -> torch.Tensor:
        """State values ``V(s)``: float32 ``[B]`` for obs float32 ``[B, *obs_shape]``."""
        obs = obs_batch(obs, "A3C")
        return self._check_value(self.model.value(obs), obs)

    @on_device
    @readable_shape_errors
    def learn(self, obs: torch.Tensor, actions: torch.Tensor, advantages: torch.Tensor, target_values: torch.Tensor,
              learning_rate: float, entropy_coeff: float
              ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
        """One Adam step on the A3C loss of a batch.

        Args:
            obs: float32 ``[B, *obs_shape]`` (e.g. ``[B, 4, 84, 84]`` stacked Atari frames).
            actions: int64 ``[B]`` (or ``[B, 1]``) indices of the actions taken.
            advantages: float32 ``[B]`` (or ``[B, 1]``), e.g. GAE advantages.
            target_values: float32 ``[B]`` (or ``[B, 1]``), value targets (n-step returns / GAE returns).
            learning_rate: Adam's learning rate for this step, > 0 (a float or a 0-d tensor).
            entropy_coeff: multiplies the entropy in the loss; negative rewards entropy (PARL's sign).

        Returns:
            ``(total_loss, pi_loss, vf_loss, entropy)``: scalar float32 tensors (PARL's return).

        Raises:
            ValueError: shapes do not match ``B`` of ``obs``, actions are not discrete indices in
                ``[0, num_actions)`` (a continuous action space), or ``learning_rate <= 0``.
            TypeError: an input is not numeric.
        """
        lr = positive(_number(learning_rate, "learning_rate", "1e-3"), "learning_rate", "A3C", "1e-3")
        entropy_coeff = _number(entropy_coeff, "entropy_coeff", "-0.01")
        obs = obs_batch(obs, "A3C")
        batch = obs.shape[0]
        advantages = column(advantages, "advantages", batch, "A3C")
        target_values = column(target_values, "target_values", batch, "A3C")
        logits, values = self._policy_and_value(obs)
        actions = discrete_actions(actions, batch, logits.shape[1], "A3C")
        log_probs, entropies = functional.categorical_log_prob_entropy(logits, actions)
        reduce = torch.sum if self.reduction == "sum" else torch.mean
        pi_loss = -reduce(log_probs * advantages.detach())
        vf_loss = 0.5 * reduce((values - target_values.detach()).pow(2))
        entropy = reduce(entropies)
        total_loss = pi_loss + self.vf_loss_coeff * vf_loss + entropy_coeff * entropy
        for group in self.optimizer.param_groups:
            group["lr"] = lr
        self.optimizer.zero_grad()
        total_loss.backward()
        max_norm = float("inf") if self.max_grad_norm is None else self.max_grad_norm  # inf: measure only
        grad_norm = clip_grad_norm(optimizer_params(self.optimizer), max_norm)
        self.optimizer.step()
        self.last_info = {"train/total_loss": total_loss.detach(), "train/pi_loss": pi_loss.detach(),
                          "train/vf_loss": vf_loss.detach(), "train/entropy": entropy.detach(),
                          "train/grad_norm": grad_norm.detach()}
        return total_loss.detach(), pi_loss.detach(), vf_loss.detach(), entropy.detach()

    def get_info(self) -> dict[str, Any]:
        """Diagnostics of the last ``learn`` call (a copy of :attr:`last_info`)."""
        return dict(self.last_info)
