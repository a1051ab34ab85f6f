"""OAC, Optimistic Actor-Critic (Ciosek, Vuong, Loftin and Hofmann 2019, "Better Exploration with
Optimistic Actor-Critic", NeurIPS), with PARL's ``OAC`` API: SAC's learning, optimistic exploration."""

from __future__ import annotations

import math

import torch

from parl_algorithms._validation import nonnegative
from parl_algorithms.torch._common import (
    accepts_single_obs,
    obs_batch,
    positive,
    readable_shape_errors,
    two_q,
)
from parl_algorithms.torch.sac import SAC
from parl_core.torch import Model
from parl_core.torch.device import DeviceLike, on_device

__all__ = ["OAC"]


class OAC(SAC):
    """Soft actor-critic that explores with an optimistic shift of the policy mean.

    Learning (``learn``) is SAC's. Exploration (:meth:`get_optimistic_exploration_action`) follows the
    paper's section 4: the upper bound ``Q_UB = mean(Q1, Q2) + beta * |Q1 - Q2| / 2`` is linearised at
    the pre-tanh policy mean ``mu_T``, and the exploration Gaussian is ``N(mu_E, Sigma_T)`` with

        ``mu_E = mu_T + sqrt(2 delta) * Sigma_T grad / ||grad||_Sigma_T``   (eq. 12, per observation)

    so its KL divergence from the policy is ``delta``. (PARL linearised at a sample of the policy and
    normalised the gradient over the whole batch; this is the paper's rule.)

    The model is SAC's: ``policy(obs) -> (mean, log_std)``, ``value(obs, action) -> (Q1, Q2)``,
    ``get_actor_params()``, ``get_critic_params()``; actions are in ``[-1, 1]``.

    Args:
        model: the actor-critic model; the target is ``copy.deepcopy(model)``.
        gamma: discount in ``[0, 1]``.
        tau: Polyak rate in ``[0, 1]``.
        alpha: entropy temperature (the initial one with automatic tuning).
        beta: optimism, the weight of the critics' disagreement ``sigma_Q`` in ``Q_UB`` (>= 0; the
            paper's ``beta_UB``, 4.66 on MuJoCo).
        delta: the KL budget of the shift (> 0; 23.53 on MuJoCo).
        actor_lr, critic_lr: Adam learning rates.
        device: ``"cpu"``, ``"cuda"``, ``"cuda:1"`` or a ``torch.device``: where the models, optimizer state and
            every tensor of the algorithm live; default CUDA when available (PARL's rule).
        **sac_kwargs: SAC's keyword options (``with_automatic_entropy_tuning``, ...).

    Raises:
        ValueError: the model lacks a required method, or a hyperparameter is missing / out of range.
    """

    def __init__(self, model: Model, gamma: float | None = None, tau: float | None = None,
                 alpha: float | None = None, beta: float | None = None, delta: float | None = None,
                 actor_lr: float | None = None, critic_lr: float | None = None, *, device: DeviceLike = None,
                 **sac_kwargs) -> None:
        super().__init__(model, gamma, tau, alpha, actor_lr, critic_lr, device=device, **sac_kwargs)
        self.beta = nonnegative(beta, "beta", "OAC", "4.66")
        self.delta = positive(delta, "delta", "OAC", "23.53")

    @accepts_single_obs
    @on_device
    @readable_shape_errors
    def get_optimistic_exploration_action(self, obs: torch.Tensor) -> torch.Tensor:
        """An exploratory action from the optimistically shifted policy.

        Args:
            obs: float32 ``[B, *obs_shape]`` (or one observation ``[obs_dim]``).

        Returns:
            float32 ``[B, act_dim]`` in ``[-1, 1]``, without gradient.
        """
        obs = obs_batch(obs, "OAC")
        with torch.no_grad():
            mean, log_std = self._policy(obs)
        variance = torch.exp(2.0 * log_std)
        with torch.enable_grad():
            pre_tanh_mu = mean.detach().requires_grad_(True)
            q1, q2 = two_q(self.model.value(obs, torch.tanh(pre_tanh_mu)), "OAC")
            q_upper = (q1 + q2) / 2.0 + self.beta * torch.abs(q1 - q2) / 2.0
            (grad,) = torch.autograd.grad(q_upper.sum(), pre_tanh_mu)
        norm = torch.sqrt(torch.sum(grad * grad * variance, dim=-1, keepdim=True)) + 1e-6
        mu_explore = mean + math.sqrt(2.0 * self.delta) * variance * grad / norm
        return torch.tanh(mu_explore + log_std.exp() * torch.randn_like(mean)).detach()
