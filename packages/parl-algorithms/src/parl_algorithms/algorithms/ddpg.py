"""DDPG (Lillicrap et al. 2016, "Continuous control with deep reinforcement learning") with PARL's API;
written once for torch and paddle."""

from __future__ import annotations

from typing import Any

from parl_algorithms.algorithms._off_policy import DeterministicActorCritic

__all__ = ["DDPG"]


class DDPG(DeterministicActorCritic):
    """Deterministic policy gradient with target networks and Polyak averaging.

    The model must define ``policy(obs) -> action`` float32 ``[B, act_dim]`` in ``[-1, 1]`` (tanh; the
    agent rescales to the env's bounds), ``value(obs, action) -> Q`` float32 ``[B, 1]`` or ``[B]``,
    ``get_actor_params()`` and ``get_critic_params()``.

    Args:
        model: the actor-critic model (a ``parl.Model`` of the class's framework); the target is
            ``copy.deepcopy(model)``.
        gamma: discount in ``[0, 1]``.
        tau: Polyak rate in ``[0, 1]`` (``target = (1 - tau) * target + tau * model``).
        actor_lr: actor Adam learning rate.
        critic_lr: critic Adam learning rate.
        device: where models, optimizer state and tensors live (README, "Devices"): torch ``"cpu"``, ``"cuda:1"``, a
            ``torch.device`` (default CUDA when available); paddle ``"cpu"``, ``"gpu:1"`` (set process-wide).

    Raises:
        TypeError: the model is not a ``parl.Model`` of the class's framework.
        ValueError: the model lacks a required method, or a hyperparameter is missing / out of range.
    """

    def __init__(self, model: Any, gamma: float | None = None, tau: float | None = None,
                 actor_lr: float | None = None, critic_lr: float | None = None, *, device: Any = None) -> None:
        super().__init__(model, gamma, tau, actor_lr, critic_lr, device=device)

    def learn(self, obs: Any, action: Any, reward: Any, next_obs: Any, terminal: Any) -> tuple[Any, Any]:
        """One critic step, one actor step, then a soft target update.

        Args:
            obs: float32 ``[B, *obs_shape]``.
            action: float32 ``[B, act_dim]`` in ``[-1, 1]``.
            reward: float32 ``[B]`` or ``[B, 1]``.
            next_obs: float32 ``[B, *obs_shape]``.
            terminal: float32 ``[B]`` or ``[B, 1]`` (1 on termination, 0 on truncation).

        Returns:
            ``(critic_loss, actor_loss)`` scalar tensors (PARL's return).

        Raises:
            ValueError: shapes do not fit (the message names the argument), or the actions are discrete indices.
        """
        ops = self.ops
        args = ops.to_device(self.device, obs, action, reward, next_obs, terminal)
        try:
            obs, action, reward, next_obs, terminal = self._batch(*args)
            with ops.no_grad():
                next_q = ops.flat_q(self.target_model.value(next_obs, self.target_model.policy(next_obs)), "DDPG")
                target = ops.functional.td_target(reward, next_q, terminal, self.gamma)
            q = ops.flat_q(self.model.value(obs, action), "DDPG")
            critic_loss = ops.F.mse_loss(q, target)
            ops.step(self.critic_optimizer, critic_loss)
            with self.frozen_critic():
                actor_loss = -ops.flat_q(self.model.value(obs, self.model.policy(obs)), "DDPG").mean()
            ops.step(self.actor_optimizer, actor_loss)
            self.sync_target()
            self.last_info = {"train/critic_loss": ops.info_scalar(critic_loss),
                              "train/actor_loss": ops.info_scalar(actor_loss),
                              "train/q_mean": ops.info_scalar(q.detach().mean())}
            return critic_loss, actor_loss
        except (ValueError, RuntimeError) as err:
            ops.shape_error(self, "learn", err, args)
            raise
