"""DDPG (Lillicrap et al. 2016, "Continuous control with deep reinforcement learning") with PARL's API."""

from __future__ import annotations

import torch
import torch.nn.functional as F

from parl_algorithms.torch import functional
from parl_algorithms.torch._common import flat_q, readable_shape_errors
from parl_algorithms.torch._off_policy import DeterministicActorCritic
from parl_core.torch import Model
from parl_core.torch.device import DeviceLike, on_device

__all__ = ["DDPG"]


class DDPG(DeterministicActorCritic):
    """Deterministic policy gradient with target networks and Polyak averaging.

    The model must define ``policy(obs) -> action`` float32 ``[B, act_dim]`` in ``[-1, 1]`` (tanh; the
    agent rescales to the env's bounds), ``value(obs, action) -> Q`` float32 ``[B, 1]`` or ``[B]``,
    ``get_actor_params()`` and ``get_critic_params()``.

    Args:
        model: the actor-critic model; the target is ``copy.deepcopy(model)``.
        gamma: discount in ``[0, 1]``.
        tau: Polyak rate in ``[0, 1]`` (``target = (1 - tau) * target + tau * model``).
        actor_lr: actor Adam learning rate.
        critic_lr: critic Adam learning rate.
        device: ``"cpu"``, ``"cuda"``, ``"cuda:1"`` or a ``torch.device``: where the models, optimizer state and
            every tensor of the algorithm live; default CUDA when available (PARL's rule).

    Raises:
        ValueError: the model lacks a required method, or a hyperparameter is missing / out of range.
    """

    def __init__(self, model: Model, gamma: float | None = None, tau: float | None = None,
                 actor_lr: float | None = None, critic_lr: float | None = None, *, device: DeviceLike = None) -> None:
        super().__init__(model, gamma, tau, actor_lr, critic_lr, device=device)

    @on_device
    @readable_shape_errors
    def learn(self, obs: torch.Tensor, action: torch.Tensor, reward: torch.Tensor, next_obs: torch.Tensor,
              terminal: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """One critic step, one actor step, then a soft target update.

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
        with torch.no_grad():
            next_q = flat_q(self.target_model.value(next_obs, self.target_model.policy(next_obs)), "DDPG")
            target = functional.td_target(reward, next_q, terminal, self.gamma)
        q = flat_q(self.model.value(obs, action), "DDPG")
        critic_loss = F.mse_loss(q, target)
        self.critic_optimizer.zero_grad()
        critic_loss.backward()
        self.critic_optimizer.step()

        with self.frozen_critic():
            actor_loss = -flat_q(self.model.value(obs, self.model.policy(obs)), "DDPG").mean()
        self.actor_optimizer.zero_grad()
        actor_loss.backward()
        self.actor_optimizer.step()
        self.sync_target()
        self.last_info = {"train/critic_loss": critic_loss.detach(),
                          "train/actor_loss": actor_loss.detach(),
                          "train/q_mean": q.detach().mean()}
        return critic_loss, actor_loss
