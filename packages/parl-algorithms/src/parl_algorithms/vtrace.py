"""V-trace off-policy targets (Espeholt et al. 2018, "IMPALA: Scalable Distributed Deep-RL with
Importance Weighted Actor-Learner Architectures", eq. 1 and Remark 1).

``parl.algorithms.vtrace.from_importance_weights`` has the name and signature of PARL's
``parl/algorithms/paddle/impala/vtrace.py`` and deepmind/scalable_agent's ``vtrace.py``. This module
imports no deep-learning framework: the computation, written once, is
:func:`parl_algorithms.algorithms.vtrace.vtrace`, run at the first call on torch's layer
(``parl_algorithms.torch.ops``) or paddle's (``parl_algorithms.paddle.ops``) when an input is a paddle tensor.
"""

from __future__ import annotations

import sys
from typing import Any

from parl_algorithms.algorithms.vtrace import VTraceReturns, vtrace

__all__ = ["VTraceReturns", "from_importance_weights"]


def _is_paddle_tensor(value: Any) -> bool:
    paddle = sys.modules.get("paddle")  # an input can only be a paddle tensor if paddle is imported
    return paddle is not None and isinstance(value, paddle.Tensor)


def from_importance_weights(behaviour_actions_log_probs: Any, target_actions_log_probs: Any, discounts: Any,
                            rewards: Any, values: Any, bootstrap_value: Any, clip_rho_threshold: float | None = 1.0,
                            clip_pg_rho_threshold: float | None = 1.0) -> VTraceReturns:
    """V-trace targets from the log-probabilities of the taken actions; time-major ``[T, B]`` inputs.

    ``rho_t = min(clip_rho_threshold, pi(a_t|x_t) / mu(a_t|x_t))``, ``c_t = min(1, pi / mu)``,
    ``v_s = V(x_s) + sum_{t>=s} (prod_{i=s}^{t-1} gamma_i c_i) rho_t (r_t + gamma_t V(x_{t+1}) - V(x_t))``,
    computed backwards as ``v_s - V(x_s) = delta_s + gamma_s c_s (v_{s+1} - V(x_{s+1}))``.

    Args:
        behaviour_actions_log_probs: float32 ``[T, B]`` ``log mu(a_t | x_t)`` of the actor's policy.
        target_actions_log_probs: float32 ``[T, B]`` ``log pi(a_t | x_t)`` of the learner's policy.
        discounts: float32 ``[T, B]`` ``gamma_t``: the discount, 0 where the episode ended at step t.
        rewards: float32 ``[T, B]`` ``r_t``.
        values: float32 ``[T, B]`` ``V(x_t)``.
        bootstrap_value: float32 ``[B]`` ``V(x_T)``, the value after the last step.
        clip_rho_threshold: ``rho_bar`` (> 0), or ``None`` for no clipping.
        clip_pg_rho_threshold: ``rho_bar`` of the policy-gradient advantage (> 0), or ``None``.

    Returns:
        :class:`VTraceReturns` of float32 tensors ``[T, B]``, computed without gradient: paddle tensors
        when any input is a paddle tensor (on ``parl_algorithms.paddle.ops``), else torch tensors (numpy /
        list inputs are converted).

    Raises:
        ValueError: the inputs are not all ``[T, B]`` with ``bootstrap_value`` ``[B]``, or a threshold
            is not positive.
        ImportError: PyTorch (for non-paddle inputs) is not installed.
    """
    inputs = (behaviour_actions_log_probs, target_actions_log_probs, discounts, rewards, values, bootstrap_value)
    if any(_is_paddle_tensor(x) for x in inputs):
        from parl_algorithms.paddle import ops
    else:
        try:
            from parl_algorithms.torch import ops
        except ModuleNotFoundError as err:
            if err.name != "torch":
                raise
            raise ImportError("parl.algorithms.vtrace runs on PyTorch (or on paddle tensors), and PyTorch is not "
                              "installed; install it with `pip install 'parl-algorithms[torch]'`, or pass "
                              "paddle tensors") from err
    return vtrace(ops, *inputs, clip_rho_threshold, clip_pg_rho_threshold)
