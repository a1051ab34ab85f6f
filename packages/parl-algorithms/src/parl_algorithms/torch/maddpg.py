"""MADDPG (Lowe et al. 2017, "Multi-Agent Actor-Critic for Mixed Cooperative-Competitive Environments") with PARL's
API: one algorithm per agent, a decentralised actor and a centralised critic over every agent's observation and
action."""

from __future__ import annotations

from typing import Any

import torch
import torch.nn.functional as F

from parl_algorithms import _maddpg
from parl_algorithms.torch import marl_functional
from parl_algorithms.torch._common import (
    accepts_single_obs,
    as_float_tensor,
    clip_grad_norm,
    flat_q,
    obs_batch,
    optimizer_params,
    readable_shape_errors,
)
from parl_algorithms.torch._off_policy import OffPolicyActorCritic
from parl_core.torch import Model
from parl_core.torch.device import DeviceLike, on_device

__all__ = ["MADDPG"]


class MADDPG(OffPolicyActorCritic):
    """MADDPG for agent ``agent_index``: Gumbel-softmax actions for a Discrete space, a tanh-squashed Gaussian
    for a Box space; the critic ``Q_i(o_1..o_N, a_1..a_N)`` is learnt on targets the agent computes (PARL).

    The model must define ``policy(obs) -> logits`` float32 ``[B, n]`` (Discrete) or ``(mean, log_std)``, each
    float32 ``[B, act_dim]`` (Box); ``value(obs_n, act_n) -> Q`` float32 ``[B]`` or ``[B, 1]`` for lists of every
    agent's ``[B, obs_dim_j]`` / ``[B, act_dim_j]``; ``get_actor_params()`` and ``get_critic_params()``.

    ``learn`` takes an actor step (loss ``-Q + 1e-3 * mean(policy ** 2)``), then a critic step (mean squared
    error to ``target_q``), each with Adam and the gradients' L2 norm clipped to 0.5, then a soft target
    update: PARL's order and constants.

    Args:
        model: this agent's actor-critic model; the target is ``copy.deepcopy(model)``.
        agent_index: this agent's position in ``act_space``.
        act_space: every agent's action space, in agent order (gymnasium ``Box`` or ``Discrete``; e.g.
            ``MAenv(...).action_space``). The agent's own space decides continuous or discrete.
        gamma: discount in ``[0, 1]`` (read by the agent's target; PARL's examples: 0.95).
        tau: Polyak rate in ``[0, 1]`` (``target = (1 - tau) * target + tau * model``; PARL: 0.01).
        actor_lr, critic_lr: Adam learning rates (PARL: 0.01).
        device: ``"cpu"``, ``"cuda"``, ``"cuda:1"`` or a ``torch.device``; default CUDA when available (PARL's rule).

    Raises:
        TypeError: ``act_space`` is not a list of spaces, or ``agent_index`` is not an int.
        ValueError: ``agent_index`` is out of range, a space is neither Box nor Discrete (e.g. MultiDiscrete), the
            model lacks a required method, or a hyperparameter is missing / out of range.
    """

    def __init__(self, model: Model, agent_index: int | None = None, act_space: list[Any] | None = None,
                 gamma: float | None = None, tau: float | None = None, actor_lr: float | None = None,
                 critic_lr: float | None = None, *, device: DeviceLike = None) -> None:
        specs = _maddpg.action_specs(act_space)
        index = _maddpg.agent_index(agent_index, len(specs))
        super().__init__(model, gamma, tau, actor_lr, critic_lr, device=device)
        self.agent_index = index
        self.act_space = list(act_space)
        self.action_specs = specs
        self.continuous_actions = specs[index].continuous

    # -- random draws (one place each, so that a test can serve both backends the same numbers) -----------
    def _uniform(self, shape: tuple[int, ...]) -> torch.Tensor:
        """float32 uniforms in ``[GUMBEL_EPS, 1 - GUMBEL_EPS]`` for the Gumbel noise."""
        return torch.empty(shape, device=self.device).uniform_(_maddpg.GUMBEL_EPS, 1.0 - _maddpg.GUMBEL_EPS)

    def _normal(self, shape: tuple[int, ...]) -> torch.Tensor:
        """float32 standard normal draws for the Gaussian exploration noise."""
        return torch.randn(shape, device=self.device)

    # -- policy -------------------------------------------------------------------------------------
    def _policy(self, obs: torch.Tensor, use_target_model: bool = False) -> Any:
        model = self.target_model if use_target_model else self.model
        out = model.policy(obs)
        _maddpg.policy_output(out, self.action_specs[self.agent_index], obs.shape[0], self.agent_index)
        return out

    def _sample(self, policy: Any) -> torch.Tensor:
        if self.continuous_actions:
            mean, log_std = policy
            return marl_functional.squashed_gaussian_sample(mean, log_std, self._normal(tuple(mean.shape)))
        return marl_functional.gumbel_softmax_sample(policy, self._uniform(tuple(policy.shape)))

    @accepts_single_obs
    @on_device
    @readable_shape_errors
    def predict(self, obs: torch.Tensor) -> torch.Tensor:
        """The greedy action of this agent.

        Args:
            obs: float32 ``[B, obs_dim]`` (or one observation ``[obs_dim]``).

        Returns:
            float32 ``[B, act_dim]``: softmax probabilities (Discrete; the env takes the argmax) or ``tanh(mean)``
            in ``[-1, 1]`` (Box).
        """
        policy = self._policy(obs_batch(obs, "MADDPG"))
        return torch.tanh(policy[0]) if self.continuous_actions else torch.softmax(policy, dim=-1)

    @accepts_single_obs
    @on_device
    @readable_shape_errors
    def sample(self, obs: torch.Tensor, use_target_model: bool = False) -> torch.Tensor:
        """An exploration action of this agent (differentiable in the policy's parameters).

        Args:
            obs: float32 ``[B, obs_dim]`` (or one observation ``[obs_dim]``).
            use_target_model: act with the target policy ``mu'_i`` (for the critic target).

        Returns:
            float32 ``[B, act_dim]``: a Gumbel-softmax sample with temperature 1 (Discrete) or
            ``tanh(mean + exp(log_std) * N(0, 1))`` (Box).
        """
        return self._sample(self._policy(obs_batch(obs, "MADDPG"), use_target_model))

    # -- critic -------------------------------------------------------------------------------------
    def _joint(self, obs_n: Any, act_n: Any, method: str) -> tuple[list[torch.Tensor], list[torch.Tensor], int]:
        if isinstance(obs_n, (list, tuple)):
            obs_n = [as_float_tensor(x, f"obs_n[{j}]", self.device) for j, x in enumerate(obs_n)]
        if isinstance(act_n, (list, tuple)):
            act_n = [as_float_tensor(x, f"act_n[{j}]", self.device) for j, x in enumerate(act_n)]
        batch = _maddpg.joint_batch(obs_n, act_n, self.action_specs, method)
        return obs_n, act_n, batch

    @readable_shape_errors
    def Q(self, obs_n: list[Any], act_n: list[Any], use_target_model: bool = False) -> torch.Tensor:  # noqa: N802
        """This agent's centralised critic ``Q_i(o_1..o_N, a_1..a_N)``.

        Args:
            obs_n: every agent's observations, a list of float32 ``[B, obs_dim_j]`` (numpy or tensors).
            act_n: every agent's actions, a list of float32 ``[B, act_dim_j]``.
            use_target_model: evaluate the target critic ``Q'_i``.

        Returns:
            float32 ``[B]``.

        Raises:
            TypeError, ValueError: see :func:`parl_algorithms._maddpg.joint_batch` (e.g. a list whose length is
            not the number of agents in ``act_space``).
        """
        obs_n, act_n, _ = self._joint(obs_n, act_n, "Q")
        model = self.target_model if use_target_model else self.model
        return flat_q(model.value(obs_n, act_n), "MADDPG")

    @readable_shape_errors
    def learn(self, obs_n: list[Any], act_n: list[Any], target_q: Any) -> torch.Tensor:
        """One actor step, one critic step, then a soft target update (PARL's order).

        Args:
            obs_n: every agent's observations, a list of float32 ``[B, obs_dim_j]``.
            act_n: every agent's stored actions, a list of float32 ``[B, act_dim_j]``.
            target_q: float32 ``[B]`` or ``[B, 1]``, ``r_i + gamma * (1 - terminated) * Q'_i(o'_n, mu'(o'_n))``
                (:func:`parl_algorithms.torch.marl_functional.maddpg_target_q`).

        Returns:
            the critic loss, a float32 scalar tensor (PARL's return).

        Raises:
            TypeError, ValueError: mismatched agent counts or batch shapes, or a ``target_q`` of the wrong shape.
        """
        obs_n, act_n, batch = self._joint(obs_n, act_n, "learn")
        _maddpg.target_q_shape(target_q, batch)
        target_q = as_float_tensor(target_q, "target_q", self.device).reshape(batch).detach()
        i = self.agent_index

        with self.frozen_critic():  # the actor's loss backpropagates through the critic to a_i only
            policy = self._policy(obs_n[i])
            joint = list(act_n)
            joint[i] = self._sample(policy)
            q = flat_q(self.model.value(obs_n, joint), "MADDPG")
            raw = torch.cat(policy, dim=-1) if self.continuous_actions else policy
            actor_loss = marl_functional.maddpg_actor_loss(q, raw)
        self._step(self.actor_optimizer, actor_loss)

        pred_q = flat_q(self.model.value(obs_n, act_n), "MADDPG")
        critic_loss = F.mse_loss(pred_q, target_q)
        self._step(self.critic_optimizer, critic_loss)
        self.sync_target()
        self.last_info = {"train/critic_loss": critic_loss.detach(), "train/actor_loss": actor_loss.detach(),
                          "train/q_mean": pred_q.detach().mean()}
        return critic_loss.detach()

    @staticmethod
    def _step(optimizer: torch.optim.Optimizer, loss: torch.Tensor) -> None:
        optimizer.zero_grad()
        loss.backward()
        clip_grad_norm(optimizer_params(optimizer), _maddpg.MAX_GRAD_NORM)
        optimizer.step()
