"""A2C (Mnih et al. 2016, "Asynchronous Methods for Deep Reinforcement Learning", synchronous variant)
on PaddlePaddle, with PARL's paddle ``A2C`` API."""

from __future__ import annotations

from typing import Any

import paddle
import paddle.nn.functional as F

from parl_algorithms._validation import check_model_method
from parl_algorithms.paddle import functional
from parl_algorithms.paddle._common import (
    adam,
    column,
    discrete_actions,
    host_float,
    obs_batch,
    positive,
    readable_shape_errors,
    set_lr,
    step,
)
from parl_core.paddle import Algorithm, Model

__all__ = ["A2C"]


class A2C(Algorithm):
    """Advantage actor-critic for discrete actions (same math as the torch A2C).

    ``loss = pi_loss + vf_loss_coeff * vf_loss + entropy_coeff * entropy`` with
    ``pi_loss = -sum(log pi(a|s) * adv)``, ``vf_loss = 0.5 * sum((V(s) - target)^2)``,
    ``entropy = sum(H(pi(.|s)))`` (PARL's sums; ``reduction="mean"`` averages), Adam with the global
    gradient norm clipped to 40 (PARL).

    The model must define ``policy(obs) -> logits`` float32 ``[B, num_actions]`` and
    ``value(obs) -> float32 [B] or [B, 1]``; ``policy_and_value(obs)`` is used when defined.

    Args:
        model: the actor-critic model (a ``parl_core.paddle.Model``).
        vf_loss_coeff: weight of the value loss (PARL's paddle keyword; required there, 0.5 by default here).
        learning_rate: initial Adam learning rate (``learn(..., learning_rate)`` sets it per call, as PARL).
        max_grad_norm: global gradient-norm clip (PARL: 40).
        reduction: ``"sum"`` (PARL) or ``"mean"``.
        device: ``"cpu"``, ``"gpu"``, ``"gpu:1"`` (or ``"cuda"``): paddle's device for this algorithm (set
            process-wide with ``paddle.set_device``); default paddle's own (the GPU in a CUDA build).

    Raises:
        TypeError: the model is not a paddle ``parl.Model``.
        ValueError: the model lacks ``policy`` / ``value``, or a hyperparameter is out of range.
    """

    def __init__(self, model: Model, vf_loss_coeff: float | None = None, *, learning_rate: float = 1e-3,
                 max_grad_norm: float | None = 40.0, reduction: str = "sum", device: str | None = None) -> None:
        super().__init__(model, device=device)
        check_model_method(model, "value", "A2C")
        check_model_method(model, "policy", "A2C")
        vf = 0.5 if vf_loss_coeff is None else vf_loss_coeff
        if isinstance(vf, bool) or not isinstance(vf, (int, float)) or vf < 0:
            raise ValueError(f"A2C: vf_loss_coeff must be a number >= 0, got {vf!r}; "
                             "e.g. A2C(model, vf_loss_coeff=0.5)")
        self.vf_loss_coeff = float(vf)
        self.learning_rate = positive(learning_rate, "learning_rate", "A2C", "1e-3")
        self.max_grad_norm = None if max_grad_norm is None else positive(max_grad_norm, "max_grad_norm", "A2C", "40")
        if reduction not in ("sum", "mean"):
            raise ValueError(f"A2C: reduction must be 'sum' or 'mean', got {reduction!r}")
        self.reduction = reduction
        self.optimizer = adam(self.model.parameters(), lr=self.learning_rate, max_grad_norm=self.max_grad_norm)
        self.last_info: dict[str, float] = {}

    def _logits(self, obs: paddle.Tensor) -> paddle.Tensor:
        logits = self.model.policy(obs)
        if isinstance(logits, (tuple, list)) or logits.ndim != 2:
            raise ValueError("A2C needs model.policy(obs) to return logits float32 [B, num_actions]; A2C supports "
                             "Discrete action spaces only (use PPO(continuous_action=True) or SAC for Box)")
        return logits

    @staticmethod
    def _flat(value: paddle.Tensor) -> paddle.Tensor:
        return value.squeeze(1) if value.ndim == 2 and value.shape[1] == 1 else value

    def _policy_and_value(self, obs: paddle.Tensor) -> tuple[paddle.Tensor, paddle.Tensor]:
        fused = getattr(self.model, "policy_and_value", None)
        if callable(fused):
            logits, value = fused(obs)
            return logits, self._flat(value)
        return self._logits(obs), self._flat(self.model.value(obs))

    @readable_shape_errors
    def sample(self, obs: paddle.Tensor) -> tuple[paddle.Tensor, paddle.Tensor]:
        """``(action int64 [B], value float32 [B])`` for obs ``[B, *obs_shape]``."""
        logits, value = self._policy_and_value(obs_batch(obs, "A2C"))
        return paddle.multinomial(F.softmax(logits, axis=-1), 1).squeeze(1), value

    @readable_shape_errors
    def predict(self, obs: paddle.Tensor) -> paddle.Tensor:
        """Greedy actions int64 ``[B]`` for obs ``[B, *obs_shape]``."""
        return self._logits(obs_batch(obs, "A2C")).argmax(axis=-1)

    @readable_shape_errors
    def value(self, obs: paddle.Tensor) -> paddle.Tensor:
        """State values float32 ``[B]`` for obs ``[B, *obs_shape]``."""
        return self._flat(self.model.value(obs_batch(obs, "A2C")))

    @readable_shape_errors
    def prob_and_value(self, obs: paddle.Tensor) -> tuple[paddle.Tensor, paddle.Tensor]:
        """``(probs float32 [B, num_actions], value float32 [B])``."""
        logits, value = self._policy_and_value(obs_batch(obs, "A2C"))
        return F.softmax(logits, axis=-1), value

    @readable_shape_errors
    def learn(self, obs: paddle.Tensor, actions: paddle.Tensor, advantages: paddle.Tensor,
              target_values: paddle.Tensor, learning_rate: float | None = None, entropy_coeff: float = -0.01
              ) -> tuple[paddle.Tensor, paddle.Tensor, paddle.Tensor, paddle.Tensor]:
        """One Adam step.

        Args:
            obs: float32 ``[B, *obs_shape]``.
            actions: int64 ``[B]``.
            advantages, target_values: float32 ``[B]``.
            learning_rate: if given, set the optimizer's learning rate first (PARL passes it every call).
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
        reduce = paddle.sum if self.reduction == "sum" else paddle.mean
        pi_loss = -reduce(action_log_probs * advantages)
        vf_loss = 0.5 * reduce((values - target_values).pow(2))
        entropy = reduce(entropy_per)
        total_loss = pi_loss + self.vf_loss_coeff * vf_loss + float(entropy_coeff) * entropy
        if learning_rate is not None:
            set_lr(self.optimizer, learning_rate)
        step(self.optimizer, total_loss)
        self.last_info = {"train/pi_loss": host_float(pi_loss), "train/vf_loss": host_float(vf_loss),
                          "train/entropy": host_float(entropy)}
        return total_loss, pi_loss, vf_loss, entropy

    def get_info(self) -> dict[str, Any]:
        """Diagnostics of the last ``learn`` call."""
        return dict(self.last_info)
