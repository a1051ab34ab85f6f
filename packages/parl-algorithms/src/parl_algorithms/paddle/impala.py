"""IMPALA (Espeholt et al. 2018, "IMPALA: Scalable Distributed Deep-RL with Importance Weighted
Actor-Learner Architectures") on PaddlePaddle: the torch ``IMPALA``'s API and math (an actor-critic loss on
V-trace targets), with PARL's paddle constructor keywords."""

from __future__ import annotations

from typing import Any

import paddle
import paddle.nn.functional as F

from parl_algorithms._checks import CONTINUOUS_HINT, VTraceLoss, check_unroll_batch, impala_hyperparameters
from parl_algorithms._validation import check_model_method
from parl_algorithms.paddle import functional
from parl_algorithms.paddle._common import (
    adam,
    as_float,
    column,
    discrete_actions,
    grad_norm,
    host_float,
    obs_batch,
    positive,
    readable_shape_errors,
    set_lr,
)
from parl_algorithms.paddle.vtrace import from_importance_weights
from parl_core.paddle import Algorithm, Model

__all__ = ["IMPALA", "VTraceLoss"]


class IMPALA(Algorithm):
    """Importance-weighted actor-learner: actor-critic on V-trace targets, for discrete actions.

    Same batch layout, losses, returns and errors as ``parl_algorithms.torch.IMPALA``, the layout and
    returns of PARL 2.2.1's paddle IMPALA: a learn batch is ``E`` unrolls of ``T = sample_batch_steps``
    steps flattened **env-major** to ``B = E * T`` rows (row ``e * T + t`` is step ``t`` of unroll ``e``),
    and ``sample`` returns ``(probs, logits)``. The last step of each unroll only bootstraps; losses are
    sums (PARL); Adam with a global gradient-norm clip of ``max_grad_norm`` (PARL: 40).

    The model must define ``policy(obs) -> logits float32 [B, A]`` and ``value(obs) -> float32 [B]`` or
    ``[B, 1]``; ``policy_and_value(obs)`` is used instead when defined (one forward pass).

    Args:
        model: the actor-critic model (a ``parl_core.paddle.Model``).
        sample_batch_steps: ``T``, the unroll length (>= 2).
        gamma: discount factor in ``[0, 1]`` (default 0.99).
        vf_loss_coeff: weight of the value loss (default 0.5).
        clip_rho_threshold: V-trace ``rho_bar`` (default 1.0).
        clip_pg_rho_threshold: ``rho_bar`` of the policy-gradient advantage (default 1.0).
        learning_rate: Adam's initial learning rate (PARL: 0.001); ``learn`` sets it on every call.
        max_grad_norm: global L2 gradient clip, ``None`` for none.
        device: ``"cpu"``, ``"gpu"``, ``"gpu:1"`` (or ``"cuda"``): paddle's device (process-wide,
            ``paddle.set_device``); default paddle's own (the GPU in a CUDA build).

    Raises:
        TypeError: the model is not a paddle ``parl.Model``.
        ValueError: the model lacks ``policy`` / ``value``, or a hyperparameter is missing or out of range.
    """

    def __init__(self, model: Model, sample_batch_steps: int | None = None, gamma: float | None = None,
                 vf_loss_coeff: float | None = None, clip_rho_threshold: float | None = None,
                 clip_pg_rho_threshold: float | None = None, *, learning_rate: float = 0.001,
                 max_grad_norm: float | None = 40.0, device: str | None = None) -> None:
        super().__init__(model, device=device)
        check_model_method(model, "policy", "IMPALA")
        check_model_method(model, "value", "IMPALA")
        checked = impala_hyperparameters(sample_batch_steps, gamma, vf_loss_coeff, clip_rho_threshold,
                                         clip_pg_rho_threshold, max_grad_norm)
        self.sample_batch_steps: int = checked["sample_batch_steps"]
        self.gamma: float = checked["gamma"]
        self.vf_loss_coeff: float = checked["vf_loss_coeff"]
        self.clip_rho_threshold: float = checked["clip_rho_threshold"]
        self.clip_pg_rho_threshold: float = checked["clip_pg_rho_threshold"]
        self.max_grad_norm: float | None = checked["max_grad_norm"]
        self.optimizer = adam(self.model.parameters(), lr=positive(learning_rate, "learning_rate", "IMPALA", "0.001"),
                              max_grad_norm=self.max_grad_norm)
        self.last_info: dict[str, float] = {}

    def _policy_and_value(self, obs: paddle.Tensor) -> tuple[paddle.Tensor, paddle.Tensor]:
        fused = getattr(self.model, "policy_and_value", None)
        logits, value = fused(obs) if callable(fused) else (self.model.policy(obs), self.model.value(obs))
        return self._check_logits(logits, obs.shape[0]), column(value, "model.value(obs)", obs.shape[0], "IMPALA")

    def _logits(self, obs: paddle.Tensor) -> paddle.Tensor:
        return self._check_logits(self.model.policy(obs), obs.shape[0])

    @staticmethod
    def _check_logits(logits: Any, batch: int) -> paddle.Tensor:
        if not isinstance(logits, paddle.Tensor) or logits.ndim != 2 or logits.shape[0] != batch:
            got = f"a {type(logits).__name__}" if not isinstance(logits, paddle.Tensor) else tuple(logits.shape)
            raise ValueError(f"IMPALA needs model.policy(obs) to return logits float32 [B={batch}, num_actions], got "
                             f"{got}; {CONTINUOUS_HINT}")
        return logits

    @readable_shape_errors
    def sample(self, obs: paddle.Tensor) -> tuple[paddle.Tensor, paddle.Tensor]:
        """The current policy's action probabilities (an actor draws its action from them), PARL's ``sample``.

        Args:
            obs: float32 ``[B, *obs_shape]``.

        Returns:
            ``(probs float32 [B, num_actions], behaviour_logits float32 [B, num_actions])``: ``probs`` the
            softmax of the logits (each row sums to 1); the caller samples the action from it and passes the
            logits to ``learn`` as ``behaviour_logits``.
        """
        logits = self._logits(obs_batch(obs, "IMPALA"))
        return F.softmax(logits, axis=-1), logits

    @readable_shape_errors
    def predict(self, obs: paddle.Tensor) -> paddle.Tensor:
        """Greedy actions int64 ``[B]`` for obs float32 ``[B, *obs_shape]``."""
        return self._logits(obs_batch(obs, "IMPALA")).argmax(axis=-1)

    @readable_shape_errors
    def learn(self, obs: paddle.Tensor, actions: paddle.Tensor, behaviour_logits: paddle.Tensor,
              rewards: paddle.Tensor, dones: paddle.Tensor, learning_rate: float,
              entropy_coeff: float) -> tuple[VTraceLoss, paddle.Tensor]:
        """One Adam step on ``E`` env-major unrolls (``B = E * T``, ``T = sample_batch_steps``; PARL's layout).

        Args:
            obs: float32 ``[B, *obs_shape]`` (e.g. ``[B, C, H, W]`` on Atari), row ``e * T + t`` (step ``t``
                of unroll ``e``); every other argument has its rows in the same order.
            actions: int64 ``[B]`` the actions taken.
            behaviour_logits: float32 ``[B, num_actions]`` the actor's logits when it acted.
            rewards: float32 ``[B]``.
            dones: bool / float32 ``[B]``, true where the episode ended at this step (its discount is 0).
            learning_rate: Adam's learning rate for this step.
            entropy_coeff: multiplies the entropy in the loss (PARL's sign: negative, e.g. -0.01, rewards it).

        Returns:
            ``(VTraceLoss(total_loss, pi_loss, vf_loss, entropy), kl)``: 0-d float32 tensors, ``kl`` the mean
            ``KL(pi || mu)`` of learner and behaviour policies (PARL's return).

        Raises:
            ValueError: ``B`` is not a multiple of ``T``, a tensor is not of the documented shape, or
                the actions / logits are not those of a discrete action space.
        """
        obs = obs_batch(obs, "IMPALA")
        batch, T = obs.shape[0], self.sample_batch_steps
        check_unroll_batch(batch, T)
        behaviour_logits = as_float(behaviour_logits, "behaviour_logits")
        rewards = column(as_float(rewards, "rewards"), "rewards", batch, "IMPALA")
        dones = column(as_float(dones, "dones"), "dones", batch, "IMPALA")
        logits, values = self._policy_and_value(obs)
        num_actions = logits.shape[1]
        if tuple(behaviour_logits.shape) != (batch, num_actions):
            raise ValueError(f"IMPALA.learn: behaviour_logits must be the actors' logits float32 [B={batch}, "
                             f"num_actions={num_actions}], got {tuple(behaviour_logits.shape)}; pass the second "
                             f"output of IMPALA.sample for every step. {CONTINUOUS_HINT}")
        actions = discrete_actions(actions, batch, num_actions, "IMPALA")
        target_log_probs, entropy_per = functional.categorical_log_prob_entropy(logits, actions)
        behaviour_log_softmax = F.log_softmax(behaviour_logits, axis=-1)
        behaviour_log_probs = paddle.take_along_axis(behaviour_log_softmax, actions.unsqueeze(1), axis=1).squeeze(1)
        with paddle.no_grad():
            target_log_softmax = F.log_softmax(logits.detach(), axis=-1)
            kl = (target_log_softmax.exp() * (target_log_softmax - behaviour_log_softmax)).sum(-1).mean()

        def unrolls(x: paddle.Tensor) -> paddle.Tensor:  # [E * T] env-major -> [T, E] (PARL's split_batches)
            return x.reshape([batch // T, T]).transpose([1, 0])

        values_tb = unrolls(values)
        vtrace = from_importance_weights(
            behaviour_actions_log_probs=unrolls(behaviour_log_probs)[:-1],
            target_actions_log_probs=unrolls(target_log_probs.detach())[:-1],
            discounts=(1.0 - unrolls(dones)[:-1]) * self.gamma, rewards=unrolls(rewards)[:-1],
            values=values_tb[:-1].detach(), bootstrap_value=values_tb[-1].detach(),
            clip_rho_threshold=self.clip_rho_threshold, clip_pg_rho_threshold=self.clip_pg_rho_threshold)
        pi_loss = -paddle.sum(unrolls(target_log_probs)[:-1] * vtrace.pg_advantages)
        vf_loss = 0.5 * paddle.sum((values_tb[:-1] - vtrace.vs).pow(2))
        entropy = paddle.sum(unrolls(entropy_per)[:-1])
        total_loss = pi_loss + self.vf_loss_coeff * vf_loss + float(entropy_coeff) * entropy
        set_lr(self.optimizer, learning_rate)
        self.optimizer.clear_grad()
        total_loss.backward()
        norm = host_float(grad_norm(self.optimizer)) if self.max_grad_norm is not None else float("nan")
        self.optimizer.step()
        self.last_info = {"train/pi_loss": host_float(pi_loss), "train/vf_loss": host_float(vf_loss),
                          "train/entropy": host_float(entropy_per.mean()), "train/kl": host_float(kl),
                          "train/grad_norm": norm}
        return VTraceLoss(total_loss.detach(), pi_loss.detach(), vf_loss.detach(), entropy.detach()), kl

    def get_info(self) -> dict[str, Any]:
        """Diagnostics of the last ``learn`` call (``train/entropy`` is the mean entropy per step)."""
        return dict(self.last_info)
