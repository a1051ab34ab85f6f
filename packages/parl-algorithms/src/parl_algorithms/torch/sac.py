"""SAC on PyTorch: :class:`parl_algorithms.algorithms.sac.SAC` bound to torch, with the squashed Gaussian sample as
one autograd node."""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

import torch

from parl_algorithms.algorithms import sac as _algorithm
from parl_algorithms.torch import ops
from parl_algorithms.torch._off_policy import OffPolicyActorCritic

__all__ = ["SAC"]


def _negative_mean(x: torch.Tensor) -> torch.Tensor:
    """``-mean(x)`` (kept: the diagnostics of a pickled SAC of the versions before refer to it)."""
    return -x.mean()


_HALF_LOG_2PI = 0.5 * math.log(2.0 * math.pi)


class _TanhGaussianSample(torch.autograd.Function):
    """``(tanh(u), log pi(tanh(u)))`` for ``u = mean + exp(log_std) * noise`` as one autograd node.

    The forward computes exactly what ``functional.tanh_gaussian_log_prob`` computes (the same ops in the same
    order, so the same values to the last bit); the backward is the analytic gradient of that function
    (Haarnoja et al. 2018, appendix C). With ``d/du`` of the squashing term ``-log(1 - tanh(u)^2 + eps)`` being
    ``2 tanh(u) (1 - tanh(u)^2) / (1 - tanh(u)^2 + eps)``, and the Gaussian term's dependence on ``mean``
    cancelling through ``u - mean = exp(log_std) * noise``:

        g_mean    = (1 - tanh(u)^2) * (g_action + g_logp * 2 tanh(u) / (1 - tanh(u)^2 + eps))
        g_log_std = g_mean * exp(log_std) * noise - g_logp

    Autograd's graph of the same formula has ~20 forward and ~30 backward nodes on ``[B, act_dim]`` tensors,
    whose per-op cost (not arithmetic) dominates for small action spaces; this node has 4 backward ops. The
    gradients equal autograd's up to float rounding (the cancelling Gaussian terms are not formed).
    """

    @staticmethod
    def values(mean: torch.Tensor, log_std: torch.Tensor, noise: torch.Tensor,
               eps: float) -> tuple[torch.Tensor, ...]:
        """``(action, log_prob, 1 - action^2, exp(log_std) * noise)``, computed without a graph."""
        scaled_noise = log_std.exp() * noise
        pre_tanh = mean + scaled_noise
        action = torch.tanh(pre_tanh)
        # functional.tanh_gaussian_log_prob(pre_tanh, mean, log_std, eps), op for op (in place where it can be)
        var = torch.exp(2.0 * log_std)
        normal_logp = (pre_tanh - mean).pow_(2).neg_().div_(2.0 * var).sub_(log_std).sub_(_HALF_LOG_2PI)
        one_minus_sq = 1.0 - action.pow(2)
        log_prob = normal_logp.sub_(torch.log(one_minus_sq + eps)).sum(-1)
        return action, log_prob, one_minus_sq, scaled_noise

    @staticmethod
    def forward(ctx, mean: torch.Tensor, log_std: torch.Tensor, noise: torch.Tensor,
                eps: float) -> tuple[torch.Tensor, torch.Tensor]:
        action, log_prob, one_minus_sq, scaled_noise = _TanhGaussianSample.values(mean, log_std, noise, eps)
        if ctx.needs_input_grad[0] or ctx.needs_input_grad[1]:
            ctx.save_for_backward(action, one_minus_sq, scaled_noise)
            ctx.eps = eps
        return action, log_prob

    @staticmethod
    def backward(ctx, grad_action: torch.Tensor, grad_log_prob: torch.Tensor):
        action, one_minus_sq, scaled_noise = ctx.saved_tensors
        grad_log_prob = grad_log_prob.unsqueeze(-1)
        squash = (action * 2.0).div_(one_minus_sq + ctx.eps)
        grad_mean = torch.addcmul(grad_action, grad_log_prob, squash).mul_(one_minus_sq)
        grad_log_std = torch.addcmul(grad_log_prob.neg(), grad_mean, scaled_noise)
        return grad_mean, grad_log_std, None, None


class SAC(_algorithm.SAC, OffPolicyActorCritic):
    __doc__ = _algorithm.SAC.__doc__

    def _tanh_gaussian(self, mean: torch.Tensor, log_std: torch.Tensor,
                       noise: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        if torch.is_grad_enabled() and (mean.requires_grad or log_std.requires_grad):
            return _TanhGaussianSample.apply(mean, log_std, noise, 1e-6)
        return _TanhGaussianSample.values(mean, log_std, noise, 1e-6)[:2]  # no graph: skip Function.apply (~20 us)

    # -- checkpoints and pickles of the versions whose temperature was a parameter group of the actor's optimizer

    def load_state_dict(self, state: Mapping[str, Any]) -> None:  # noqa: D102 (Algorithm.load_state_dict)
        groups = state.get("actor_optimizer", {}).get("param_groups", ())
        if self.with_automatic_entropy_tuning and "alpha_optimizer" not in state and len(groups) == 2:
            actor = state["actor_optimizer"]
            (index,) = groups[1]["params"]
            state = {**state,
                     "actor_optimizer": {"state": {k: v for k, v in actor["state"].items() if k != index},
                                         "param_groups": [groups[0]]},
                     "alpha_optimizer": {"state": {0: actor["state"][index]} if index in actor["state"] else {},
                                         "param_groups": [{**groups[1], "params": [0]}]}}
        super().load_state_dict(state)

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        if self.with_automatic_entropy_tuning and "alpha_optimizer" not in state:
            group = next(g for g in self.actor_optimizer.param_groups if any(p is self.log_alpha for p in g["params"]))
            self.actor_optimizer.param_groups.remove(group)
            self.alpha_optimizer = ops.adam([self.log_alpha], lr=group["lr"])
            moments = self.actor_optimizer.state.pop(self.log_alpha, None)
            if moments:
                self.alpha_optimizer.state[self.log_alpha] = moments
