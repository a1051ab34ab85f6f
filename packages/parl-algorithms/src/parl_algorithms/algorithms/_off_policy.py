"""Shared base of the off-policy actor-critic algorithms (DDPG, TD3, SAC, CQL, OAC, MADDPG), written once for
torch and paddle: constructor checks, target network, actor / critic Adam optimizers, batch checks, the
deterministic policy's ``predict`` / ``sample``. The soft target update is each backend's (a fused in-place
update over cached parameter lists)."""

from __future__ import annotations

import copy
from typing import Any, ClassVar

from parl_algorithms._validation import check_model_method, positive, unit_interval

__all__ = ["OffPolicyActorCritic", "DeterministicActorCritic"]


class OffPolicyActorCritic:
    """Target network, actor / critic Adam optimizers and batch checks for continuous control.

    The model must define ``policy(obs)``, ``value(obs, action)``, ``get_actor_params()`` and
    ``get_critic_params()`` (PARL's contract; subclasses may require more).

    Raises:
        TypeError: the model is not a ``parl.Model`` of the class's framework.
        ValueError: the model lacks a required method, or ``gamma`` / ``tau`` are outside ``[0, 1]``, or a
            learning rate is missing / not positive.
    """

    ops: ClassVar[Any]  # the backend's layer: parl_algorithms.torch.ops or parl_algorithms.paddle.ops
    required_methods: tuple[str, ...] = ("value", "policy", "get_actor_params", "get_critic_params")
    # the global L2 norm both optimizers clip their gradients to (MADDPG's 0.5), None for no clip; a subclass that
    # sets it passes it to ops.step as well (torch clips there, paddle's optimizer carries the clip)
    max_grad_norm: ClassVar[float | None] = None

    def __init__(self, model: Any, gamma: float | None, tau: float | None, actor_lr: float | None,
                 critic_lr: float | None, *, device: Any = None) -> None:
        super().__init__(model, device=device)
        name = type(self).__name__
        for method in self.required_methods:
            check_model_method(model, method, name)
        self.gamma = unit_interval(gamma, "gamma", name, "0.99")
        self.tau = unit_interval(tau, "tau", name, "0.005")
        self.actor_lr = positive(actor_lr, "actor_lr", name, "3e-4")
        self.critic_lr = positive(critic_lr, "critic_lr", name, "3e-4")
        self.target_model = copy.deepcopy(model)
        self.ops.freeze(self.target_model.parameters())
        self.actor_optimizer = self.ops.adam(list(self.model.get_actor_params()), lr=self.actor_lr,
                                             max_grad_norm=self.max_grad_norm)
        self.critic_optimizer = self.ops.adam(list(self.model.get_critic_params()), lr=self.critic_lr,
                                              max_grad_norm=self.max_grad_norm)
        self.last_info: dict[str, float] = {}

    def frozen_critic(self) -> Any:
        """A context manager within which the critic's parameters need no gradient (the actor step backpropagates
        through the critic to the action only, which saves the critic's weight gradients)."""
        # the critic optimizer holds exactly the critic's parameters (``get_critic_params()`` at construction);
        # reading them there saves rebuilding the model's parameter list on every actor step
        return self.ops.frozen(self.ops.optimizer_params(self.critic_optimizer))

    def _batch(self, obs: Any, action: Any, reward: Any, next_obs: Any, terminal: Any) -> tuple[Any, ...]:
        ops, name = self.ops, type(self).__name__
        obs, next_obs = ops.obs_batch(obs, name), ops.obs_batch(next_obs, name)
        if next_obs.shape != obs.shape:
            raise ValueError(f"{name}: next_obs {tuple(next_obs.shape)} must have the shape of obs {tuple(obs.shape)}")
        batch = obs.shape[0]
        return (obs, ops.continuous_actions(action, batch, name), ops.column(reward, "reward", batch, name), next_obs,
                ops.column(terminal, "terminal", batch, name))

    def get_info(self) -> dict[str, Any]:
        """Diagnostics of the last ``learn`` call (see ``last_info``)."""
        return dict(self.last_info)


class DeterministicActorCritic(OffPolicyActorCritic):
    """Base of the deterministic-policy algorithms (DDPG, TD3): ``predict`` and ``sample`` are the policy."""

    def predict(self, obs: Any) -> Any:
        """Deterministic action.

        Args:
            obs: float32 ``[B, *obs_shape]``, or one vector observation ``[obs_dim]`` (as PARL code passes).

        Returns:
            float32 ``[B, act_dim]`` in ``[-1, 1]`` (``[act_dim]`` for one observation).

        Raises:
            TypeError: ``obs`` is not numeric.
            ValueError: ``obs`` is 0-d, or the model rejects its shape.
        """
        ops = self.ops
        (obs,) = args = ops.to_device(self.device, obs)
        try:
            obs = ops.as_float(obs, "obs")
            if len(obs.shape) == 1:
                return self.model.policy(obs.unsqueeze(0))[0]
            return self.model.policy(ops.obs_batch(obs, type(self).__name__))
        except (ValueError, RuntimeError) as err:
            ops.shape_error(self, "predict", err, args)
            raise

    def sample(self, obs: Any) -> Any:
        """Same as :meth:`predict` (its errors name ``predict``); exploration noise is added by the agent (as in
        PARL)."""
        return self.predict(obs)
