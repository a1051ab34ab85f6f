"""V-trace (Espeholt et al. 2018, eq. 1 and Remark 1) on torch: :func:`parl_algorithms.algorithms.vtrace.vtrace`
bound to torch's layer; the documented entry point is :func:`parl_algorithms.vtrace.from_importance_weights`."""

from __future__ import annotations

from typing import Any

from parl_algorithms.algorithms.vtrace import VTraceReturns, vtrace
from parl_algorithms.torch import ops

__all__ = ["VTraceReturns", "from_importance_weights"]


def from_importance_weights(behaviour_actions_log_probs: Any, target_actions_log_probs: Any, discounts: Any,
                            rewards: Any, values: Any, bootstrap_value: Any, clip_rho_threshold: float | None = 1.0,
                            clip_pg_rho_threshold: float | None = 1.0) -> VTraceReturns:
    """See :func:`parl_algorithms.vtrace.from_importance_weights` (same arguments, same result)."""
    return vtrace(ops, behaviour_actions_log_probs, target_actions_log_probs, discounts, rewards, values,
                  bootstrap_value, clip_rho_threshold, clip_pg_rho_threshold)
