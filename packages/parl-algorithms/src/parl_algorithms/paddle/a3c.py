"""A3C's loss (Mnih et al. 2016, "Asynchronous Methods for Deep Reinforcement Learning", Algorithm S3),
the update shared by synchronous A2C and GA3C (Babaeizadeh et al. 2017), on PaddlePaddle with the torch
``A3C``'s API (PARL 2.2.1 has A3C on fluid only: ``A3C(model, vf_loss_coeff=None)``)."""

from __future__ import annotations

from typing import Any

import paddle
import paddle.nn.functional as F

from parl_algorithms._checks import a3c_hyperparameters, a3c_logits, a3c_value, number
from parl_algorithms._validation import check_model_method
from parl_algorithms.paddle import functional
from parl_algorithms.paddle._common import (
    adam,
    column,
    discrete_actions,
    grad_norm,
    host_float,
    obs_batch,
    positive,
    readable_shape_errors,
    set_lr,
)
from parl_core.paddle import Algorithm, Model

__all__ = ["A3C"]


class A3C(Algorithm):
    """Advantage actor-critic loss with Adam, for discrete actions (same math and API as the torch ``A3C``).

    ``total_loss = pi_loss + vf_loss_coeff * vf_loss + entropy_coeff * entropy`` with
    ``pi_loss = -sum(log pi(a|s) * advantages)``, ``vf_loss = 0.5 * sum((V(s) - target_values)^2)`` and
    ``entropy = sum(H(pi(.|s)))`` over the batch (PARL's sums; ``reduction="mean"`` averages instead),
    then one Adam step with the global gradient norm clipped to ``max_grad_norm`` (PARL: 40). PARL's
    ``entropy_coeff`` is negative (e.g. ``-0.01``) to reward entropy. The advantages and value targets are
    computed by the caller (e.g. ``parl.utils.compute_gae``) and treated as constants.

    The model must define ``policy(obs) -> logits`` float32 ``[B, num_actions]`` and
    ``value(obs) -> float32 [B] or [B, 1]``; ``policy_and_value(obs) -> (logits, value)`` is used when defined.

    Args:
        model: the actor-critic model (a ``parl_core.paddle.Model``).
        vf_loss_coeff: weight of the value loss, >= 0 (required, as in PARL; PARL's examples use 0.5).
        max_grad_norm: global gradient-norm clip (PARL: 40); ``None`` does not clip.
        reduction: ``"sum"`` over the batch (PARL) or ``"mean"``.
        device: ``"cpu"``, ``"gpu"``, ``"gpu:1"`` (or ``"cuda"``): paddle's device (process-wide,
            ``paddle.set_device``); default paddle's own (the GPU in a CUDA build).

    Attributes:
        last_info: diagnostics of the last ``learn`` call: ``train/total_loss``, ``train/pi_loss``,
            ``train/vf_loss``, ``train/entropy``, ``train/grad_norm`` (before clipping), floats.

    Raises:
        TypeError: the model is not a paddle ``parl.Model``.
        ValueError: the model lacks ``policy`` / ``value``, or a hyperparameter is missing or out of range.
    """

    def __init__(self, model: Model, vf_loss_coeff: float | None = None, *, max_grad_norm: float | None = 40.0,
                 reduction: str = "sum", device: str | None = None) -> None:
        super().__init__(model, device=device)
        check_model_method(model, "policy", "A3C")
        check_model_method(model, "value", "A3C")
        checked = a3c_hyperparameters(vf_loss_coeff, max_grad_norm, reduction)
        self.vf_loss_coeff: float = checked["vf_loss_coeff"]
        self.max_grad_norm: float | None = checked["max_grad_norm"]
        self.reduction: str = checked["reduction"]
        # the learning rate is an argument of every learn() call (PARL's schedule lives in the caller)
        self.optimizer = adam(self.model.parameters(), lr=1e-3, max_grad_norm=self.max_grad_norm)
        self.last_info: dict[str, float] = {}

    def _policy_and_value(self, obs: paddle.Tensor) -> tuple[paddle.Tensor, paddle.Tensor]:
        fused = getattr(self.model, "policy_and_value", None)
        logits, value = fused(obs) if callable(fused) else (self.model.policy(obs), self.model.value(obs))
        return a3c_logits(logits, obs.shape[0]), a3c_value(value, obs.shape[0])

    @readable_shape_errors
    def sample(self, obs: paddle.Tensor) -> tuple[paddle.Tensor, paddle.Tensor]:
        """Sample actions from the policy (PARL: ``sample_actions, values``).

        Args:
            obs: float32 ``[B, *obs_shape]``.

        Returns:
            ``(actions int64 [B], values float32 [B])``.
        """
        logits, value = self._policy_and_value(obs_batch(obs, "A3C"))
        return paddle.multinomial(F.softmax(logits, axis=-1), 1).squeeze(1), value

    @readable_shape_errors
    def predict(self, obs: paddle.Tensor) -> paddle.Tensor:
        """Greedy actions: int64 ``[B]`` for obs float32 ``[B, *obs_shape]``."""
        obs = obs_batch(obs, "A3C")
        return a3c_logits(self.model.policy(obs), obs.shape[0]).argmax(axis=-1)

    @readable_shape_errors
    def value(self, obs: paddle.Tensor) -> paddle.Tensor:
        """State values ``V(s)``: float32 ``[B]`` for obs float32 ``[B, *obs_shape]``."""
        obs = obs_batch(obs, "A3C")
        return a3c_value(self.model.value(obs), obs.shape[0])

    @readable_shape_errors
    def learn(self, obs: paddle.Tensor, actions: paddle.Tensor, advantages: paddle.Tensor,
              target_values: paddle.Tensor, learning_rate: float, entropy_coeff: float
              ) -> tuple[paddle.Tensor, paddle.Tensor, paddle.Tensor, paddle.Tensor]:
        """One Adam step on the A3C loss of a batch.

        Args:
            obs: float32 ``[B, *obs_shape]`` (e.g. ``[B, 4, 84, 84]`` stacked Atari frames).
            actions: int64 ``[B]`` (or ``[B, 1]``) indices of the actions taken.
            advantages: float32 ``[B]`` (or ``[B, 1]``), e.g. GAE advantages.
            target_values: float32 ``[B]`` (or ``[B, 1]``), value targets (n-step returns / GAE returns).
            learning_rate: Adam's learning rate for this step, > 0 (a float or a one-element tensor).
            entropy_coeff: multiplies the entropy in the loss; negative rewards entropy (PARL's sign).

        Returns:
            ``(total_loss, pi_loss, vf_loss, entropy)``: 0-d float32 tensors (PARL's return).

        Raises:
            ValueError: shapes do not match ``B`` of ``obs``, actions are not discrete indices in
                ``[0, num_actions)`` (a continuous action space), or ``learning_rate <= 0``.
            TypeError: an input is not numeric.
        """
        lr = positive(number(learning_rate, "learning_rate", "1e-3"), "learning_rate", "A3C", "1e-3")
        entropy_coeff = number(entropy_coeff, "entropy_coeff", "-0.01")
        obs = obs_batch(obs, "A3C")
        batch = obs.shape[0]
        advantages = column(advantages, "advantages", batch, "A3C")
        target_values = column(target_values, "target_values", batch, "A3C")
        logits, values = self._policy_and_value(obs)
        actions = discrete_actions(actions, batch, logits.shape[1], "A3C")
        log_probs, entropies = functional.categorical_log_prob_entropy(logits, actions)
        reduce = paddle.sum if self.reduction == "sum" else paddle.mean
        pi_loss = -reduce(log_probs * advantages.detach())
        vf_loss = 0.5 * reduce((values - target_values.detach()).pow(2))
        entropy = reduce(entropies)
        total_loss = pi_loss + self.vf_loss_coeff * vf_loss + entropy_coeff * entropy
        set_lr(self.optimizer, lr)
        self.optimizer.clear_grad()
        total_loss.backward()
        norm = grad_norm(self.optimizer)
        self.optimizer.step()
        self.last_info = {"train/total_loss": host_float(total_loss), "train/pi_loss": host_float(pi_loss),
                          "train/vf_loss": host_float(vf_loss), "train/entropy": host_float(entropy),
                          "train/grad_norm": host_float(norm)}
        return total_loss.detach(), pi_loss.detach(), vf_loss.detach(), entropy.detach()

    def get_info(self) -> dict[str, Any]:
        """Diagnostics of the last ``learn`` call (a copy of :attr:`last_info`)."""
        return dict(self.last_info)
