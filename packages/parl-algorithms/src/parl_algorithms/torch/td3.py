"""TD3 (Fujimoto et al. 2018, "Addressing Function Approximation Error in Actor-Critic Methods") with
PARL's API: twin critics, target policy smoothing, delayed policy updates."""

from __future__ import annotations

import functools

import torch
import torch.nn.functional as F

from parl_algorithms.torch import functional
from parl_algorithms.torch._common import flat_q, positive, readable_shape_errors, two_q
from parl_algorithms.torch._off_policy import DeterministicActorCritic
from parl_core.torch import Model
from parl_core.torch.device import DeviceLike, on_device

__all__ = ["TD3"]


class TD3(DeterministicActorCritic):
    """Twin Delayed DDPG.

    The model must define ``policy(obs) -> action`` float32 ``[B, act_dim]`` in ``[-1, 1]``,
    ``value(obs, action) -> (Q1, Q2)`` (each ``[B, 1]`` or ``[B]``), ``Q1(obs, action) -> Q1``,
    ``get_actor_params()`` and ``get_critic_params()``.

    Args:
        model: the actor-critic model; the target is ``copy.deepcopy(model)``.
        gamma: discount in ``[0, 1]``.
        tau: Polyak rate in ``[0, 1]``.
        actor_lr, critic_lr: Adam learning rates.
        policy_noise: std of the target-policy smoothing noise (in normalised action units).
        noise_clip: clip of that noise.
        policy_freq: one actor / target update every ``policy_freq`` critic updates.
        device: ``"cpu"``, ``"cuda"``, ``"cuda:1"`` or a ``torch.device``: where the models, optimizer state and
            every tensor of the algorithm live; default CUDA when available (PARL's rule).

    Attributes:
        total_it: number of ``learn`` calls (saved in checkpoints, so a restored agent keeps the delay phase).

    Raises:
        ValueError: the model lacks a required method, or a hyperparameter is missing / out of range.
    """

    required_methods = ("value", "policy", "Q1", "get_actor_params", "get_critic_params")
    checkpoint_attrs = ("total_it",)  # _last_actor_loss, a tensor, is checkpointed as one

    def __init__(self, model: Model, gamma: float | None = None, tau: float | None = None,
                 actor_lr: float | None = None, critic_lr: float | None = None, policy_noise: float = 0.2,
                 noise_clip: float = 0.5, policy_freq: int = 2, *, device: DeviceLike = None) -> None:
        super().__init__(model, gamma, tau, actor_lr, critic_lr, device=device)
        if policy_noise < 0 or noise_clip < 0:
            raise ValueError(f"TD3: policy_noise ({policy_noise}) and noise_clip ({noise_clip}) must be >= 0")
        self.policy_noise = float(policy_noise)
        self.noise_clip = float(noise_clip)
        if not isinstance(policy_freq, int) or policy_freq < 1:
            raise ValueError(f"TD3: policy_freq must be an int >= 1, got {policy_freq!r}")
        self.policy_freq = policy_freq
        positive(self.policy_freq, "policy_freq", "TD3", "2")
        self.total_it = 0
        self._last_actor_loss = torch.zeros((), device=self.device)

    @on_device
    @readable_shape_errors
    def learn(self, obs: torch.Tensor, action: torch.Tensor, reward: torch.Tensor, next_obs: torch.Tensor,
              terminal: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """One critic step; every ``policy_freq`` calls also an actor step and a soft target update.

        Args:
            obs: float32 ``[B, *obs_shape]``.
            action: float32 ``[B, act_dim]`` in ``[-1, 1]``.
            reward: float32 ``[B]`` or ``[B, 1]``.
            next_obs: float32 ``[B, *obs_shape]``.
            terminal: float32 ``[B]`` or ``[B, 1]``.

        Returns:
            ``(critic_loss, actor_loss)``: tensors; ``actor_loss`` is the last actor update's loss.
        """
        obs, action, reward, next_obs, terminal = self._batch(obs, action, reward, next_obs, terminal)
        self.total_it += 1
        with torch.no_grad():
            next_action = functional.target_policy_smoothing(self.target_model.policy(next_obs), self.policy_noise,
                                                             self.noise_clip)
            next_q1, next_q2 = two_q(self.target_model.value(next_obs, next_action), "TD3")
            target = functional.clipped_double_q_target(reward, next_q1, next_q2, terminal, self.gamma)
        q1, q2 = two_q(self.model.value(obs, action), "TD3")
        critic_loss = F.mse_loss(q1, target) + F.mse_loss(q2, target)
        self.critic_optimizer.zero_grad()
        critic_loss.backward()
        self.critic_optimizer.step()

        actor_loss = self._last_actor_loss
        if self.total_it % self.policy_freq == 0:
            with self.frozen_critic():
                actor_loss = -flat_q(self.model.Q1(obs, self.model.policy(obs)), "TD3").mean()
            self.actor_optimizer.zero_grad()
            actor_loss.backward()
            self.actor_optimizer.step()
            self.sync_target()
            self._last_actor_loss = actor_loss.detach()
        self.last_info = {"train/critic_loss": critic_loss.detach(), "train/actor_loss": self._last_actor_loss,
                          "train/q_mean": functools.partial(torch.mean, q1.detach())}  # (mean taken when read)
        return critic_loss, actor_loss
