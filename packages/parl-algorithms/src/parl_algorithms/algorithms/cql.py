"""CQL (Kumar et al. 2020, "Conservative Q-Learning for Offline Reinforcement Learning") on top of SAC,
with PARL's ``CQL`` API (after the authors' rlkit implementation); written once for torch and paddle."""

from __future__ import annotations

import math
import types
from typing import Any, ClassVar

from parl_algorithms._validation import positive
from parl_algorithms.algorithms.sac import SAC

__all__ = ["CQL"]


class CQL(SAC):
    """Conservative Q-learning for offline RL: SAC's losses plus the CQL(H) penalty that pushes down Q
    values of out-of-distribution actions and pushes up Q values of dataset actions.

    The model contract is SAC's: ``policy``, ``value`` (twin critics), ``get_actor_params``,
    ``get_critic_params``.

    Args:
        model: the actor-critic model (a ``parl.Model`` of the class's framework).
        gamma, tau, actor_lr, critic_lr: as in :class:`SAC` (required).
        policy_eval_start: for the first this-many ``learn`` calls the actor is trained by behaviour
            cloning (``alpha * log pi(a~|s) - log pi(a_data|s)``) instead of maximising Q.
        with_automatic_entropy_tuning: tune alpha toward entropy ``-act_dim``.
        with_lagrange: tune the penalty weight ``alpha_prime`` so that the penalty matches
            ``lagrange_thresh`` (CQL's Lagrangian variant).
        lagrange_thresh: the target action gap (tau in the paper) with ``with_lagrange``.
        min_q_version: 3 = CQL(H) with importance-sampled logsumexp (random, current and next-state
            policy actions corrected by their log-densities); 2 = plain logsumexp over the same actions.
        min_q_weight: weight of the penalty (alpha in the paper; > 0).
        alpha: the entropy temperature (initial value with tuning).
        num_random: sampled actions per state and per proposal (10 in the paper).
        temperature: logsumexp temperature (> 0).
        device: where models, optimizer state and tensors live (README, "Devices"): torch ``"cpu"``, ``"cuda:1"``, a
            ``torch.device`` (default CUDA when available); paddle ``"cpu"``, ``"gpu:1"`` (set process-wide).

    Raises:
        TypeError: the model is not a ``parl.Model`` of the class's framework.
        ValueError: the model lacks a required method, or a hyperparameter is out of range.
    """

    checkpoint_attrs = ("alpha", "current_steps")
    # PARL's return: torch (critic_loss, actor_loss), paddle (critic_loss, bellman_mse, actor_loss, min_q)
    learn_returns_bellman_and_min_q: ClassVar[bool]

    def __init__(self, model: Any, gamma: float | None = None, tau: float | None = None,
                 actor_lr: float | None = None, critic_lr: float | None = None, policy_eval_start: int = 40000,
                 with_automatic_entropy_tuning: bool = True, with_lagrange: bool = False,
                 lagrange_thresh: float = 10.0, min_q_version: int = 3, min_q_weight: float = 5.0,
                 alpha: float = 1.0, *, num_random: int = 10, temperature: float = 1.0, device: Any = None) -> None:
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
            self.log_alpha_prime = self.ops.scalar(0.0, self.device, requires_grad=True)
            self.alpha_prime_optimizer = self.ops.adam([self.log_alpha_prime], lr=self.critic_lr)
        self.current_steps = 0

    def _repeated_q(self, obs: Any, actions: Any) -> tuple[Any, Any]:
        """Q values ``[B, K]`` of K actions per state; ``actions`` is ``[B * K, act_dim]`` (state-major)."""
        batch = obs.shape[0]
        obs_rep = obs.repeat_interleave(actions.shape[0] // batch, 0)
        q1, q2 = self.ops.two_q(self.model.value(obs_rep, actions), "CQL")
        return q1.reshape([batch, -1]), q2.reshape([batch, -1])

    def _random_actions(self, n: int, act_dim: int, like: Any) -> Any:
        """``n`` actions drawn uniformly from ``[-1, 1]^act_dim``: float32 ``[n, act_dim]``."""
        return self.ops.uniform([n, act_dim], -1.0, 1.0, like)

    def _critic_loss(self, obs: Any, action: Any, reward: Any, next_obs: Any, terminal: Any) -> tuple[Any, Any]:
        ops = self.ops
        with ops.no_grad():
            next_action, _ = self._sample(next_obs)
            next_q1, next_q2 = ops.two_q(self.target_model.value(next_obs, next_action), "CQL")
            # rlkit's CQL backs up without the entropy term (backup_entropy=False)
            target = ops.functional.clipped_double_q_target(reward, next_q1, next_q2, terminal, self.gamma)
        q1, q2 = ops.two_q(self.model.value(obs, action), "CQL")
        bellman = ops.F.mse_loss(q1, target) + ops.F.mse_loss(q2, target)

        batch, act_dim, k = obs.shape[0], action.shape[1], self.num_random
        random_actions = self._random_actions(batch * k, act_dim, obs)
        with ops.no_grad():
            curr_actions, curr_log_prob = self._sample(obs.repeat_interleave(k, 0))
            next_actions, next_log_prob = self._sample(next_obs.repeat_interleave(k, 0))
        q1_rand, q2_rand = self._repeated_q(obs, random_actions)
        q1_curr, q2_curr = self._repeated_q(obs, curr_actions)
        q1_next, q2_next = self._repeated_q(obs, next_actions)
        if self.min_q_version == 3:
            random_density = act_dim * math.log(0.5)
            curr_lp, next_lp = curr_log_prob.reshape([batch, k]), next_log_prob.reshape([batch, k])
            cat_q1 = ops.concat([q1_rand - random_density, q1_next - next_lp, q1_curr - curr_lp], 1)
            cat_q2 = ops.concat([q2_rand - random_density, q2_next - next_lp, q2_curr - curr_lp], 1)
        else:
            cat_q1 = ops.concat([q1_rand, q1.unsqueeze(1), q1_next, q1_curr], 1)
            cat_q2 = ops.concat([q2_rand, q2.unsqueeze(1), q2_next, q2_curr], 1)
        penalty1 = ops.functional.cql_penalty(q1, cat_q1, self.temperature) * self.min_q_weight
        penalty2 = ops.functional.cql_penalty(q2, cat_q2, self.temperature) * self.min_q_weight
        if self.with_lagrange:
            alpha_prime = self.log_alpha_prime.exp().clip(0.0, 1e6)
            gap1, gap2 = penalty1 - self.lagrange_thresh, penalty2 - self.lagrange_thresh
            ops.step(self.alpha_prime_optimizer, -0.5 * alpha_prime * (gap1.detach() + gap2.detach()))
            penalty1, penalty2 = alpha_prime.detach() * gap1, alpha_prime.detach() * gap2
        # a namespace, not tensor attributes: those would be checkpoint state
        self._cql_info = types.SimpleNamespace(penalty=ops.info_scalar(penalty1.detach() + penalty2.detach()),
                                               bellman=bellman.detach(), min_q=None)
        return bellman + penalty1 + penalty2, q1

    def _actor_loss(self, obs: Any, action: Any) -> tuple[Any, Any]:
        if self.current_steps < self.policy_eval_start:
            new_action, log_prob = self._sample(obs)
            mean, log_std = self._policy(obs)
            pre_tanh = action.clip(-1.0 + 1e-6, 1.0 - 1e-6).atanh()
            data_log_prob = self.ops.functional.tanh_gaussian_log_prob(pre_tanh, mean, log_std)
            return (self._temperature() * log_prob - data_log_prob).mean(), log_prob
        new_action, log_prob = self._sample(obs)
        q1, q2 = self.ops.two_q(self.model.value(obs, new_action), "CQL")
        min_q = q1.minimum(q2)
        if self.learn_returns_bellman_and_min_q:
            self._cql_info.min_q = min_q.mean().detach()
        return (self._temperature() * log_prob - min_q).mean(), log_prob

    def _diagnostics(self, critic_loss: Any, actor_loss: Any, log_prob: Any, q1: Any) -> dict[str, Any]:
        return {**super()._diagnostics(critic_loss, actor_loss, log_prob, q1),
                "train/cql_penalty": self._cql_info.penalty}

    def learn(self, obs: Any, action: Any, reward: Any, next_obs: Any, terminal: Any) -> tuple[Any, ...]:
        """One CQL step on an offline batch (shapes as :meth:`SAC.learn`).

        Returns:
            torch: ``(critic_loss, actor_loss)`` scalar tensors; paddle: ``(critic_loss, bellman_mse, actor_loss,
            min_q)`` scalar tensors (PARL's paddle return; ``min_q`` is the mean of ``min(Q1, Q2)`` at the policy's
            actions, 0 during behaviour cloning). ``last_info["train/cql_penalty"]`` holds the penalty.

        Raises:
            ValueError: shapes do not fit (the message names the argument), or the actions are discrete indices.
        """
        critic_loss, actor_loss = super().learn(obs, action, reward, next_obs, terminal)
        self.current_steps += 1
        if not self.learn_returns_bellman_and_min_q:
            return critic_loss, actor_loss
        info = self._cql_info
        min_q = self.ops.scalar(0.0, self.device) if info.min_q is None else info.min_q
        return critic_loss, info.bellman, actor_loss, min_q
