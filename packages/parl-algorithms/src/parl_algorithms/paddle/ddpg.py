"""DDPG (Lillicrap et al. 2016, "Continuous control with deep reinforcement learning") on PaddlePaddle,
with PARL's paddle API."""

from __future__ import annotations

import paddle
import paddle.nn.functional as F

from parl_algorithms.paddle import functional
from parl_algorithms.paddle._common import flat_q, host_float, readable_shape_errors, step
from parl_algorithms.paddle._off_policy import DeterministicActorCritic
from parl_core.paddle import Model

__all__ = ["DDPG"]


class DDPG(DeterministicActorCritic):
    """Deterministic policy gradient with target networks and Polyak averaging (same math as the torch DDPG).

    The model must define ``policy(obs) -> action`` float32 ``[B, act_dim]`` in ``[-1, 1]``,
    ``value(obs, action) -> Q`` float32 ``[B, 1]`` or ``[B]``, ``get_actor_params()`` and
    ``get_critic_params()``.

    Args:
        model: the actor-critic model (a ``parl_core.paddle.Model``); the target is ``copy.deepcopy(model)``.
        gamma: discount in ``[0, 1]``.
        tau: Polyak rate in ``[0, 1]`` (``target = (1 - tau) * target + tau * model``).
        actor_lr, critic_lr: Adam learning rates.
        device: ``"cpu"``, ``"gpu"``, ``"gpu:1"`` (or ``"cuda"``): paddle's device for this algorithm (set
            process-wide with ``paddle.set_device``); default paddle's own (the GPU in a CUDA build).

    Raises:
        TypeError: the model is not a paddle ``parl.Model``.
        ValueError: the model lacks a required method, or a hyperparameter is missing / out of range.
    """

    def __init__(self, model: Model, gamma: float | None = None, tau: float | None = None,
                 actor_lr: float | None = None, critic_lr: float | None = None, *, device: str | None = None) -> None:
        super().__init__(model, gamma, tau, actor_lr, critic_lr, device=device)

    @readable_shape_errors
    def learn(self, obs: paddle.Tensor, action: paddle.Tensor, reward: paddle.Tensor, next_obs: paddle.Tensor,
              terminal: paddle.Tensor) -> tuple[paddle.Tensor, paddle.Tensor]:
        """One critic step, one actor step, then a soft target update.

        Args:
            obs: float32 ``[B, *obs_shape]``; action: float32 ``[B, act_dim]`` in ``[-1, 1]``;
            reward, terminal: float32 ``[B]`` or ``[B, 1]``; next_obs: float32 ``[B, *obs_shape]``.

        Returns:
            ``(critic_loss, actor_loss)`` scalar tensors (PARL's return).
        """
        obs, action, reward, next_obs, terminal = self._batch(obs, action, reward, next_obs, terminal)
        with paddle.no_grad():
            next_q = flat_q(self.target_model.value(next_obs, self.target_model.policy(next_obs)), "DDPG")
            target = functional.td_target(reward, next_q, terminal, self.gamma)
        q = flat_q(self.model.value(obs, action), "DDPG")
        critic_loss = F.mse_loss(q, target)
        step(self.critic_optimizer, critic_loss)
        with self.frozen_critic():
            actor_loss = -flat_q(self.model.value(obs, self.model.policy(obs)), "DDPG").mean()
        step(self.actor_optimizer, actor_loss)
        self.sync_target()
        self.last_info = {"train/critic_loss": host_float(critic_loss), "train/actor_loss": host_float(actor_loss),
                          "train/q_mean": host_float(q.detach().mean())}
        return critic_loss, actor_loss
