"""TD3 (Fujimoto et al. 2018, "Addressing Function Approximation Error in Actor-Critic Methods") with
PARL's API: twin critics, target policy smoothing, delayed policy updates; written once for torch and paddle."""

from __future__ import annotations

from typing import Any, ClassVar

from parl_algorithms.algorithms._off_policy import DeterministicActorCritic

__all__ = ["TD3"]


class TD3(DeterministicActorCritic):
    """Twin Delayed DDPG.

    The model must define ``policy(obs) -> action`` float32 ``[B, act_dim]`` in ``[-1, 1]``,
    ``value(obs, action) -> (Q1, Q2)`` (each ``[B, 1]`` or ``[B]``), ``Q1(obs, action) -> Q1``,
    ``get_actor_params()`` and ``get_critic_params()``.

    Args:
        model: the actor-critic model (a ``parl.Model`` of the class's framework); the target is
            ``copy.deepcopy(model)``.
        gamma: discount in ``[0, 1]``.
        tau: Polyak rate in ``[0, 1]``.
        actor_lr, critic_lr: Adam learning rates.
        policy_noise: std of the target-policy smoothing noise (in normalised action units).
        noise_clip: clip of that noise.
        policy_freq: one actor / target update every ``policy_freq`` critic updates.
        device: where models, optimizer state and tensors live (README, "Devices"): torch ``"cpu"``, ``"cuda:1"``, a
            ``torch.device`` (default CUDA when available); paddle ``"cpu"``, ``"gpu:1"`` (set process-wide).

    Attributes:
        total_it: number of ``learn`` calls (saved in checkpoints, so a restored agent keeps the delay phase).

    Raises:
        TypeError: the model is not a ``parl.Model`` of the class's framework.
        ValueError: the model lacks a required method, or a hyperparameter is missing / out of range.
    """

    required_methods = ("value", "policy", "Q1", "get_actor_params", "get_critic_params")
    learn_returns_actor_loss: ClassVar[bool]  # PARL's return: torch (critic, actor) losses, paddle the critic's

    def __init__(self, model: Any, gamma: float | None = None, tau: float | None = None,
                 actor_lr: float | None = None, critic_lr: float | None = None, policy_noise: float = 0.2,
                 noise_clip: float = 0.5, policy_freq: int = 2, *, device: Any = None) -> None:
        super().__init__(model, gamma, tau, actor_lr, critic_lr, device=device)
        if policy_noise < 0 or noise_clip < 0:
            raise ValueError(f"TD3: policy_noise ({policy_noise}) and noise_clip ({noise_clip}) must be >= 0")
        if not isinstance(policy_freq, int) or isinstance(policy_freq, bool) or policy_freq < 1:
            raise ValueError(f"TD3: policy_freq must be an int >= 1, got {policy_freq!r}")
        self.policy_noise, self.noise_clip, self.policy_freq = float(policy_noise), float(noise_clip), policy_freq
        self.total_it = 0
        self._last_actor_loss = self.ops.info_zero(self.device)

    def learn(self, obs: Any, action: Any, reward: Any, next_obs: Any, terminal: Any) -> Any:
        """One critic step; every ``policy_freq`` calls also an actor step and a soft target update.

        Args:
            obs: float32 ``[B, *obs_shape]``.
            action: float32 ``[B, act_dim]`` in ``[-1, 1]``.
            reward: float32 ``[B]`` or ``[B, 1]``.
            next_obs: float32 ``[B, *obs_shape]``.
            terminal: float32 ``[B]`` or ``[B, 1]``.

        Returns:
            torch: ``(critic_loss, actor_loss)`` tensors, ``actor_loss`` the last actor update's loss; paddle: the
            critic loss, a scalar tensor (PARL's paddle TD3 returns only it; the last actor loss is in
            ``last_info["train/actor_loss"]``).

        Raises:
            ValueError: shapes do not fit (the message names the argument), or the actions are discrete indices.
        """
        ops = self.ops
        args = ops.to_device(self.device, obs, action, reward, next_obs, terminal)
        try:
            obs, action, reward, next_obs, terminal = self._batch(*args)
            self.total_it += 1
            with ops.no_grad():
                next_action = ops.functional.target_policy_smoothing(self.target_model.policy(next_obs),
                                                                     self.policy_noise, self.noise_clip)
                next_q1, next_q2 = ops.two_q(self.target_model.value(next_obs, next_action), "TD3")
                target = ops.functional.clipped_double_q_target(reward, next_q1, next_q2, terminal, self.gamma)
            q1, q2 = ops.two_q(self.model.value(obs, action), "TD3")
            critic_loss = ops.F.mse_loss(q1, target) + ops.F.mse_loss(q2, target)
            ops.step(self.critic_optimizer, critic_loss)
            actor_loss = self._last_actor_loss
            if self.total_it % self.policy_freq == 0:
                with self.frozen_critic():
                    actor_loss = -ops.flat_q(self.model.Q1(obs, self.model.policy(obs)), "TD3").mean()
                ops.step(self.actor_optimizer, actor_loss)
                self.sync_target()
                self._last_actor_loss = ops.info_scalar(actor_loss)
            self.last_info = {"train/critic_loss": ops.info_scalar(critic_loss),
                              "train/actor_loss": self._last_actor_loss,
                              "train/q_mean": ops.info_mean(q1)}
            return (critic_loss, actor_loss) if self.learn_returns_actor_loss else critic_loss
        except (ValueError, RuntimeError) as err:
            ops.shape_error(self, "learn", err, args)
            raise
