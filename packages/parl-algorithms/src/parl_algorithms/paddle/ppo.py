"""PPO (Schulman et al. 2017, "Proximal Policy Optimization Algorithms") on PaddlePaddle with PARL's
paddle ``PPO`` API: clipped surrogate, clipped value loss, advantage normalisation, discrete and
continuous actions, and an optional approximate-KL early stop."""

from __future__ import annotations

from typing import Any

import paddle

from parl_algorithms._validation import check_model_method
from parl_algorithms.paddle import functional
from parl_algorithms.paddle._common import (
    adam,
    column,
    continuous_actions,
    discrete_actions,
    host_float,
    obs_batch,
    positive,
    readable_shape_errors,
    set_lr,
    step,
)
from parl_core.paddle import Algorithm, Model

__all__ = ["PPO"]


class PPO(Algorithm):
    """Proximal Policy Optimization, one minibatch per ``learn`` call (same math as the torch PPO).

    The model must define ``value(obs) -> float32 [B, 1] or [B]`` and ``policy(obs)``: the logits float32
    ``[B, num_actions]`` (discrete) or ``(mean, std)``, each float32 ``[B, act_dim]`` (continuous; std > 0,
    may be ``[act_dim]``: PARL's contract, whose models return ``exp(log_std)``).

    Args:
        model: the actor-critic model (a ``parl_core.paddle.Model``).
        clip_param: surrogate and value clipping epsilon.
        value_loss_coef: weight of the value loss.
        entropy_coef: weight of the entropy bonus.
        initial_lr: Adam learning rate.
        eps: Adam epsilon.
        max_grad_norm: gradient-norm clip (of all gradients together, as the torch PPO; PARL's paddle PPO
            clipped each tensor separately).
        use_clipped_value_loss: clip the value update around the old value.
        norm_adv: normalise advantages per minibatch.
        continuous_action: Gaussian policy (``True``) or categorical (``False``).
        target_kl: if set, a ``learn`` call whose approximate KL before the step exceeds it skips the update
            and sets ``kl_exceeded``.
        device: ``"cpu"``, ``"gpu"``, ``"gpu:1"`` (or ``"cuda"``): paddle's device for this algorithm (set
            process-wide with ``paddle.set_device``); default paddle's own (the GPU in a CUDA build).

    Attributes:
        last_info: ``train/value_loss``, ``train/action_loss``, ``train/entropy``, ``train/approx_kl``,
            ``train/clip_fraction``, ``train/kl_exceeded`` of the last ``learn`` call.

    Raises:
        TypeError: the model is not a paddle ``parl.Model``.
        ValueError: the model lacks ``value`` or ``policy``, or a hyperparameter is out of range.
    """

    def __init__(self, model: Model, clip_param: float = 0.1, value_loss_coef: float = 0.5,
                 entropy_coef: float = 0.01, initial_lr: float = 2.5e-4, eps: float = 1e-5,
                 max_grad_norm: float | None = 0.5, use_clipped_value_loss: bool = True, norm_adv: bool = True,
                 continuous_action: bool = False, *, target_kl: float | None = None, device: str | None = None) -> None:
        super().__init__(model, device=device)
        check_model_method(model, "value", "PPO")
        check_model_method(model, "policy", "PPO")
        self.clip_param = positive(clip_param, "clip_param", "PPO", "0.2")
        if value_loss_coef < 0 or entropy_coef < 0:
            raise ValueError(f"PPO: value_loss_coef ({value_loss_coef}) and entropy_coef ({entropy_coef}) must be >= 0")
        self.value_loss_coef, self.entropy_coef = float(value_loss_coef), float(entropy_coef)
        self.initial_lr = positive(initial_lr, "initial_lr", "PPO", "3e-4")
        self.eps = float(eps)
        self.max_grad_norm = None if max_grad_norm is None else positive(max_grad_norm, "max_grad_norm", "PPO", "0.5")
        self.use_clipped_value_loss = bool(use_clipped_value_loss)
        self.norm_adv = bool(norm_adv)
        self.continuous_action = bool(continuous_action)
        self.target_kl = None if target_kl is None else positive(target_kl, "target_kl", "PPO", "0.02")
        self.kl_exceeded = False
        self.optimizer = adam(self.model.parameters(), lr=self.initial_lr, eps=self.eps,
                              max_grad_norm=self.max_grad_norm)
        self.last_info: dict[str, float] = {}

    def _policy(self, obs: paddle.Tensor) -> tuple[paddle.Tensor, paddle.Tensor | None]:
        out = self.model.policy(obs)
        if self.continuous_action:
            if not (isinstance(out, (tuple, list)) and len(out) == 2):
                raise ValueError("PPO(continuous_action=True) needs model.policy(obs) to return (mean, std), "
                                 "each float32 [B, act_dim] (std > 0: return log_std.exp(), as PARL's models do); "
                                 "for a Discrete action space use continuous_action=False")
            return out[0], out[1].expand_as(out[0]).log()  # PARL's contract is the std; the math uses its log
        if isinstance(out, (tuple, list)):
            raise ValueError("PPO(continuous_action=False) needs model.policy(obs) to return logits float32 "
                             "[B, num_actions], got a tuple; for a Box action space pass continuous_action=True")
        if out.ndim != 2:
            raise ValueError(f"PPO: model.policy(obs) must return logits [B, num_actions], got {tuple(out.shape)}")
        return out, None

    def _log_prob_entropy(self, params, action):
        first, log_std = params
        if log_std is None:
            return functional.categorical_log_prob_entropy(first, action)
        return functional.gaussian_log_prob_entropy(first, log_std, action)

    def _value(self, obs: paddle.Tensor) -> paddle.Tensor:
        value = self.model.value(obs)
        if value.ndim == 2 and value.shape[1] == 1:
            value = value.squeeze(1)
        if value.ndim != 1:
            raise ValueError(f"PPO: model.value(obs) must return float32 [B, 1] or [B], got {tuple(value.shape)}")
        return value

    @readable_shape_errors
    def value(self, obs: paddle.Tensor) -> paddle.Tensor:
        """State values float32 ``[B, 1]`` of obs ``[B, *obs_shape]``."""
        return self._value(obs_batch(obs, "PPO")).unsqueeze(1)

    @readable_shape_errors
    def sample(self, obs: paddle.Tensor) -> tuple[paddle.Tensor, paddle.Tensor, paddle.Tensor, paddle.Tensor]:
        """``(value [B, 1], action, log_prob [1, B], entropy [B])`` for obs ``[B, *obs_shape]`` (PARL's order).

        As PARL's paddle PPO (which draws ``dist.sample([1])``), ``action`` and ``log_prob`` carry a leading
        sample axis of 1: ``action`` is int64 ``[1, B]`` (discrete) or float32 ``[1, B, act_dim]`` (continuous,
        unclipped); PARL's paddle agents take ``[0]`` of both. (The torch PPO returns ``[B]`` / ``[B, act_dim]``
        and ``[B]``, as PARL's torch PPO does.)
        """
        obs = obs_batch(obs, "PPO")
        params = self._policy(obs)
        first, log_std = params
        if log_std is None:
            action = paddle.multinomial(paddle.nn.functional.softmax(first, axis=-1), 1).squeeze(1)
        else:
            action = first + paddle.exp(log_std) * paddle.randn(first.shape, dtype=first.dtype)
        log_prob, entropy = self._log_prob_entropy(params, action)
        return self._value(obs).unsqueeze(1), action.unsqueeze(0), log_prob.unsqueeze(0), entropy

    @readable_shape_errors
    def predict(self, obs: paddle.Tensor) -> paddle.Tensor:
        """The Gaussian mean float32 ``[B, act_dim]`` (continuous) or the argmax int64 ``[B]`` (discrete)."""
        first, log_std = self._policy(obs_batch(obs, "PPO"))
        return first if log_std is not None else first.argmax(axis=-1)

    @readable_shape_errors
    def learn(self, batch_obs: paddle.Tensor, batch_action: paddle.Tensor, batch_value: paddle.Tensor,
              batch_return: paddle.Tensor, batch_logprob: paddle.Tensor, batch_adv: paddle.Tensor,
              lr: float | None = None) -> tuple[float, float, float]:
        """One Adam step on ``value_loss_coef * value_loss + action_loss - entropy_coef * entropy``.

        Args:
            batch_obs: float32 ``[B, *obs_shape]``.
            batch_action: int64 ``[B]`` (discrete) or float32 ``[B, act_dim]`` (continuous).
            batch_value, batch_return, batch_logprob, batch_adv: float32 ``[B]`` / ``[B, 1]``.
            lr: if given, set the optimizer's learning rate first (annealing).

        Returns:
            ``(value_loss, action_loss, entropy)`` as Python floats (PARL's return).
        """
        obs = obs_batch(batch_obs, "PPO")
        batch = obs.shape[0]
        old_value = column(batch_value, "batch_value", batch, "PPO")
        returns = column(batch_return, "batch_return", batch, "PPO")
        old_log_prob = column(batch_logprob, "batch_logprob", batch, "PPO")
        adv = column(batch_adv, "batch_adv", batch, "PPO")
        params = self._policy(obs)
        check = continuous_actions if self.continuous_action else discrete_actions
        action = (check(batch_action, batch, "PPO") if self.continuous_action
                  else check(batch_action, batch, params[0].shape[-1], "PPO"))
        log_prob, entropy = self._log_prob_entropy(params, action)
        value = self._value(obs)
        if self.norm_adv:
            adv = functional.normalize_advantages(adv)
        action_loss = functional.clipped_surrogate_loss(log_prob, old_log_prob, adv, self.clip_param)
        value_loss = functional.clipped_value_loss(value, old_value, returns,
                                                   self.clip_param if self.use_clipped_value_loss else None)
        entropy_mean = entropy.mean()
        log_prob_now = log_prob.detach()
        kl = host_float(functional.approx_kl(log_prob_now, old_log_prob))
        skip = self.target_kl is not None and kl > self.target_kl
        if skip:
            self.kl_exceeded = True
        else:
            if lr is not None:
                set_lr(self.optimizer, lr)
            step(self.optimizer, self.value_loss_coef * value_loss + action_loss - self.entropy_coef * entropy_mean)
        result = (host_float(value_loss), host_float(action_loss), host_float(entropy_mean))
        self.last_info = {"train/value_loss": result[0], "train/action_loss": result[1], "train/entropy": result[2],
                          "train/approx_kl": kl,
                          "train/clip_fraction": host_float(functional.clip_fraction(log_prob_now, old_log_prob,
                                                                                     self.clip_param)),
                          "train/kl_exceeded": float(skip)}
        return result

    def get_info(self) -> dict[str, Any]:
        """Diagnostics of the last ``learn`` call (see ``last_info``)."""
        return dict(self.last_info)
