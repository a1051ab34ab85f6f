"""Shared base of the off-policy actor-critic algorithms (DDPG, TD3, SAC, CQL)."""

from __future__ import annotations

import contextlib
import copy
from collections.abc import Iterator
from typing import Any

import torch

from parl_algorithms._validation import check_model_method
from parl_algorithms.torch._common import (
    LazyInfo,
    accepts_single_obs,
    adam,
    column,
    continuous_actions,
    obs_batch,
    positive,
    readable_shape_errors,
    unit_interval,
)
from parl_core.torch import Algorithm, Model
from parl_core.torch.device import DeviceLike, on_device


class OffPolicyActorCritic(LazyInfo, Algorithm):
    """Target network, actor / critic Adam optimizers and batch checks for continuous control.

    The model must define ``policy(obs)``, ``value(obs, action)``, ``get_actor_params()`` and
    ``get_critic_params()`` (PARL's contract; subclasses may require more).
    """

    required_methods: tuple[str, ...] = ("value", "policy", "get_actor_params", "get_critic_params")

    def __init__(self, model: Model, gamma: float | None, tau: float | None, actor_lr: float | None,
                 critic_lr: float | None, *, device: DeviceLike = None) -> None:
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
            param.requires_grad_(False)
        self.actor_optimizer = adam(list(self.model.get_actor_params()), lr=self.actor_lr)
        self.critic_optimizer = adam(list(self.model.get_critic_params()), lr=self.critic_lr)
        self.last_info: dict[str, float] = {}

    @contextlib.contextmanager
    def frozen_critic(self) -> Iterator[None]:
        """Within the block the critic's parameters need no gradient (the actor step backpropagates
        through the critic to the action only, which saves the critic's weight gradients)."""
        # the critic optimizer holds exactly the critic's parameters (``get_critic_params()`` at construction);
        # reading them there saves rebuilding the model's parameter list on every actor step
        params = [p for group in self.critic_optimizer.param_groups for p in group["params"]]
        flags = [p.requires_grad for p in params]
        for p in params:
            p.requires_grad_(False)
        try:
            yield
        finally:
            for p, flag in zip(params, flags, strict=True):
                p.requires_grad_(flag)

    def _batch(self, obs: Any, action: Any, reward: Any, next_obs: Any, terminal: Any) -> tuple[torch.Tensor, ...]:
        name = type(self).__name__
        obs, next_obs = obs_batch(obs, name), obs_batch(next_obs, name)
        if next_obs.shape != obs.shape:
            raise ValueError(f"{name}: next_obs {tuple(next_obs.shape)} must have the shape of obs {tuple(obs.shape)}")
        batch = obs.shape[0]
        action = continuous_actions(action, batch, None, name)
        return (obs, action, column(reward, "reward", batch, name), next_obs,
                column(terminal, "terminal", batch, name))

    def sync_target(self, decay: float | None = None) -> None:
        """Soft-update the target network: ``target = decay * target + (1 - decay) * model``.

        Same result as ``model.sync_weights_to(target_model, decay)``; the per-step path uses one
        ``torch._foreach_lerp_`` over cached parameter lists (the models must keep their parameters).

        Args:
            decay: defaults to ``1 - tau``.
        """
        decay = 1.0 - self.tau if decay is None else float(decay)
        pairs = self._sync_pairs()
        if pairs is None or not 0.0 <= decay <= 1.0:
            self.model.sync_weights_to(self.target_model, decay=decay)
            return
        with torch.no_grad():
            torch._foreach_lerp_(pairs[0], pairs[1], 1.0 - decay)
            for dst, src in zip(pairs[2], pairs[3], strict=True):
                dst.copy_(src)

    def _sync_pairs(self) -> tuple[list, list, list, list] | None:
        """Cached ``(target params, source params, target buffers, source buffers)``; ``None`` when the
        fast path does not apply (different structures, devices or dtypes, or no ``_foreach_lerp_``)."""
        key = (id(self.model), id(self.target_model))
        cached = getattr(self, "_sync_cache", None)
        if cached is not None and cached[0] == key:
            return cached[1]
        src, dst = dict(self.model.named_parameters()), dict(self.target_model.named_parameters())
        src_b, dst_b = dict(self.model.named_buffers()), dict(self.target_model.named_buffers())
        pairs = None
        if (hasattr(torch, "_foreach_lerp_") and src.keys() == dst.keys() and src_b.keys() == dst_b.keys()
                and all(src[k].shape == dst[k].shape and src[k].device == dst[k].device
                        and src[k].dtype == dst[k].dtype for k in src)):
            pairs = ([dst[k] for k in src], [src[k] for k in src], [dst_b[k] for k in src_b], [src_b[k] for k in src_b])
        self._sync_cache = (key, pairs)
        return pairs

    def get_info(self) -> dict[str, Any]:
        """Diagnostics of the last ``learn`` call (see ``last_info``)."""
        return dict(self.last_info)


class DeterministicActorCritic(OffPolicyActorCritic):
    """Base of the deterministic-policy algorithms (DDPG, TD3): ``predict`` and ``sample`` are the policy."""

    @accepts_single_obs
    @on_device
    @readable_shape_errors
    def predict(self, obs: torch.Tensor) -> torch.Tensor:
        """Deterministic action float32 ``[B, act_dim]`` in ``[-1, 1]`` for obs ``[B, *obs_shape]``."""
        return self.model.policy(obs_batch(obs, type(self).__name__))

    @accepts_single_obs
    @on_device
    @readable_shape_errors
    def sample(self, obs: torch.Tensor) -> torch.Tensor:
        """Same as :meth:`predict`; exploration noise is added by the agent (as in PARL)."""
        return self.predict(obs)
