"""IQL, Implicit Q-Learning (Kostrikov, Nair and Levine 2021, "Offline Reinforcement Learning with
Implicit Q-Learning", ICLR 2022), with PARL's ``IQL`` API."""

from __future__ import annotations

import copy

import torch
import torch.nn.functional as F

from parl_algorithms._checks import iql_hyperparameters
from parl_algorithms._validation import check_model_method
from parl_algorithms.torch import functional
from parl_algorithms.torch._common import (
    LazyInfo,
    accepts_single_obs,
    adam,
    column,
    continuous_actions,
    flat_q,
    obs_batch,
    readable_shape_errors,
    two_q,
)
from parl_core.torch import Algorithm, Model
from parl_core.torch.device import DeviceLike, on_device

__all__ = ["IQL", "expectile_loss"]

EXP_ADV_MAX = 100.0  # the paper's clip of the advantage weight exp(beta * A)


def expectile_loss(diff: torch.Tensor, tau: float) -> torch.Tensor:
    """Mean of the asymmetric squared loss ``|tau - 1(diff < 0)| * diff^2`` (the paper's ``L_2^tau``, eq. 5).

    Args:
        diff: float32 ``[B]``, ``Q(s, a) - V(s)``.
        tau: the expectile in ``(0, 1)``; 0.5 is the mean squared error / 2.

    Returns:
        the scalar loss.
    """
    weight = torch.abs(tau - (diff < 0).float())
    return torch.mean(weight * diff * diff)


