"""SAC (Haarnoja et al. 2018, "Soft Actor-Critic Algorithms and Applications") on PaddlePaddle with PARL's
paddle API, plus automatic entropy tuning."""

from __future__ import annotations

import math

import paddle
import paddle.nn.functional as F

from parl_algorithms.paddle import functional
from parl_algorithms.paddle._common import (
    accepts_single_obs,
    adam,
    host_float,
    obs_batch,
    positive,
    readable_shape_errors,
    rewrite_shape_error,
    step,
    two_q,
)
from parl_algorithms.paddle._off_policy import OffPolicyActorCritic
from parl_core.paddle import Model

__all__ = ["SAC"]


def _tanh_gaussian_values(mean: paddle.Tensor, log_std: paddle.Tensor, noise: paddle.Tensor,
                          eps: float) -> tuple[paddle.Tensor, paddle.Tensor, paddle.Tensor]:
    """``(action, log_prob, exp(log_std) * noise)`` for ``u = mean + exp(log_std) * noise``: the same ops in the
    same order as ``tanh(u)`` and ``functional.tanh_gaussian_log_prob(u, mean, log_std)``."""
    scaled_noise = log_std.exp() * noise
    pre_tanh = mean + scaled_noise
    action = paddle.tanh(pre_tanh)
    return action, functional.tanh_gaussian_log_prob(pre_tanh, mean, log_std, eps), scaled_noise


class _TanhGaussianSample(paddle.autograd.PyLayer):
    """``(tanh(u), log pi(tanh(u)))`` for ``u = mean + exp(log_std) * noise`` as one autograd node: the paddle twin
    of the torch SAC's ``_TanhGaussianSample`` (see its docstring for the gradient, Haarnoja et al. 2018, appendix
    C). Same values to the last bit as the autograd formula; gradients equal to rounding. Autograd's graph of the
    formula has ~20 forward and ~30 backward nodes, whose per-op cost dominates for small action spaces: forward
    and backward 585 -> 304 us at batch 256 (benchmarks/README.md, P2 fourth pass)."""

    @staticmethod
    def forward(ctx, mean, log_std, noise, eps):
        action, log_prob, scaled_noise = _tanh_gaussian_values(mean, log_std, noise, eps)
        ctx.save_for_backward(action, 1.0 - action.pow(2), scaled_noise)
        ctx.eps = eps
        ctx.needs_grad = (not mean.stop_gradient, not log_std.stop_gradient)  # paddle wants None for the others
        return action, log_prob

    @staticmethod
    def backward(ctx, grad_action, grad_log_prob):
        action, one_minus_sq, scaled_noise = ctx.saved_tensor()
        grad_log_prob = grad_log_prob.unsqueeze(-1)
        squash = (action * 2.0) / (one_minus_sq + ctx.eps)
        grad_mean = (grad_action + grad_log_prob * squash) * one_minus_sq
        grad_log_std = grad_mean * scaled_noise - grad_log_prob if ctx.needs_grad[1] else None
        return grad_mean if ctx.needs_grad[0] else None, grad_log_std, None


