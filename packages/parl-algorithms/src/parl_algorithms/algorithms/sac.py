"""SAC (Haarnoja et al. 2018, "Soft Actor-Critic Algorithms and Applications") with PARL's API, plus
automatic entropy tuning; written once for torch and paddle."""

from __future__ import annotations

import math
from typing import Any

from parl_algorithms._validation import positive
from parl_algorithms.algorithms._acting import act
from parl_algorithms.algorithms._off_policy import OffPolicyActorCritic

__all__ = ["SAC"]


class SAC(OffPolicyActorCritic):
    """Soft actor-critic with twin critics and a tanh-squashed Gaussian policy.

    The model must define ``policy(obs) -> (mean, log_std)`` (each float32 ``[B, act_dim]``, log_std
    already clamped, as in PARL's models), ``value(obs, action) -> (Q1, Q2)`` (each ``[B, 1]`` or
    ``[B]``), ``get_actor_params()`` and ``get_critic_params()``. Actions are in ``[-1, 1]``.

    With automatic entropy tuning the temperature has its own Adam optimizer (``alpha_optimizer``, over
    ``log_alpha``) stepped after the actor's, and the losses read it on the device (no host read per step).

    Args:
        model: the actor-critic model (a ``parl.Model`` of the class's framework); the target is
            ``copy.deepcopy(model)``.
        gamma: discount in ``[0, 1]``.
        tau: Polyak rate in ``[0, 1]``.
        alpha: entropy temperature (> 0; fixed, or the initial value with automatic tuning, default 1.0 then).
        actor_lr, critic_lr: Adam learning rates (> 0).
        with_automatic_entropy_tuning: learn alpha so that the policy entropy tracks ``target_entropy``
            (Haarnoja et al. 2018, section 5).
        target_entropy: defaults to ``-act_dim`` (nats).
        alpha_lr: Adam learning rate of ``log_alpha`` (> 0); defaults to ``actor_lr``.
        device: where models, optimizer state and tensors live (README, "Devices"): torch ``"cpu"``, ``"cuda:1"``, a
            ``torch.device`` (default CUDA when available); paddle ``"cpu"``, ``"gpu:1"`` (set process-wide).

    Attributes:
        alpha: the current temperature (a float; with tuning ``exp(log_alpha)``, read from the device on access).
        log_alpha: float32 0-d tensor, learned when tuning is on (saved in checkpoints).
        last_info: ``train/critic_loss``, ``train/actor_loss``, ``train/alpha``, ``train/entropy``, ``train/q_mean``.

    Raises:
        TypeError: the model is not a ``parl.Model`` of the class's framework.
        ValueError: the model lacks a required method, or a hyperparameter is missing / out of range.
    """

    checkpoint_attrs = ("alpha",)

    def __init__(self, model: Any, gamma: float | None = None, tau: float | None = None,
                 alpha: float | None = None, actor_lr: float | None = None, critic_lr: float | None = None, *,
                 with_automatic_entropy_tuning: bool = False, target_entropy: float | None = None,
                 alpha_lr: float | None = None, device: Any = None) -> None:
        super().__init__(model, gamma, tau, actor_lr, critic_lr, device=device)
        name = type(self).__name__
        self.with_automatic_entropy_tuning = bool(with_automatic_entropy_tuning)
        if alpha is None and self.with_automatic_entropy_tuning:
            alpha = 1.0
        self.alpha = positive(alpha, "alpha", name, "0.2")
        self.log_alpha = self.ops.scalar(math.log(self._alpha), self.device,
                                         requires_grad=self.with_automatic_entropy_tuning)
        self.target_entropy = None if target_entropy is None else float(target_entropy)
        if self.with_automatic_entropy_tuning:
            lr = self.actor_lr if alpha_lr is None else positive(alpha_lr, "alpha_lr", name, "3e-4")
            self.alpha_optimizer = self.ops.adam([self.log_alpha], lr=lr)

    @property
    def alpha(self) -> float:
        """The current temperature (with automatic tuning ``exp(log_alpha)``, read from the device on access)."""
        if self.with_automatic_entropy_tuning:
            return self.ops.host_floats(self.log_alpha.detach().exp())[0]
        return self._alpha

    @alpha.setter
    def alpha(self, value: float) -> None:
        self._alpha = float(value)

    def _temperature(self) -> Any:
        """alpha for the losses: a device tensor when it is learned (no host round trip per step)."""
        return self.log_alpha.detach().exp() if self.with_automatic_entropy_tuning else self._alpha

    def predict(self, obs: Any) -> Any:
        """Deterministic action ``tanh(mean)``: float32 ``[B, act_dim]`` for obs ``[B, *obs_shape]`` (``[act_dim]``
        for one observation ``[obs_dim]``, as PARL)."""
        return act(self, "predict", obs, lambda x: self._policy(x)[0].tanh())

    def _policy(self, obs: Any) -> tuple[Any, Any]:
        out = self.model.policy(obs)
        if not (isinstance(out, (tuple, list)) and len(out) == 2):
            raise ValueError(f"{type(self).__name__} needs model.policy(obs) to return (mean, log_std), each float32 "
                             "[B, act_dim]; SAC is for continuous (Box) action spaces (use DQN / PPO for Discrete)")
        mean, log_std = out
        return mean, (log_std if list(log_std.shape) == list(mean.shape) else log_std.expand_as(mean))

    def _sample(self, obs: Any) -> tuple[Any, Any]:
        """``(tanh(u), log pi(tanh(u)))`` of ``u = mean + exp(log_std) * noise``, float32 ``[B, act_dim]``, ``[B]``."""
        mean, log_std = self._policy(obs)
        return self._tanh_gaussian(mean, log_std, self.ops.randn_like(mean))

    def _tanh_gaussian(self, mean: Any, log_std: Any, noise: Any) -> tuple[Any, Any]:
        """The squashed sample and its log-probability (``functional.tanh_gaussian_log_prob``): each backend
        computes it as one autograd node with the analytic gradient (Haarnoja et al. 2018, appendix C)."""
        raise NotImplementedError

    def sample(self, obs: Any) -> tuple[Any, Any]:
        """Reparameterised sample of the squashed Gaussian policy.

        Args:
            obs: float32 ``[B, *obs_shape]`` (or one vector observation ``[obs_dim]``).

        Returns:
            ``(action [B, act_dim] in [-1, 1], log_prob [B, 1])`` (PARL's shapes).
        """
        def sample(x: Any) -> tuple[Any, Any]:
            action, log_prob = self._sample(x)
            return action, log_prob.unsqueeze(1)

        return act(self, "sample", obs, sample)

    def _critic_loss(self, obs: Any, action: Any, reward: Any, next_obs: Any, terminal: Any) -> tuple[Any, Any]:
        ops, name = self.ops, type(self).__name__
        with ops.no_grad():
            next_action, next_log_prob = self._sample(next_obs)
            next_q1, next_q2 = ops.two_q(self.target_model.value(next_obs, next_action), name)
            target = ops.functional.sac_target(reward, next_q1, next_q2, next_log_prob, terminal, self.gamma,
                                               self._temperature())
        q1, q2 = ops.two_q(self.model.value(obs, action), name)
        return ops.F.mse_loss(q1, target) + ops.F.mse_loss(q2, target), q1

    def _actor_loss(self, obs: Any, action: Any) -> tuple[Any, Any]:
        new_action, log_prob = self._sample(obs)
        q1, q2 = self.ops.two_q(self.model.value(obs, new_action), type(self).__name__)
        return (self._temperature() * log_prob - q1.minimum(q2)).mean(), log_prob

    def learn(self, obs: Any, action: Any, reward: Any, next_obs: Any, terminal: Any) -> tuple[Any, Any]:
        """One critic step, one actor step, one temperature step (if tuning) and a soft target update.

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
            critic_loss, q1 = self._critic_loss(obs, action, reward, next_obs, terminal)
            ops.step(self.critic_optimizer, critic_loss)
            with self.frozen_critic():
                actor_loss, log_prob = self._actor_loss(obs, action)
            ops.step(self.actor_optimizer, actor_loss)
            if self.with_automatic_entropy_tuning:
                # J(alpha) = E[-alpha * (log pi(a|s) + target_entropy)], on log_alpha (Haarnoja et al. 2018, eq. 18)
                target_entropy = -float(action.shape[1]) if self.target_entropy is None else self.target_entropy
                ops.step(self.alpha_optimizer, -(self.log_alpha * (log_prob.detach() + target_entropy)).mean())
            self.sync_target()
            self.last_info = self._diagnostics(critic_loss, actor_loss, log_prob, q1)
            return critic_loss, actor_loss
        except (ValueError, RuntimeError) as err:
            ops.shape_error(self, "learn", err, args)
            raise

    def _diagnostics(self, critic_loss: Any, actor_loss: Any, log_prob: Any, q1: Any) -> dict[str, Any]:
        """``last_info`` of a ``learn`` call (tensors the backend reads to the host when it reads them)."""
        ops = self.ops
        return {"train/critic_loss": ops.info_scalar(critic_loss), "train/actor_loss": ops.info_scalar(actor_loss),
                "train/alpha": ops.info_scalar(self._temperature()), "train/entropy": ops.info_mean(-log_prob.detach()),
                "train/q_mean": ops.info_mean(q1)}
