"""SAC on PaddlePaddle: :class:`parl_algorithms.algorithms.sac.SAC` bound to paddle, with the squashed Gaussian
sample as one autograd node."""

from __future__ import annotations

import paddle

from parl_algorithms.algorithms import sac as _algorithm
from parl_algorithms.paddle import ops
from parl_algorithms.paddle._off_policy import OffPolicyActorCritic

__all__ = ["SAC"]


def _tanh_gaussian_values(mean: paddle.Tensor, log_std: paddle.Tensor, noise: paddle.Tensor,
                          eps: float) -> tuple[paddle.Tensor, paddle.Tensor, paddle.Tensor]:
    """``(action, log_prob, exp(log_std) * noise)`` for ``u = mean + exp(log_std) * noise``: the same ops in the
    same order as ``tanh(u)`` and ``functional.tanh_gaussian_log_prob(u, mean, log_std)``."""
    scaled_noise = log_std.exp() * noise
    pre_tanh = mean + scaled_noise
    action = paddle.tanh(pre_tanh)
    return action, ops.functional.tanh_gaussian_log_prob(pre_tanh, mean, log_std, eps), scaled_noise


class _TanhGaussianSample(paddle.autograd.PyLayer):
    """``(tanh(u), log pi(tanh(u)))`` for ``u = mean + exp(log_std) * noise`` as one autograd node: the paddle twin
    of the torch SAC's ``_TanhGaussianSample`` (see its docstring for the gradient, Haarnoja et al. 2018, appendix
    C). Same values to the last bit as the autograd formula; gradients equal to rounding. Autograd's graph of the
    formula has ~20 forward and ~30 backward nodes, whose per-op cost dominates for small action spaces: forward
    and backward 585 -> 304 us at batch 256 (benchmarks/README.md, P2 fourth pass)."""

    @staticmethod
    def forward(ctx, mean, log_std, noise, eps):
        action, log_prob, scaled_noise = _tanh_gaussian_values(mean, log_std, noise, eps)
        ctx.save_for_backward(action, 1.0 - action.pow(2), scaled_noise)
        ctx.eps = eps
        ctx.needs_grad = (not mean.stop_gradient, not log_std.stop_gradient)  # paddle wants None for the others
        return action, log_prob

    @staticmethod
    def backward(ctx, grad_action, grad_log_prob):
        action, one_minus_sq, scaled_noise = ctx.saved_tensor()
        grad_log_prob = grad_log_prob.unsqueeze(-1)
        squash = (action * 2.0) / (one_minus_sq + ctx.eps)
        grad_mean = (grad_action + grad_log_prob * squash) * one_minus_sq
        grad_log_std = grad_mean * scaled_noise - grad_log_prob if ctx.needs_grad[1] else None
        return grad_mean if ctx.needs_grad[0] else None, grad_log_std, None


class SAC(_algorithm.SAC, OffPolicyActorCritic):
    __doc__ = _algorithm.SAC.__doc__

    def _tanh_gaussian(self, mean: paddle.Tensor, log_std: paddle.Tensor,
                       noise: paddle.Tensor) -> tuple[paddle.Tensor, paddle.Tensor]:
        if mean.stop_gradient and log_std.stop_gradient:  # no graph (acting, the target's next action)
            return _tanh_gaussian_values(mean, log_std, noise, 1e-6)[:2]
        return _TanhGaussianSample.apply(mean, log_std, noise, 1e-6)  # one autograd node, same values