class SAC(OffPolicyActorCritic):
    """Soft actor-critic with twin critics and a tanh-squashed Gaussian policy (same math as the torch SAC).

    The model must define ``policy(obs) -> (mean, log_std)`` (each float32 ``[B, act_dim]``, log_std
    already clamped), ``value(obs, action) -> (Q1, Q2)`` (each ``[B, 1]`` or ``[B]``),
    ``get_actor_params()`` and ``get_critic_params()``. Actions are in ``[-1, 1]``.

    Args:
        model: the actor-critic model (a ``parl_core.paddle.Model``); the target is ``copy.deepcopy(model)``.
        gamma: discount in ``[0, 1]``.
        tau: Polyak rate in ``[0, 1]``.
        alpha: entropy temperature (fixed; the initial value with automatic tuning, default 1.0 then).
        actor_lr, critic_lr: Adam learning rates.
        with_automatic_entropy_tuning: learn alpha so that the policy entropy tracks ``target_entropy``.
        target_entropy: defaults to ``-act_dim``.
        alpha_lr: Adam learning rate of ``log_alpha``; defaults to ``actor_lr``.
        device: ``"cpu"``, ``"gpu"``, ``"gpu:1"`` (or ``"cuda"``): paddle's device for this algorithm (set
            process-wide with ``paddle.set_device``); default paddle's own (the GPU in a CUDA build).

    Attributes:
        alpha: the current temperature (a float).
        log_alpha: float32 ``[]`` tensor, learned when tuning is on (saved in checkpoints).

    Raises:
        TypeError: the model is not a paddle ``parl.Model``.
        ValueError: the model lacks a required method, or a hyperparameter is missing / out of range.
    """

    checkpoint_attrs = ("alpha",)

    def __init__(self, model: Model, gamma: float | None = None, tau: float | None = None,
                 alpha: float | None = None, actor_lr: float | None = None, critic_lr: float | None = None, *,
                 with_automatic_entropy_tuning: bool = False, target_entropy: float | None = None,
                 alpha_lr: float | None = None, device: str | None = None) -> None:
        super().__init__(model, gamma, tau, actor_lr, critic_lr, device=device)
        name = type(self).__name__
        self.with_automatic_entropy_tuning = bool(with_automatic_entropy_tuning)
        if alpha is None and self.with_automatic_entropy_tuning:
            alpha = 1.0
        self.alpha = positive(alpha, "alpha", name, "0.2")
        self.log_alpha = paddle.to_tensor(math.log(self.alpha), dtype="float32",
                                          stop_gradient=not self.with_automatic_entropy_tuning)
        self.target_entropy = None if target_entropy is None else float(target_entropy)
        if self.with_automatic_entropy_tuning:
            lr = self.actor_lr if alpha_lr is None else positive(alpha_lr, "alpha_lr", name, "3e-4")
            self.alpha_optimizer = adam([self.log_alpha], lr=lr)

    @accepts_single_obs
    @readable_shape_errors
    def predict(self, obs: paddle.Tensor) -> paddle.Tensor:
        """Deterministic action ``tanh(mean)``: float32 ``[B, act_dim]`` for obs ``[B, *obs_shape]`` (``[act_dim]``
        for one observation ``[obs_dim]``, as the torch SAC and PARL)."""
        mean, _ = self._policy(obs_batch(obs, type(self).__name__))
        return paddle.tanh(mean)

    def _policy(self, obs: paddle.Tensor) -> tuple[paddle.Tensor, paddle.Tensor]:
        out = self.model.policy(obs)
        if not (isinstance(out, (tuple, list)) and len(out) == 2):
            raise ValueError(f"{type(self).__name__} needs model.policy(obs) to return (mean, log_std), each float32 "
                             "[B, act_dim]; SAC is for continuous (Box) action spaces (use DQN / PPO for Discrete)")
        mean, log_std = out
        return mean, (log_std if log_std.shape == mean.shape else log_std.expand_as(mean))

    def _sample(self, obs: paddle.Tensor) -> tuple[paddle.Tensor, paddle.Tensor]:
        mean, log_std = self._policy(obs)
        noise = paddle.randn(mean.shape, dtype=mean.dtype)
        if mean.stop_gradient and log_std.stop_gradient:  # no graph (acting, the target's next action)
            return _tanh_gaussian_values(mean, log_std, noise, 1e-6)[:2]
        return _TanhGaussianSample.apply(mean, log_std, noise, 1e-6)  # one autograd node, same values

    def sample(self, obs: paddle.Tensor) -> tuple[paddle.Tensor, paddle.Tensor]:
        """Reparameterised sample: ``(action [B, act_dim] in [-1, 1], log_prob [B, 1])`` for obs ``[B, ...]``."""
        try:  # (not @readable_shape_errors: see rewrite_shape_error)
            action, log_prob = self._sample(obs_batch(obs, type(self).__name__))
        except (ValueError, RuntimeError) as err:
            rewrite_shape_error(self, "sample", err, (obs,))
            raise
        return action, log_prob.unsqueeze(1)

    def _critic_loss(self, obs, action, reward, next_obs, terminal):
        name = type(self).__name__
        with paddle.no_grad():
            next_action, next_log_prob = self._sample(next_obs)
            next_q1, next_q2 = two_q(self.target_model.value(next_obs, next_action), name)
            target = functional.sac_target(reward, next_q1, next_q2, next_log_prob, terminal, self.gamma, self.alpha)
        q1, q2 = two_q(self.model.value(obs, action), name)
        return F.mse_loss(q1, target) + F.mse_loss(q2, target), q1

    def _actor_loss(self, obs, action):
        new_action, log_prob = self._sample(obs)
        q1, q2 = two_q(self.model.value(obs, new_action), type(self).__name__)
        return (self.alpha * log_prob - paddle.minimum(q1, q2)).mean(), log_prob

    @readable_shape_errors
    def learn(self, obs: paddle.Tensor, action: paddle.Tensor, reward: paddle.Tensor, next_obs: paddle.Tensor,
              terminal: paddle.Tensor) -> tuple[paddle.Tensor, paddle.Tensor]:
        """One critic step, one actor step, one temperature step (if tuning) and a soft target update.

        Args:
            obs: float32 ``[B, *obs_shape]``; action: float32 ``[B, act_dim]`` in ``[-1, 1]``;
            reward, terminal: float32 ``[B]`` or ``[B, 1]``; next_obs: float32 ``[B, *obs_shape]``.

        Returns:
            ``(critic_loss, actor_loss)`` scalar tensors (PARL's return).
        """
        obs, action, reward, next_obs, terminal = self._batch(obs, action, reward, next_obs, terminal)
        critic_loss, q1 = self._critic_loss(obs, action, reward, next_obs, terminal)
        step(self.critic_optimizer, critic_loss)
        with self.frozen_critic():
            actor_loss, log_prob = self._actor_loss(obs, action)
        step(self.actor_optimizer, actor_loss)
        if self.with_automatic_entropy_tuning:
            # J(alpha) = E[-alpha * (log pi(a|s) + target_entropy)], on log_alpha (Haarnoja et al. 2018, eq. 18)
            target_entropy = -float(action.shape[1]) if self.target_entropy is None else self.target_entropy
            step(self.alpha_optimizer, -(self.log_alpha * (log_prob.detach() + target_entropy)).mean())
            self.alpha = host_float(self.log_alpha.exp())
        self.sync_target()
        self.last_info = {"train/critic_loss": host_float(critic_loss), "train/actor_loss": host_float(actor_loss),
                          "train/alpha": self.alpha, "train/entropy": host_float(-log_prob.detach().mean()),
                          "train/q_mean": host_float(q1.detach().mean())}
        return critic_loss, actor_loss
