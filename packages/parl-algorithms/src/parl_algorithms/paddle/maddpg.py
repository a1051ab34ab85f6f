"""MADDPG (Lowe et al. 2017, "Multi-Agent Actor-Critic for Mixed Cooperative-Competitive Environments") on
PaddlePaddle, with PARL's paddle API (same math as the torch MADDPG)."""

from __future__ import annotations

from typing import Any

import paddle
import paddle.nn.functional as F

from parl_algorithms import _maddpg
from parl_algorithms.paddle import marl_functional
from parl_algorithms.paddle._common import (
    accepts_single_obs,
    adam,
    as_float,
    flat_q,
    obs_batch,
    readable_shape_errors,
    step,
)
from parl_algorithms.paddle._off_policy import OffPolicyActorCritic
from parl_core.paddle import Model

__all__ = ["MADDPG"]


class MADDPG(OffPolicyActorCritic):
    """MADDPG for agent ``agent_index``: Gumbel-softmax actions for a Discrete space, a tanh-squashed Gaussian
    for a Box space; the critic ``Q_i(o_1..o_N, a_1..a_N)`` is learnt on targets the agent computes (PARL).

    Same contract and math as :class:`parl_algorithms.torch.maddpg.MADDPG`: the model defines ``policy(obs)``
    (logits float32 ``[B, n]``, or ``(mean, log_std)`` each ``[B, act_dim]``), ``value(obs_n, act_n)`` float32
    ``[B]`` or ``[B, 1]``, ``get_actor_params()`` and ``get_critic_params()``; ``learn`` takes an actor step, a
    critic step (Adam, gradients clipped to a global L2 norm of 0.5) and a soft target update.

    Args:
        model: this agent's actor-critic model (a ``parl_core.paddle.Model``); the target is a deep copy.
        agent_index: this agent's position in ``act_space``.
        act_space: every agent's action space, in agent order (gymnasium ``Box`` or ``Discrete``).
        gamma: discount in ``[0, 1]``; tau: Polyak rate in ``[0, 1]``; actor_lr, critic_lr: Adam learning rates.
        device: ``"cpu"``, ``"gpu"``, ``"gpu:1"`` (or ``"cuda"``): paddle's device for this algorithm (set
            process-wide with ``paddle.set_device``); default paddle's own (the GPU in a CUDA build).

    Raises:
        TypeError: the model is not a paddle ``parl.Model``, ``act_space`` is not a list of spaces, or
            ``agent_index`` is not an int.
        ValueError: ``agent_index`` is out of range, a space is neither Box nor Discrete (e.g. MultiDiscrete), the
            model lacks a required method, or a hyperparameter is missing / out of range.
    """

    def __init__(self, model: Model, agent_index: int | None = None, act_space: list[Any] | None = None,
                 gamma: float | None = None, tau: float | None = None, actor_lr: float | None = None,
                 critic_lr: float | None = None, *, device: str | None = None) -> None:
        specs = _maddpg.action_specs(act_space)
        index = _maddpg.agent_index(agent_index, len(specs))
        super().__init__(model, gamma, tau, actor_lr, critic_lr, device=device)
        self.agent_index = index
        self.act_space = list(act_space)
        self.action_specs = specs
        self.continuous_actions = specs[index].continuous
        # PARL clipped each gradient tensor (ClipGradByNorm) here and the global norm on torch: one rule, the global
        self.actor_optimizer = adam(self.model.get_actor_params(), lr=self.actor_lr,
                                    max_grad_norm=_maddpg.MAX_GRAD_NORM)
        self.critic_optimizer = adam(self.model.get_critic_params(), lr=self.critic_lr,
                                     max_grad_norm=_maddpg.MAX_GRAD_NORM)

    # -- random draws (one place each, so that a test can serve both backends the same numbers) -----------
    def _uniform(self, shape: tuple[int, ...]) -> paddle.Tensor:
        """float32 uniforms in ``[GUMBEL_EPS, 1 - GUMBEL_EPS]`` for the Gumbel noise."""
        return paddle.uniform(list(shape), min=_maddpg.GUMBEL_EPS, max=1.0 - _maddpg.GUMBEL_EPS)

    def _normal(self, shape: tuple[int, ...]) -> paddle.Tensor:
        """float32 standard normal draws for the Gaussian exploration noise."""
        return paddle.randn(list(shape))

    # -- policy -------------------------------------------------------------------------------------
    def _policy(self, obs: paddle.Tensor, use_target_model: bool = False) -> Any:
        model = self.target_model if use_target_model else self.model
        out = model.policy(obs)
        _maddpg.policy_output(out, self.action_specs[self.agent_index], obs.shape[0], self.agent_index)
        return out

    def _sample(self, policy: Any) -> paddle.Tensor:
        if self.continuous_actions:
            mean, log_std = policy
            return marl_functional.squashed_gaussian_sample(mean, log_std, self._normal(tuple(mean.shape)))
        return marl_functional.gumbel_softmax_sample(policy, self._uniform(tuple(policy.shape)))

    @accepts_single_obs
    @readable_shape_errors
    def predict(self, obs: paddle.Tensor) -> paddle.Tensor:
        """The greedy action of this agent: float32 ``[B, act_dim]`` softmax probabilities (Discrete) or
        ``tanh(mean)`` (Box), for obs float32 ``[B, obs_dim]`` (or one observation ``[obs_dim]``)."""
        policy = self._policy(obs_batch(obs, "MADDPG"))
        return paddle.tanh(policy[0]) if self.continuous_actions else F.softmax(policy, axis=-1)

    @accepts_single_obs
    @readable_shape_errors
    def sample(self, obs: paddle.Tensor, use_target_model: bool = False) -> paddle.Tensor:
        """An exploration action float32 ``[B, act_dim]``: a Gumbel-softmax sample with temperature 1 (Discrete)
        or ``tanh(mean + exp(log_std) * N(0, 1))`` (Box); ``use_target_model`` acts with the target policy."""
        return self._sample(self._policy(obs_batch(obs, "MADDPG"), use_target_model))

    # -- critic -------------------------------------------------------------------------------------
    def _joint(self, obs_n: Any, act_n: Any, method: str) -> tuple[list[paddle.Tensor], list[paddle.Tensor], int]:
        if isinstance(obs_n, (list, tuple)):
            obs_n = [as_float(x, f"obs_n[{j}]") for j, x in enumerate(obs_n)]
        if isinstance(act_n, (list, tuple)):
            act_n = [as_float(x, f"act_n[{j}]") for j, x in enumerate(act_n)]
        batch = _maddpg.joint_batch(obs_n, act_n, self.action_specs, method)
        return obs_n, act_n, batch

    @readable_shape_errors
    def Q(self, obs_n: list[Any], act_n: list[Any], use_target_model: bool = False) -> paddle.Tensor:  # noqa: N802
        """This agent's centralised critic float32 ``[B]`` for every agent's observations ``obs_n`` (a list of
        float32 ``[B, obs_dim_j]``) and actions ``act_n`` (a list of float32 ``[B, act_dim_j]``);
        ``use_target_model`` evaluates the target critic.

        Raises:
            TypeError, ValueError: see :func:`parl_algorithms._maddpg.joint_batch`.
        """
        obs_n, act_n, _ = self._joint(obs_n, act_n, "Q")
        model = self.target_model if use_target_model else self.model
        return flat_q(model.value(obs_n, act_n), "MADDPG")

    @readable_shape_errors
    def learn(self, obs_n: list[Any], act_n: list[Any], target_q: Any) -> paddle.Tensor:
        """One actor step, one critic step, then a soft target update (PARL's order).

        Args:
            obs_n, act_n: every agent's observations / stored actions, lists of float32 ``[B, dim_j]``.
            target_q: float32 ``[B]`` or ``[B, 1]``
                (:func:`parl_algorithms.paddle.marl_functional.maddpg_target_q`).

        Returns:
            the critic loss, a float32 scalar tensor (PARL's return).

        Raises:
            TypeError, ValueError: mismatched agent counts or batch shapes, or a ``target_q`` of the wrong shape.
        """
        obs_n, act_n, batch = self._joint(obs_n, act_n, "learn")
        _maddpg.target_q_shape(target_q, batch)
        target_q = as_float(target_q, "target_q").reshape([batch]).detach()
        i = self.agent_index

        with self.frozen_critic():  # the actor's loss backpropagates through the critic to a_i only
            policy = self._policy(obs_n[i])
            joint = list(act_n)
            joint[i] = self._sample(policy)
            q = flat_q(self.model.value(obs_n, joint), "MADDPG")
            raw = paddle.concat(list(policy), axis=-1) if self.continuous_actions else policy
            actor_loss = marl_functional.maddpg_actor_loss(q, raw)
        step(self.actor_optimizer, actor_loss)

        pred_q = flat_q(self.model.value(obs_n, act_n), "MADDPG")
        critic_loss = F.mse_loss(pred_q, target_q)
        step(self.critic_optimizer, critic_loss)
        self.sync_target()
        self.last_info = {"train/critic_loss": float(critic_loss), "train/actor_loss": float(actor_loss),
                          "train/q_mean": float(pred_q.detach().mean())}
        return critic_loss.detach()
