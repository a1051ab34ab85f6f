"""IQL, Implicit Q-Learning (Kostrikov, Nair and Levine 2021, "Offline Reinforcement Learning with
Implicit Q-Learning", ICLR 2022) on PaddlePaddle: the torch ``IQL``'s API and math, PARL's ``IQL`` keywords."""

from __future__ import annotations

import copy

import paddle
import paddle.nn.functional as F

from parl_algorithms._checks import iql_hyperparameters
from parl_algorithms._validation import check_model_method
from parl_algorithms.paddle import functional
from parl_algorithms.paddle._common import (
    accepts_single_obs,
    adam,
    column,
    continuous_actions,
    flat_q,
    host_float,
    obs_batch,
    readable_shape_errors,
    step,
    two_q,
)
from parl_core.paddle import Algorithm, Model

__all__ = ["IQL", "expectile_loss"]

EXP_ADV_MAX = 100.0  # the paper's clip of the advantage weight exp(beta * A)


def expectile_loss(diff: paddle.Tensor, tau: float) -> paddle.Tensor:
    """Mean of the asymmetric squared loss ``|tau - 1(diff < 0)| * diff^2`` (the paper's ``L_2^tau``, eq. 5).

    Args:
        diff: float32 ``[B]``, ``Q(s, a) - V(s)``.
        tau: the expectile in ``(0, 1)``; 0.5 is the mean squared error / 2.

    Returns:
        the 0-d loss.
    """
    weight = paddle.abs(tau - (diff < 0).astype(diff.dtype))
    return paddle.mean(weight * diff * diff)


