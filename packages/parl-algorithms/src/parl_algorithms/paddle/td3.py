"""TD3 (Fujimoto et al. 2018, "Addressing Function Approximation Error in Actor-Critic Methods") on
PaddlePaddle, with PARL's paddle API: twin critics, target policy smoothing, delayed policy updates."""

from __future__ import annotations

import paddle
import paddle.nn.functional as F

from parl_algorithms.paddle import functional
from parl_algorithms.paddle._common import flat_q, host_float, readable_shape_errors, step, two_q
from parl_algorithms.paddle._off_policy import DeterministicActorCritic
from parl_core.paddle import Model

__all__ = ["TD3"]


class TD3(DeterministicActorCritic):
    """Twin Delayed DDPG (same math as the torch TD3).

    The model must define ``policy(obs) -> action`` float32 ``[B, act_dim]`` in ``[-1, 1]``,
    ``value(obs, action) -> (Q1, Q2)`` (each ``[B, 1]`` or ``[B]``), ``Q1(obs, action)``,
    ``get_actor_params()`` and ``get_critic_params()``.

    Args:
        model: the actor-critic model (a ``parl_core.paddle.Model``); the target is ``copy.deepcopy(model)``.
        gamma: discount in ``[0, 1]``.
        tau: Polyak rate in ``[0, 1]``.
        actor_lr, critic_lr: Adam learning rates.
        policy_noise: std of the target-policy smoothing noise (in normalised action units).
        noise_clip: clip of that noise.
        policy_freq: one actor / target update every ``policy_freq`` critic updates.
        device: ``"cpu"``, ``"gpu"``, ``"gpu:1"`` (or ``"cuda"``): paddle's device for this algorithm (set
            process-wide with ``paddle.set_device``); default paddle's own (the GPU in a CUDA build).

    Attributes:
        total_it: number of ``learn`` calls (saved in checkpoints).

    Raises:
        TypeError: the model is not a paddle ``parl.Model``.
        ValueError: the model lacks a required method, or a hyperparameter is missing / out of range.
    """

    required_methods = ("value", "policy", "Q1", "get_actor_params", "get_critic_params")
    checkpoint_attrs = ("total_it", "_last_actor_loss")

    def __init__(self, model: Model, gamma: float | None = None, tau: float | None = None,
                 actor_lr: float | None = None, critic_lr: float | None = None, policy_noise: float = 0.2,
                 noise_clip: float = 0.5, policy_freq: int = 2, *, device: str | None = None) -> None:
        super().__init__(model, gamma, tau, actor_lr, critic_lr, device=device)
        if policy_noise < 0 or noise_clip < 0:
            raise ValueError(f"TD3: policy_noise ({policy_noise}) and noise_clip ({noise_clip}) must be >= 0")
        if not isinstance(policy_freq, int) or isinstance(policy_freq, bool) or policy_freq < 1:
            raise ValueError(f"TD3: policy_freq must be an int >= 1, got {policy_freq!r}")
        self.policy_noise, self.noise_clip, self.policy_freq = float(policy_noise), float(noise_clip), policy_freq
        self.total_it = 0
        self._last_actor_loss = 0.0

    @readable_shape_errors
    def learn(self, obs: paddle.Tensor, action: paddle.Tensor, reward: paddle.Tensor, next_obs: paddle.Tensor,
              terminal: paddle.Tensor) -> paddle.Tensor:
        """One critic step; every ``policy_freq`` calls also an actor step and a soft target update.

        Args:
            obs: float32 ``[B, *obs_shape]``; action: float32 ``[B, act_dim]`` in ``[-1, 1]``;
            reward, terminal: float32 ``[B]`` or ``[B, 1]``; next_obs: float32 ``[B, *obs_shape]``.

        Returns:
            the critic loss, a scalar tensor (PARL's paddle TD3 returns only it; the last actor loss is
            in ``last_info["train/actor_loss"]``).
        """
        obs, action, reward, next_obs, terminal = self._batch(obs, action, reward, next_obs, terminal)
        self.total_it += 1
        with paddle.no_grad():
            next_action = functional.target_policy_smoothing(self.target_model.policy(next_obs), self.policy_noise,
                                                             self.noise_clip)
            next_q1, next_q2 = two_q(self.target_model.value(next_obs, next_action), "TD3")
            target = functional.clipped_double_q_target(reward, next_q1, next_q2, terminal, self.gamma)
        q1, q2 = two_q(self.model.value(obs, action), "TD3")
        critic_loss = F.mse_loss(q1, target) + F.mse_loss(q2, target)
        step(self.critic_optimizer, critic_loss)
        if self.total_it % self.policy_freq == 0:
            with self.frozen_critic():
                actor_loss = -flat_q(self.model.Q1(obs, self.model.policy(obs)), "TD3").mean()
            step(self.actor_optimizer, actor_loss)
            self.sync_target()
            self._last_actor_loss = host_float(actor_loss)
        self.last_info = {"train/critic_loss": host_float(critic_loss), "train/actor_loss": self._last_actor_loss,
                          "train/q_mean": host_float(q1.detach().mean())}
        return critic_loss
