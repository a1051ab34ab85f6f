"""CQL (Kumar et al. 2020, "Conservative Q-Learning for Offline Reinforcement Learning") on top of SAC,
on PaddlePaddle with PARL's paddle ``CQL`` API (after the authors' rlkit implementation)."""

from __future__ import annotations

import math

import paddle
import paddle.nn.functional as F

from parl_algorithms.paddle import functional
from parl_algorithms.paddle._common import adam, host_float, positive, readable_shape_errors, step, two_q
from parl_algorithms.paddle.sac import SAC
from parl_core.paddle import Model

__all__ = ["CQL"]


class CQL(SAC):
    """Conservative Q-learning for offline RL: SAC's losses plus the CQL(H) penalty (same math as the torch CQL).

    The model contract is SAC's: ``policy``, ``value`` (twin critics), ``get_actor_params``,
    ``get_critic_params``.

    Args:
        model: the actor-critic model (a ``parl_core.paddle.Model``).
        gamma, tau, actor_lr, critic_lr: as in :class:`SAC` (required).
        policy_eval_start: for the first this-many ``learn`` calls the actor is trained by behaviour cloning.
        with_automatic_entropy_tuning: tune alpha toward entropy ``-act_dim``.
        with_lagrange: tune the penalty weight ``alpha_prime`` toward ``lagrange_thresh``.
        lagrange_thresh: the target action gap with ``with_lagrange``.
        min_q_version: 3 = importance-sampled logsumexp; 2 = plain logsumexp over the same actions.
        min_q_weight: weight of the penalty.
        alpha: the entropy temperature (initial value with tuning).
        num_random: sampled actions per state and per proposal.
        temperature: logsumexp temperature.
        device: ``"cpu"``, ``"gpu"``, ``"gpu:1"`` (or ``"cuda"``): paddle's device for this algorithm (set
            process-wide with ``paddle.set_device``); default paddle's own (the GPU in a CUDA build).

    Raises:
        TypeError: the model is not a paddle ``parl.Model``.
        ValueError: the model lacks a required method, or a hyperparameter is out of range.
    """

    checkpoint_attrs = ("alpha", "current_steps")

    def __init__(self, model: Model, gamma: float | None = None, tau: float | None = None,
                 actor_lr: float | None = None, critic_lr: float | None = None, policy_eval_start: int = 40000,
                 with_automatic_entropy_tuning: bool = True, with_lagrange: bool = False,
                 lagrange_thresh: float = 10.0, min_q_version: int = 3, min_q_weight: float = 5.0,
                 alpha: float = 1.0, *, num_random: int = 10, temperature: float = 1.0,
                 device: str | None = None) -> None:
        super().__init__(model, gamma=gamma, tau=tau, alpha=alpha, actor_lr=actor_lr, critic_lr=critic_lr,
                         with_automatic_entropy_tuning=with_automatic_entropy_tuning, device=device)
        if min_q_version not in (2, 3):
            raise ValueError(f"CQL: min_q_version must be 2 or 3, got {min_q_version!r}")
        if not isinstance(policy_eval_start, int) or policy_eval_start < 0:
            raise ValueError(f"CQL: policy_eval_start must be an int >= 0, got {policy_eval_start!r}")
        if not isinstance(num_random, int) or num_random < 1:
            raise ValueError(f"CQL: num_random must be an int >= 1, got {num_random!r}")
        self.policy_eval_start = policy_eval_start
        self.min_q_version = min_q_version
        self.min_q_weight = positive(min_q_weight, "min_q_weight", "CQL", "5.0")
        self.temperature = positive(temperature, "temperature", "CQL", "1.0")
        self.num_random = num_random
        self.with_lagrange = bool(with_lagrange)
        self.lagrange_thresh = float(lagrange_thresh)
        if self.with_lagrange:
            self.log_alpha_prime = paddle.zeros([], dtype="float32")
            self.log_alpha_prime.stop_gradient = False
            self.alpha_prime_optimizer = adam([self.log_alpha_prime], lr=self.critic_lr)
        self.current_steps = 0

    @staticmethod
    def _random_actions(n: int, act_dim: int, like: paddle.Tensor) -> paddle.Tensor:
        """``n`` actions drawn uniformly from ``[-1, 1]^act_dim``: float32 ``[n, act_dim]``."""
        return paddle.uniform([n, act_dim], dtype="float32", min=-1.0, max=1.0)

    def _repeated_q(self, obs: paddle.Tensor, actions: paddle.Tensor) -> tuple[paddle.Tensor, paddle.Tensor]:
        batch = obs.shape[0]
        q1, q2 = two_q(self.model.value(paddle.repeat_interleave(obs, actions.shape[0] // batch, axis=0), actions),
                       "CQL")
        return q1.reshape([batch, -1]), q2.reshape([batch, -1])

    def _critic_loss(self, obs, action, reward, next_obs, terminal):
        with paddle.no_grad():
            next_action, _ = self._sample(next_obs)
            next_q1, next_q2 = two_q(self.target_model.value(next_obs, next_action), "CQL")
            target = functional.clipped_double_q_target(reward, next_q1, next_q2, terminal, self.gamma)
        q1, q2 = two_q(self.model.value(obs, action), "CQL")
        bellman = F.mse_loss(q1, target) + F.mse_loss(q2, target)

        batch, act_dim, k = obs.shape[0], action.shape[1], self.num_random
        random_actions = self._random_actions(batch * k, act_dim, obs)
        with paddle.no_grad():
            curr_actions, curr_log_prob = self._sample(paddle.repeat_interleave(obs, k, axis=0))
            next_actions, next_log_prob = self._sample(paddle.repeat_interleave(next_obs, k, axis=0))
        q1_rand, q2_rand = self._repeated_q(obs, random_actions)
        q1_curr, q2_curr = self._repeated_q(obs, curr_actions)
        q1_next, q2_next = self._repeated_q(obs, next_actions)
        if self.min_q_version == 3:
            random_density = act_dim * math.log(0.5)
            curr_lp, next_lp = curr_log_prob.reshape([batch, k]), next_log_prob.reshape([batch, k])
            cat_q1 = paddle.concat([q1_rand - random_density, q1_next - next_lp, q1_curr - curr_lp], 1)
            cat_q2 = paddle.concat([q2_rand - random_density, q2_next - next_lp, q2_curr - curr_lp], 1)
        else:
            cat_q1 = paddle.concat([q1_rand, q1.unsqueeze(1), q1_next, q1_curr], 1)
            cat_q2 = paddle.concat([q2_rand, q2.unsqueeze(1), q2_next, q2_curr], 1)
        penalty1 = functional.cql_penalty(q1, cat_q1, self.temperature) * self.min_q_weight
        penalty2 = functional.cql_penalty(q2, cat_q2, self.temperature) * self.min_q_weight
        if self.with_lagrange:
            alpha_prime = paddle.clip(self.log_alpha_prime.exp(), 0.0, 1e6)
            gap1, gap2 = penalty1 - self.lagrange_thresh, penalty2 - self.lagrange_thresh
            step(self.alpha_prime_optimizer, -0.5 * alpha_prime * (gap1.detach() + gap2.detach()))
            penalty1, penalty2 = alpha_prime.detach() * gap1, alpha_prime.detach() * gap2
        self._last_penalty = host_float(penalty1 + penalty2)
        self._last_bellman = host_float(bellman)  # floats, not tensors: tensor attributes are checkpoint state
        return bellman + penalty1 + penalty2, q1

    def _actor_loss(self, obs, action):
        if self.current_steps < self.policy_eval_start:
            new_action, log_prob = self._sample(obs)
            mean, log_std = self._policy(obs)
            pre_tanh = paddle.atanh(paddle.clip(action, -1.0 + 1e-6, 1.0 - 1e-6))
            data_log_prob = functional.tanh_gaussian_log_prob(pre_tanh, mean, log_std)
            self._last_min_q = 0.0
            return (self.alpha * log_prob - data_log_prob).mean(), log_prob
        new_action, log_prob = self._sample(obs)
        q1, q2 = two_q(self.model.value(obs, new_action), "CQL")
        min_q = paddle.minimum(q1, q2)
        self._last_min_q = host_float(min_q.mean())
        return (self.alpha * log_prob - min_q).mean(), log_prob

    @readable_shape_errors
    def learn(self, obs: paddle.Tensor, action: paddle.Tensor, reward: paddle.Tensor, next_obs: paddle.Tensor,
              terminal: paddle.Tensor) -> tuple[paddle.Tensor, paddle.Tensor, paddle.Tensor, paddle.Tensor]:
        """One CQL step on an offline batch (shapes as :meth:`SAC.learn`).

        Returns:
            ``(critic_loss, bellman_mse, actor_loss, min_q)`` scalar tensors (PARL's paddle return; ``min_q``
            is the mean of ``min(Q1, Q2)`` at the policy's actions, 0 during behaviour cloning);
            ``last_info["train/cql_penalty"]`` holds the penalty.
        """
        critic_loss, actor_loss = super().learn(obs, action, reward, next_obs, terminal)
        self.current_steps += 1
        self.last_info["train/cql_penalty"] = self._last_penalty
        return (critic_loss, paddle.to_tensor(self._last_bellman), actor_loss,
                paddle.to_tensor(self._last_min_q))