class IQL(Algorithm):
    """Implicit Q-learning (same math and API as the torch ``IQL``): expectile regression of ``V`` on the
    target critics' ``min(Q1', Q2')(s, a)``, TD regression of both critics on ``r + discount * V(s')``, and
    advantage-weighted behaviour cloning (``exp(beta * A)`` clipped at 100) whose learning rate is
    cosine-annealed to 0 over ``max_steps``; target critics by Polyak averaging with rate ``alpha``.

    The model must define ``policy(obs)`` -> a ``paddle.distribution.Distribution`` over actions or
    ``(mean, log_std)`` of a diagonal Gaussian (each float32 ``[B, act_dim]``); ``qvalue(obs, action)`` ->
    ``(Q1, Q2)`` (each ``[B, 1]`` or ``[B]``); ``value(obs)`` -> ``[B, 1]`` or ``[B]``; ``get_actor_params()``,
    ``get_critic_params()``, ``get_value_params()``.

    Args:
        model: the model (a ``parl_core.paddle.Model``); the target critics are ``copy.deepcopy(model)``.
        max_steps: the number of ``learn`` calls planned (the policy learning rate's cosine period).
        lr: Adam learning rate of the value, critics and policy.
        tau: the expectile of the value loss, in ``(0, 1)`` (0.7 on MuJoCo).
        beta: the inverse temperature of the advantage weights (>= 0; 3 on MuJoCo).
        discount: the discount factor in ``[0, 1]``.
        alpha: the Polyak rate of the target critics in ``[0, 1]``.
        device: ``"cpu"``, ``"gpu"``, ``"gpu:1"`` (or ``"cuda"``): paddle's device (process-wide).

    Attributes:
        last_info: ``train/q_loss``, ``train/v_loss``, ``train/policy_loss``, ``train/adv_mean`` (floats).

    Raises:
        TypeError: the model is not a paddle ``parl.Model``.
        ValueError: the model lacks a required method, or a hyperparameter is missing / out of range.
    """

    def __init__(self, model: Model, max_steps: int | None = None, lr: float = 3e-4, tau: float = 0.7,
                 beta: float = 3.0, discount: float = 0.99, alpha: float = 0.005, *, device: str | None = None) -> None:
        super().__init__(model, device=device)
        for method in ("value", "policy", "qvalue", "get_actor_params", "get_critic_params", "get_value_params"):
            check_model_method(model, method, "IQL")
        checked = iql_hyperparameters(max_steps, tau, beta, lr, discount, alpha)
        self.max_steps, self.tau, self.beta = checked["max_steps"], checked["tau"], checked["beta"]
        self.lr, self.discount, self.alpha = checked["lr"], checked["discount"], checked["alpha"]
        self.q_target = copy.deepcopy(model)
        for param in self.q_target.parameters():
            param.stop_gradient = True
        self.v_optimizer = adam(model.get_value_params(), lr=self.lr)
        self.q_optimizer = adam(model.get_critic_params(), lr=self.lr)
        self.policy_lr_schedule = paddle.optimizer.lr.CosineAnnealingDecay(self.lr, T_max=self.max_steps)
        self.policy_optimizer = adam(model.get_actor_params(), lr=self.policy_lr_schedule)
        self.last_info: dict[str, float] = {}

    def _log_prob_and_mean(self, obs: paddle.Tensor, action: paddle.Tensor | None):
        out = self.model.policy(obs)
        if isinstance(out, paddle.distribution.Distribution):
            log_prob = None if action is None else out.log_prob(action)
            if log_prob is not None and log_prob.ndim == 2:  # per-dimension log-probs: sum them
                log_prob = log_prob.sum(-1)
            return log_prob, out.mean
        if not (isinstance(out, (tuple, list)) and len(out) == 2):
            raise ValueError("IQL needs model.policy(obs) to return a paddle.distribution.Distribution or "
                             f"(mean, log_std), got {type(out).__name__}")
        mean, log_std = out[0], out[1].expand_as(out[0])
        if action is None:
            return None, mean
        return functional.gaussian_log_prob_entropy(mean, log_std, action)[0], mean

    @accepts_single_obs
    @readable_shape_errors
    def predict(self, obs: paddle.Tensor) -> paddle.Tensor:
        """The policy's mean action: float32 ``[B, act_dim]`` for obs ``[B, *obs_shape]`` (``[act_dim]`` for one
        observation ``[obs_dim]``)."""
        return self._log_prob_and_mean(obs_batch(obs, "IQL"), None)[1]

    @readable_shape_errors
    def learn(self, obs: paddle.Tensor, action: paddle.Tensor, reward: paddle.Tensor, next_obs: paddle.Tensor,
              terminal: paddle.Tensor) -> tuple[paddle.Tensor, paddle.Tensor, paddle.Tensor]:
        """One step on the value, the critics and the policy, then the target critics' Polyak update.

        Args:
            obs: float32 ``[B, *obs_shape]``.
            action: float32 ``[B, act_dim]`` (the dataset's actions).
            reward: float32 ``[B]`` or ``[B, 1]``.
            next_obs: float32 ``[B, *obs_shape]``.
            terminal: float32 / bool ``[B]`` or ``[B, 1]``: 1 if the episode terminated (not truncated).

        Returns:
            ``(q_loss, v_loss, policy_loss)``, 0-d tensors without gradient (PARL's ``update`` return).
        """
        obs, next_obs = obs_batch(obs, "IQL"), obs_batch(next_obs, "IQL")
        batch = obs.shape[0]
        action = continuous_actions(action, batch, "IQL")
        reward, terminal = column(reward, "reward", batch, "IQL"), column(terminal, "terminal", batch, "IQL")
        with paddle.no_grad():
            target_q = paddle.minimum(*two_q(self.q_target.qvalue(obs, action), "IQL"))
            next_v = flat_q(self.model.value(next_obs), "IQL")
        v = flat_q(self.model.value(obs), "IQL")
        adv = target_q - v
        v_loss = expectile_loss(adv, self.tau)
        q1, q2 = two_q(self.model.qvalue(obs, action), "IQL")
        target = functional.td_target(reward, next_v, terminal, self.discount)
        q_loss = F.mse_loss(q1, target) + F.mse_loss(q2, target)
        weight = paddle.clip(paddle.exp(self.beta * adv.detach()), max=EXP_ADV_MAX)
        log_prob, _ = self._log_prob_and_mean(obs, action)
        policy_loss = paddle.mean(weight * -log_prob)
        for optimizer, loss in ((self.q_optimizer, q_loss), (self.v_optimizer, v_loss),
                                (self.policy_optimizer, policy_loss)):
            step(optimizer, loss)
        self.policy_lr_schedule.step()
        self.sync_target(alpha=self.alpha)
        self.last_info = {"train/q_loss": host_float(q_loss), "train/v_loss": host_float(v_loss),
                          "train/policy_loss": host_float(policy_loss),
                          "train/adv_mean": host_float(adv.detach().mean())}
        return q_loss.detach(), v_loss.detach(), policy_loss.detach()

    update = learn  # PARL's name

    def sync_target(self, alpha: float = 0.0) -> None:
        """``q_target = alpha * model + (1 - alpha) * q_target`` (``alpha=1`` copies)."""
        self.model.sync_weights_to(self.q_target, decay=1.0 - float(alpha))

    def get_info(self) -> dict[str, float]:
        """Diagnostics of the last ``learn`` call (see ``last_info``)."""
        return dict(self.last_info)
