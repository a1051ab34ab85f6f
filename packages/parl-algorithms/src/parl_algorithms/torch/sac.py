"""SAC (Haarnoja et al. 2018, "Soft Actor-Critic Algorithms and Applications") with PARL's API, plus
automatic entropy tuning."""

from __future__ import annotations

import functools
import math

import torch
import torch.nn.functional as F

from parl_algorithms.torch import functional
from parl_algorithms.torch._common import accepts_single_obs, obs_batch, positive, readable_shape_errors, two_q
from parl_algorithms.torch._off_policy import OffPolicyActorCritic
from parl_core.torch import Model
from parl_core.torch.device import DeviceLike, on_device

__all__ = ["SAC"]


def _negative_mean(x: torch.Tensor) -> torch.Tensor:
    return -x.mean()


_HALF_LOG_2PI = 0.5 * math.log(2.0 * math.pi)


class _TanhGaussianSample(torch.autograd.Function):
    """``(tanh(u), log pi(tanh(u)))`` for ``u = mean + exp(log_std) * noise`` as one autograd node.

    The forward computes exactly what ``functional.tanh_gaussian_log_prob`` computes (the same ops in the same
    order, so the same values to the last bit); the backward is the analytic gradient of that function
    (Haarnoja et al. 2018, appendix C). With ``d/du`` of the squashing term ``-log(1 - tanh(u)^2 + eps)`` being
    ``2 tanh(u) (1 - tanh(u)^2) / (1 - tanh(u)^2 + eps)``, and the Gaussian term's dependence on ``mean``
    cancelling through ``u - mean = exp(log_std) * noise``:

        g_mean    = (1 - tanh(u)^2) * (g_action + g_logp * 2 tanh(u) / (1 - tanh(u)^2 + eps))
        g_log_std = g_mean * exp(log_std) * noise - g_logp

    Autograd's graph of the same formula has ~20 forward and ~30 backward nodes on ``[B, act_dim]`` tensors,
    whose per-op cost (not arithmetic) dominates for small action spaces; this node has 4 backward ops. The
    gradients equal autograd's up to float rounding (the cancelling Gaussian terms are not formed).
    """

    @staticmethod
    def values(mean: torch.Tensor, log_std: torch.Tensor, noise: torch.Tensor,
               eps: float) -> tuple[torch.Tensor, ...]:
        """``(action, log_prob, 1 - action^2, exp(log_std) * noise)``, computed without a graph."""
        scaled_noise = log_std.exp() * noise
        pre_tanh = mean + scaled_noise
        action = torch.tanh(pre_tanh)
        # functional.tanh_gaussian_log_prob(pre_tanh, mean, log_std, eps), op for op (in place where it can be)
        var = torch.exp(2.0 * log_std)
        normal_logp = (pre_tanh - mean).pow_(2).neg_().div_(2.0 * var).sub_(log_std).sub_(_HALF_LOG_2PI)
        one_minus_sq = 1.0 - action.pow(2)
        log_prob = normal_logp.sub_(torch.log(one_minus_sq + eps)).sum(-1)
        return action, log_prob, one_minus_sq, scaled_noise

    @staticmethod
    def forward(ctx, mean: torch.Tensor, log_std: torch.Tensor, noise: torch.Tensor,
                eps: float) -> tuple[torch.Tensor, torch.Tensor]:
        action, log_prob, one_minus_sq, scaled_noise = _TanhGaussianSample.values(mean, log_std, noise, eps)
        if ctx.needs_input_grad[0] or ctx.needs_input_grad[1]:
            ctx.save_for_backward(action, one_minus_sq, scaled_noise)
            ctx.eps = eps
        return action, log_prob

    @staticmethod
    def backward(ctx, grad_action: torch.Tensor, grad_log_prob: torch.Tensor):
        action, one_minus_sq, scaled_noise = ctx.saved_tensors
        grad_log_prob = grad_log_prob.unsqueeze(-1)
        squash = (action * 2.0).div_(one_minus_sq + ctx.eps)
        grad_mean = torch.addcmul(grad_action, grad_log_prob, squash).mul_(one_minus_sq)
        grad_log_std = torch.addcmul(grad_log_prob.neg(), grad_mean, scaled_noise)
        return grad_mean, grad_log_std, None, None


