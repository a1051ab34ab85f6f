"""Paddle implementation of V-trace (Espeholt et al. 2018, eq. 1 and Remark 1), the counterpart of
:mod:`parl_algorithms.torch.vtrace` (PARL's ``parl/algorithms/paddle/impala/vtrace.py``); the documented
entry point is :func:`parl_algorithms.vtrace.from_importance_weights`, which calls this one for paddle
tensors."""

from __future__ import annotations

from typing import Any

import paddle

from parl_algorithms.paddle._common import as_float
from parl_algorithms.vtrace import TB_NAMES, VTraceReturns, check_shapes, check_threshold

__all__ = ["VTraceReturns", "from_importance_weights"]


def from_importance_weights(behaviour_actions_log_probs: Any, target_actions_log_probs: Any, discounts: Any,
                            rewards: Any, values: Any, bootstrap_value: Any, clip_rho_threshold: float | None = 1.0,
                            clip_pg_rho_threshold: float | None = 1.0) -> VTraceReturns:
    """V-trace targets on paddle: same arguments, checks and result as
    :func:`parl_algorithms.vtrace.from_importance_weights` (float32 paddle tensors ``[T, B]``, no gradient;
    numpy / list inputs are converted)."""
    clip_rho = check_threshold(clip_rho_threshold, "clip_rho_threshold")
    clip_pg_rho = check_threshold(clip_pg_rho_threshold, "clip_pg_rho_threshold")
    inputs = (behaviour_actions_log_probs, target_actions_log_probs, discounts, rewards, values)
    tensors = [as_float(value, name) for value, name in zip(inputs, TB_NAMES, strict=True)]
    bootstrap_value = as_float(bootstrap_value, "bootstrap_value")
    check_shapes(tensors, bootstrap_value)
    behaviour_log_probs, target_log_probs, discounts, rewards, values = tensors
    with paddle.no_grad():
        rhos = paddle.exp(target_log_probs - behaviour_log_probs)
        clipped_rhos = rhos if clip_rho is None else paddle.clip(rhos, max=clip_rho)
        cs = paddle.clip(rhos, max=1.0)
        values_t_plus_1 = paddle.concat([values[1:], bootstrap_value.unsqueeze(0)], axis=0)
        deltas = clipped_rhos * (rewards + discounts * values_t_plus_1 - values)
        decay = discounts * cs
        acc = paddle.zeros_like(bootstrap_value)
        steps = []
        for t in range(values.shape[0] - 1, -1, -1):
            acc = deltas[t] + decay[t] * acc
            steps.append(acc)
        vs = paddle.stack(steps[::-1]) + values
        vs_t_plus_1 = paddle.concat([vs[1:], bootstrap_value.unsqueeze(0)], axis=0)
        clipped_pg_rhos = rhos if clip_pg_rho is None else paddle.clip(rhos, max=clip_pg_rho)
        pg_advantages = clipped_pg_rhos * (rewards + discounts * vs_t_plus_1 - values)
    return VTraceReturns(vs=vs.detach(), pg_advantages=pg_advantages.detach())
