"""Torch implementation of V-trace (Espeholt et al. 2018, eq. 1 and Remark 1); the documented entry
point is :func:`parl_algorithms.vtrace.from_importance_weights`."""

from __future__ import annotations

from typing import Any

import torch

from parl_algorithms._validation import as_float_tensor
from parl_algorithms.vtrace import TB_NAMES, VTraceReturns, check_shapes, check_threshold

__all__ = ["VTraceReturns", "from_importance_weights"]


def from_importance_weights(behaviour_actions_log_probs: Any, target_actions_log_probs: Any, discounts: Any,
                            rewards: Any, values: Any, bootstrap_value: Any, clip_rho_threshold: float | None = 1.0,
                            clip_pg_rho_threshold: float | None = 1.0) -> VTraceReturns:
    """See :func:`parl_algorithms.vtrace.from_importance_weights` (same arguments, same result)."""
    clip_rho = check_threshold(clip_rho_threshold, "clip_rho_threshold")
    clip_pg_rho = check_threshold(clip_pg_rho_threshold, "clip_pg_rho_threshold")
    inputs = (behaviour_actions_log_probs, target_actions_log_probs, discounts, rewards, values)
    tensors = [as_float_tensor(value, name) for value, name in zip(inputs, TB_NAMES, strict=True)]
    bootstrap_value = as_float_tensor(bootstrap_value, "bootstrap_value")
    check_shapes(tensors, bootstrap_value)
    behaviour_log_probs, target_log_probs, discounts, rewards, values = tensors
    with torch.no_grad():
        rhos = torch.exp(target_log_probs - behaviour_log_probs)
        clipped_rhos = rhos if clip_rho is None else torch.clamp(rhos, max=clip_rho)
        cs = torch.clamp(rhos, max=1.0)
        values_t_plus_1 = torch.cat([values[1:], bootstrap_value.unsqueeze(0)], dim=0)
        deltas = clipped_rhos * (rewards + discounts * values_t_plus_1 - values)
        decay = discounts * cs
        vs_minus_v_xs = torch.empty_like(values)
        acc = torch.zeros_like(bootstrap_value)
        for t in range(values.shape[0] - 1, -1, -1):
            acc = deltas[t] + decay[t] * acc
            vs_minus_v_xs[t] = acc
        vs = vs_minus_v_xs + values
        vs_t_plus_1 = torch.cat([vs[1:], bootstrap_value.unsqueeze(0)], dim=0)
        clipped_pg_rhos = rhos if clip_pg_rho is None else torch.clamp(rhos, max=clip_pg_rho)
        pg_advantages = clipped_pg_rhos * (rewards + discounts * vs_t_plus_1 - values)
    return VTraceReturns(vs=vs, pg_advantages=pg_advantages)
