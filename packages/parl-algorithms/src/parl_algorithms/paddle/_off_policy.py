"""Shared base of the paddle off-policy actor-critic algorithms (DDPG, TD3, SAC, CQL)."""

from __future__ import annotations

import contextlib
import copy
from collections.abc import Iterator
from typing import Any

import paddle

from parl_algorithms._validation import check_model_method
from parl_algorithms.paddle._common import (
    adam,
    column,
    continuous_actions,
    obs_batch,
    optimizer_parameters,
    positive,
    rewrite_shape_error,
    unit_interval,
)
from parl_core.paddle import Algorithm, Model
from parl_core.paddle.model import soft_update_, split_statistics


class OffPolicyActorCritic(Algorithm):
    """Target network, actor / critic Adam optimizers and batch checks for continuous control.

    The model must define ``policy(obs)``, ``value(obs, action)``, ``get_actor_params()`` and
    ``get_critic_params()`` (PARL's contract; subclasses may require more).
    """

    required_methods: tuple[str, ...] = ("value", "policy", "get_actor_params", "get_critic_params")

    def __init__(self, model: Model, gamma: float | None, tau: float | None, actor_lr: float | None,
                 critic_lr: float | None, *, device: str | None = None) -> None:
        super().__init__(model, device=device)
        name = type(self).__name__
        for method in self.required_methods:
            check_model_method(model, method, name)
        self.gamma = unit_interval(gamma, "gamma", name, "0.99")
        self.tau = unit_interval(tau, "tau", name, "0.005")
        self.actor_lr = positive(actor_lr, "actor_lr", name, "3e-4")
        self.critic_lr = positive(critic_lr, "critic_lr", name, "3e-4")
        self.target_model = copy.deepcopy(model)
        for param in self.target_model.parameters():
            param.stop_gradient = True
        self.actor_optimizer = adam(self.model.get_actor_params(), lr=self.actor_lr)
        self.critic_optimizer = adam(self.model.get_critic_params(), lr=self.critic_lr)
        self.last_info: dict[str, float] = {}

    @contextlib.contextmanager
    def frozen_critic(self) -> Iterator[None]:
        """Within the block the critic's parameters need no gradient (the actor step backpropagates
        through the critic to the action only)."""
        params = optimizer_parameters(self.critic_optimizer)
        flags = [p.stop_gradient for p in params]
        for p in params:
            p.stop_gradient = True
        try:
            yield
        finally:
            for p, flag in zip(params, flags, strict=True):
                p.stop_gradient = flag

    def _batch(self, obs: Any, action: Any, reward: Any, next_obs: Any, terminal: Any) -> tuple[paddle.Tensor, ...]:
        name = type(self).__name__
        obs, next_obs = obs_batch(obs, name), obs_batch(next_obs, name)
        if next_obs.shape != obs.shape:
            raise ValueError(f"{name}: next_obs {tuple(next_obs.shape)} must have the shape of obs {tuple(obs.shape)}")
        batch = obs.shape[0]
        return (obs, continuous_actions(action, batch, name), column(reward, "reward", batch, name), next_obs,
                column(terminal, "terminal", batch, name))

    def sync_target(self, decay: float | None = None) -> None:
        """Soft-update the target network: ``target = decay * target + (1 - decay) * model``.

        Same result as ``model.sync_weights_to(target_model, decay)``; the per-step path (dygraph mode) runs one
        in-place ``lerp_`` per parameter over cached parameter lists, as the torch backend does, without walking
        the two models' layers on every call (the models must keep their parameters, as with torch).

        Args:
            decay: defaults to ``1 - tau``.
        """
        decay = 1.0 - self.tau if decay is None else float(decay)
        pairs = self._sync_pairs() if 0.0 < decay <= 1.0 and paddle.in_dynamic_mode() else None
        if pairs is None:
            self.model.sync_weights_to(self.target_model, decay=decay)
            return
        soft_update_(*pairs, decay)

    def _sync_pairs(self) -> tuple[list, list, list, list] | None:
        """Cached ``(target params, source params, target statistics, source statistics)`` (statistics: buffers
        and BatchNorm's running mean / variance, copied rather than averaged); ``None`` when the two models'
        names, shapes or dtypes differ (``sync_weights_to`` then says how)."""
        key = (id(self.model), id(self.target_model))
        cached = getattr(self, "_sync_cache", None)
        if cached is not None and cached[0] == key:
            return cached[1]
        src, src_stats = split_statistics(self.model)
        dst_all = dict(self.target_model.named_parameters()) | dict(self.target_model.named_buffers())
        pairs = None
        if dst_all.keys() == src.keys() | src_stats.keys() and all(
                dst_all[k].shape == v.shape and dst_all[k].dtype == v.dtype for k, v in (src | src_stats).items()):
            pairs = ([dst_all[k] for k in src], list(src.values()), [dst_all[k] for k in src_stats],
                     list(src_stats.values()))
        self._sync_cache = (key, pairs)
        return pairs

    def get_info(self) -> dict[str, Any]:
        """Diagnostics of the last ``learn`` call (see ``last_info``)."""
        return dict(self.last_info)


class DeterministicActorCritic(OffPolicyActorCritic):
    """Base of the deterministic-policy algorithms (DDPG, TD3): ``predict`` and ``sample`` are the policy."""

    def predict(self, obs: paddle.Tensor) -> paddle.Tensor:
        """Deterministic action float32 ``[B, act_dim]`` in ``[-1, 1]`` for obs ``[B, *obs_shape]``."""
        try:  # (not @readable_shape_errors: see rewrite_shape_error)
            return self.model.policy(obs_batch(obs, type(self).__name__))
        except (ValueError, RuntimeError) as err:
            rewrite_shape_error(self, "predict", err, (obs,))
            raise

    def sample(self, obs: paddle.Tensor) -> paddle.Tensor:
        """Same as :meth:`predict` (its errors name ``predict``); exploration noise is added by the agent (as in
        PARL)."""
        return self.predict(obs)