class IQL(LazyInfo, Algorithm):
    """Implicit Q-learning: in-sample value learning by expectile regression, and advantage-weighted
    behaviour cloning for the policy (offline; no action outside the dataset is ever evaluated).

    Per batch (section 4 of the paper):

    - ``V``: ``L_2^tau(min(Q1', Q2')(s, a) - V(s))`` with the target critics,
    - ``Q``: ``(r + discount * (1 - terminal) * V(s') - Q_i(s, a))^2`` for both critics,
    - policy: ``-exp(beta * (min Q' - V)).clip(max=100) * log pi(a | s)``, its learning rate cosine-
      annealed to 0 over ``max_steps`` (as the paper's reference code; PARL accepted ``max_steps``
      without using it),
    - target critics: Polyak averaging with rate ``alpha``.

    The model must define ``policy(obs)`` -> a ``torch.distributions.Distribution`` over actions (as
    PARL's IQL model) or ``(mean, log_std)`` of a diagonal Gaussian (each float32 ``[B, act_dim]``);
    ``qvalue(obs, action)`` -> ``(Q1, Q2)`` (each ``[B, 1]`` or ``[B]``); ``value(obs)`` -> ``[B, 1]`` or
    ``[B]``; ``get_actor_params()``, ``get_critic_params()``, ``get_value_params()``.

    Args:
        model: the model; the target critics are ``copy.deepcopy(model)`` (PARL's ``q_target``).
        max_steps: the number of ``learn`` calls planned (the policy learning rate's cosine period).
        lr: Adam learning rate of the value, critics and policy.
        tau: the expectile of the value loss, in ``(0, 1)`` (0.7 on MuJoCo).
        beta: the inverse temperature of the advantage weights (>= 0; 3 on MuJoCo).
        discount: the discount factor in ``[0, 1]``.
        alpha: the Polyak rate of the target critics in ``[0, 1]``.
        device: ``"cpu"``, ``"cuda"``, ``"cuda:1"`` or a ``torch.device``: where the models, optimizer state and
            every tensor of the algorithm live; default CUDA when available (PARL's rule).

    Attributes:
        last_info: ``train/q_loss``, ``train/v_loss``, ``train/policy_loss``, ``train/adv_mean``.

    Raises:
        ValueError: the model lacks a required method, or a hyperparameter is missing / out of range.
    """

    def __init__(self, model: Model, max_steps: int | None = None, lr: float = 3e-4, tau: float = 0.7,
                 beta: float = 3.0, discount: float = 0.99, alpha: float = 0.005, *, device: DeviceLike = None) -> None:
        super().__init__(model, device=device)
        for method in ("value", "policy", "qvalue", "get_actor_params", "get_critic_params", "get_value_params"):
            check_model_method(model, method, "IQL")
        checked = iql_hyperparameters(max_steps, tau, beta, lr, discount, alpha)
        self.max_steps, self.tau, self.beta = checked["max_steps"], checked["tau"], checked["beta"]
        self.lr, self.discount, self.alpha = checked["lr"], checked["discount"], checked["alpha"]
        self.q_target = copy.deepcopy(model)
        for param in self.q_target.parameters():
            param.requires_grad_(False)
        self.v_optimizer = adam(list(model.get_value_params()), lr=self.lr)
        self.q_optimizer = adam(list(model.get_critic_params()), lr=self.lr)
        self.policy_optimizer = adam(list(model.get_actor_params()), lr=self.lr)
        self.policy_lr_schedule = torch.optim.lr_scheduler.CosineAnnealingLR(self.policy_optimizer, max_steps)
        self.last_info: dict[str, float] = {}

    def _log_prob_and_mean(self, obs: torch.Tensor, action: torch.Tensor | None):
        out = self.model.policy(obs)
        if isinstance(out, torch.distributions.Distribution):
            log_prob = None if action is None else out.log_prob(action)
            if log_prob is not None and log_prob.ndim == 2:  # an Independent-less Normal: sum the dimensions
                log_prob = log_prob.sum(-1)
            return log_prob, out.mean
        if not (isinstance(out, (tuple, list)) and len(out) == 2):
            raise ValueError("IQL needs model.policy(obs) to return a torch.distributions.Distribution or "
                             f"(mean, log_std), got {type(out).__name__}")
        mean, log_std = out[0], out[1].expand_as(out[0])
        if action is None:
            return None, mean
        # the closed form, not torch.distributions.Normal: its argument validation costs 3 device syncs per step
        return functional.gaussian_log_prob_entropy(mean, log_std, action)[0], mean

    @accepts_single_obs
    @on_device
    @readable_shape_errors
    def predict(self, obs: torch.Tensor) -> torch.Tensor:
        """The policy's mean action: float32 ``[B, act_dim]`` for obs ``[B, *obs_shape]``."""
        return self._log_prob_and_mean(obs_batch(obs, "IQL"), None)[1]

    @on_device
    @readable_shape_errors
    def learn(self, obs: torch.Tensor, action: torch.Tensor, reward: torch.Tensor, next_obs: torch.Tensor,
              terminal: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """One step on the value, the critics and the policy, then the target critics' Polyak update.

        Args:
            obs: float32 ``[B, *obs_shape]``.
            action: float32 ``[B, act_dim]`` (the dataset's actions).
            reward: float32 ``[B]`` or ``[B, 1]``.
            next_obs: float32 ``[B, *obs_shape]``.
            terminal: float32 / bool ``[B]`` or ``[B, 1]``: 1 if the episode terminated (not truncated).

        Returns:
            ``(q_loss, v_loss, policy_loss)``, detached scalar tensors (PARL's ``update`` return).
        """
        obs, next_obs = obs_batch(obs, "IQL"), obs_batch(next_obs, "IQL")
        batch = obs.shape[0]
        action = continuous_actions(action, batch, None, "IQL")
        reward, terminal = column(reward, "reward", batch, "IQL"), column(terminal, "terminal", batch, "IQL")
        with torch.no_grad():
            target_q = torch.min(*two_q(self.q_target.qvalue(obs, action), "IQL"))
            next_v = flat_q(self.model.value(next_obs), "IQL")
        v = flat_q(self.model.value(obs), "IQL")
        adv = target_q - v
        v_loss = expectile_loss(adv, self.tau)
        q1, q2 = two_q(self.model.qvalue(obs, action), "IQL")
        target = functional.td_target(reward, next_v, terminal, self.discount)
        q_loss = F.mse_loss(q1, target) + F.mse_loss(q2, target)
        weight = torch.exp(self.beta * adv.detach()).clamp(max=EXP_ADV_MAX)
        log_prob, _ = self._log_prob_and_mean(obs, action)
        policy_loss = torch.mean(weight * -log_prob)
        for optimizer, loss in ((self.q_optimizer, q_loss), (self.v_optimizer, v_loss),
                                (self.policy_optimizer, policy_loss)):
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
        self.policy_lr_schedule.step()
        self.sync_target(alpha=self.alpha)
        self.last_info = {"train/q_loss": q_loss.detach(), "train/v_loss": v_loss.detach(),
                          "train/policy_loss": policy_loss.detach(), "train/adv_mean": adv.detach().mean()}
        return q_loss.detach(), v_loss.detach(), policy_loss.detach()

    update = learn  # PARL's name

    def sync_target(self, alpha: float = 0.0) -> None:
        """``q_target = alpha * model + (1 - alpha) * q_target`` (``alpha=1`` copies)."""
        functional.soft_update_(self.q_target.parameters(), self.model.parameters(), alpha)

    def get_info(self) -> dict[str, float]:
        """Diagnostics of the last ``learn`` call (see ``last_info``)."""
        return dict(self.last_info)
