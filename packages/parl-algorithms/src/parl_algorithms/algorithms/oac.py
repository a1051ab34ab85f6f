"""OAC, Optimistic Actor-Critic (Ciosek, Vuong, Loftin and Hofmann 2019, "Better Exploration with Optimistic
Actor-Critic", NeurIPS), with PARL's ``OAC`` API: SAC's learning, optimistic exploration; written once for torch
and paddle."""

from __future__ import annotations

import math
from typing import Any

from parl_algorithms._validation import nonnegative, positive
from parl_algorithms.algorithms._acting import act
from parl_algorithms.algorithms.sac import SAC

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
        model: the actor-critic model (a ``parl.Model`` of the class's framework); the target is
            ``copy.deepcopy(model)``.
        gamma: discount in ``[0, 1]``.
        tau: Polyak rate in ``[0, 1]``.
        alpha: entropy temperature (the initial one with automatic tuning).
        beta: optimism, the weight of the critics' disagreement ``sigma_Q`` in ``Q_UB`` (>= 0; the
            paper's ``beta_UB``, 4.66 on MuJoCo).
        delta: the KL budget of the shift (> 0; 23.53 on MuJoCo).
        actor_lr, critic_lr: Adam learning rates.
        device: where models, optimizer state and tensors live (README, "Devices"): torch ``"cpu"``, ``"cuda:1"``, a
            ``torch.device`` (default CUDA when available); paddle ``"cpu"``, ``"gpu:1"`` (set process-wide).
        **sac_kwargs: SAC's keyword options (``with_automatic_entropy_tuning``, ...).

    Raises:
        TypeError: the model is not a ``parl.Model`` of the class's framework.
        ValueError: the model lacks a required method, or a hyperparameter is missing / out of range.
    """

    def __init__(self, model: Any, gamma: float | None = None, tau: float | None = None,
                 alpha: float | None = None, beta: float | None = None, delta: float | None = None,
                 actor_lr: float | None = None, critic_lr: float | None = None, *, device: Any = None,
                 **sac_kwargs: Any) -> None:
        super().__init__(model, gamma, tau, alpha, actor_lr, critic_lr, device=device, **sac_kwargs)
        self.beta = nonnegative(beta, "beta", "OAC", "4.66")
        self.delta = positive(delta, "delta", "OAC", "23.53")

    def get_optimistic_exploration_action(self, obs: Any) -> Any:
        """An exploratory action from the optimistically shifted policy.

        Args:
            obs: float32 ``[B, *obs_shape]`` (or one observation ``[obs_dim]``).

        Returns:
            float32 ``[B, act_dim]`` in ``[-1, 1]`` (``[act_dim]`` for one observation), without gradient.

        Raises:
            TypeError: ``obs`` is not numeric.
            ValueError: ``obs`` is 0-d, or the model rejects its shape.
        """
        return act(self, "get_optimistic_exploration_action", obs, self._optimistic_action)

    def _upper_bound(self, obs: Any, pre_tanh_mu: Any) -> Any:
        """``sum_B Q_UB(obs, tanh(pre_tanh_mu))``, the optimistic value whose gradient shifts the mean."""
        q1, q2 = self.ops.two_q(self.model.value(obs, pre_tanh_mu.tanh()), "OAC")
        return ((q1 + q2) / 2.0 + self.beta * (q1 - q2).abs() / 2.0).sum()

    def _optimistic_action(self, obs: Any) -> Any:
        ops = self.ops
        with ops.no_grad():
            mean, log_std = self._policy(obs)
        variance = (2.0 * log_std).exp()
        grad = ops.gradient(lambda pre_tanh_mu: self._upper_bound(obs, pre_tanh_mu), mean)
        with ops.no_grad():
            norm = (grad * grad * variance).sum(-1, keepdim=True).sqrt() + 1e-6
            mu_explore = mean + math.sqrt(2.0 * self.delta) * variance * grad / norm
            return (mu_explore + log_std.exp() * ops.randn_like(mean)).tanh().detach()