class SAC(OffPolicyActorCritic):
    """Soft actor-critic with twin critics and a tanh-squashed Gaussian policy.

    The model must define ``policy(obs) -> (mean, log_std)`` (each float32 ``[B, act_dim]``, log_std
    already clamped, as in PARL's models), ``value(obs, action) -> (Q1, Q2)`` (each ``[B, 1]`` or
    ``[B]``), ``get_actor_params()`` and ``get_critic_params()``. Actions are in ``[-1, 1]``.

    Args:
        model: the actor-critic model; the target is ``copy.deepcopy(model)``.
        gamma: discount in ``[0, 1]``.
        tau: Polyak rate in ``[0, 1]``.
        alpha: entropy temperature (fixed; the initial value with automatic tuning, default 1.0 then).
        actor_lr, critic_lr: Adam learning rates.
        with_automatic_entropy_tuning: learn alpha so that the policy entropy tracks ``target_entropy``
            (Haarnoja et al. 2018, section 5).
        target_entropy: defaults to ``-act_dim``.
        alpha_lr: Adam learning rate of ``log_alpha``; defaults to ``actor_lr``.
        device: ``"cpu"``, ``"cuda"``, ``"cuda:1"`` or a ``torch.device``: where the models, optimizer state and
            every tensor of the algorithm live; default CUDA when available (PARL's rule).

    Attributes:
        alpha: the current temperature (a float).
        log_alpha: 0-d tensor, learned when tuning is on (saved in checkpoints).
        last_info: ``train/critic_loss``, ``train/actor_loss``, ``train/alpha``, ``train/entropy``, ``train/q_mean``.

    Raises:
        ValueError: the model lacks a required method, or a hyperparameter is missing / out of range.
    """

    checkpoint_attrs = ("alpha",)

    def __init__(self, model: Model, gamma: float | None = None, tau: float | None = None,
                 alpha: float | None = None, actor_lr: float | None = None, critic_lr: float | None = None, *,
                 with_automatic_entropy_tuning: bool = False, target_entropy: float | None = None,
                 alpha_lr: float | None = None, device: DeviceLike = None) -> None:
        super().__init__(model, gamma, tau, actor_lr, critic_lr, device=device)
        name = type(self).__name__
        self.with_automatic_entropy_tuning = bool(with_automatic_entropy_tuning)
        if alpha is None and self.with_automatic_entropy_tuning:
            alpha = 1.0
        self.alpha = positive(alpha, "alpha", name, "0.2")
        self.log_alpha = torch.tensor(math.log(self._alpha), device=self.device,
                                      requires_grad=self.with_automatic_entropy_tuning)
        self.target_entropy = None if target_entropy is None else float(target_entropy)
        if self.with_automatic_entropy_tuning:
            # log_alpha is a second parameter group of the actor's optimizer: the actor and temperature
            # losses touch disjoint parameters, so one backward and one (fused) Adam step serve both.
            lr = self.actor_lr if alpha_lr is None else positive(alpha_lr, "alpha_lr", name, "3e-4")
            self.actor_optimizer.add_param_group({"params": [self.log_alpha], "lr": lr})

    @property
    def alpha(self) -> float:
        """The current temperature (with automatic tuning ``exp(log_alpha)``, read from the device on access)."""
        return float(self.log_alpha.detach().exp()) if self.with_automatic_entropy_tuning else self._alpha

    @alpha.setter
    def alpha(self, value: float) -> None:
        self._alpha = float(value)

    def _temperature(self) -> torch.Tensor | float:
        """alpha for the losses: a device tensor when it is learned (no host round trip per step)."""
        return self.log_alpha.detach().exp() if self.with_automatic_entropy_tuning else self._alpha

    @accepts_single_obs
    @on_device
    @readable_shape_errors
    def predict(self, obs: torch.Tensor) -> torch.Tensor:
        """Deterministic action ``tanh(mean)``: float32 ``[B, act_dim]`` for obs ``[B, *obs_shape]``."""
        mean, _ = self._policy(obs_batch(obs, type(self).__name__))
        return torch.tanh(mean)

    def _policy(self, obs: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        out = self.model.policy(obs)
        if not (isinstance(out, (tuple, list)) and len(out) == 2):
            raise ValueError(f"{type(self).__name__} needs model.policy(obs) to return (mean, log_std), each float32 "
                             "[B, act_dim]; SAC is for continuous (Box) action spaces (use DQN / PPO for Discrete)")
        return out[0], out[1].expand_as(out[0])

    def _sample(self, obs: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        mean, log_std = self._policy(obs)
        # tanh(u) and functional.tanh_gaussian_log_prob(u, mean, log_std) of u = mean + exp(log_std) * noise, as
        # one autograd node (same values; see _TanhGaussianSample)
        noise = torch.randn_like(mean)
        if torch.is_grad_enabled() and (mean.requires_grad or log_std.requires_grad):
            return _TanhGaussianSample.apply(mean, log_std, noise, 1e-6)
        return _TanhGaussianSample.values(mean, log_std, noise, 1e-6)[:2]  # no graph: skip Function.apply (~20 us)

    @accepts_single_obs
    @on_device
    @readable_shape_errors
    def sample(self, obs: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """Reparameterised sample of the squashed Gaussian policy.

        Args:
            obs: float32 ``[B, *obs_shape]``.

        Returns:
            ``(action [B, act_dim] in [-1, 1], log_prob [B, 1])`` (PARL's shapes).
        """
        action, log_prob = self._sample(obs_batch(obs, type(self).__name__))
        return action, log_prob.unsqueeze(1)

    def _critic_loss(self, obs, action, reward, next_obs, terminal):
        name = type(self).__name__
        with torch.no_grad():
            next_action, next_log_prob = self._sample(next_obs)
            next_q1, next_q2 = two_q(self.target_model.value(next_obs, next_action), name)
            target = functional.sac_target(reward, next_q1, next_q2, next_log_prob, terminal, self.gamma,
                                           self._temperature())
        q1, q2 = two_q(self.model.value(obs, action), name)
        return F.mse_loss(q1, target) + F.mse_loss(q2, target), q1

    def _actor_loss(self, obs, action):
        new_action, log_prob = self._sample(obs)
        q1, q2 = two_q(self.model.value(obs, new_action), type(self).__name__)
        return (self._temperature() * log_prob - torch.min(q1, q2)).mean(), log_prob

    @on_device
    @readable_shape_errors
    def learn(self, obs: torch.Tensor, action: torch.Tensor, reward: torch.Tensor, next_obs: torch.Tensor,
              terminal: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """One critic step, one actor step, one temperature step (if tuning) and a soft target update.

        Args:
            obs: float32 ``[B, *obs_shape]``.
            action: float32 ``[B, act_dim]`` in ``[-1, 1]``.
            reward: float32 ``[B]`` or ``[B, 1]``.
            next_obs: float32 ``[B, *obs_shape]``.
            terminal: float32 ``[B]`` or ``[B, 1]`` (1 on termination, 0 on truncation).

        Returns:
            ``(critic_loss, actor_loss)`` scalar tensors.
        """
        obs, action, reward, next_obs, terminal = self._batch(obs, action, reward, next_obs, terminal)
        critic_loss, q1 = self._critic_loss(obs, action, reward, next_obs, terminal)
        self.critic_optimizer.zero_grad()
        critic_loss.backward()
        self.critic_optimizer.step()

        with self.frozen_critic():
            actor_loss, log_prob = self._actor_loss(obs, action)
        loss = actor_loss
        if self.with_automatic_entropy_tuning:
            # J(alpha) = E[-alpha * (log pi(a|s) + target_entropy)], on log_alpha (Haarnoja et al. 2018, eq. 18)
            target_entropy = -float(action.shape[1]) if self.target_entropy is None else self.target_entropy
            loss = actor_loss - (self.log_alpha * (log_prob.detach() + target_entropy)).mean()
        self.actor_optimizer.zero_grad()
        loss.backward()
        self.actor_optimizer.step()
        self.sync_target()
        log_prob, q1 = log_prob.detach(), q1.detach()  # (the means are taken only if last_info is read)
        self.last_info = {"train/critic_loss": critic_loss.detach(),
                          "train/actor_loss": actor_loss.detach(),
                          "train/alpha": self._temperature(),
                          "train/entropy": functools.partial(_negative_mean, log_prob),
                          "train/q_mean": functools.partial(torch.mean, q1)}
        return critic_loss, actor_loss
