"""V-trace off-policy targets (Espeholt et al. 2018, "IMPALA: Scalable Distributed Deep-RL with Importance
Weighted Actor-Learner Architectures", eq. 1 and Remark 1), written once for torch and paddle: the backend's
layer (``parl_algorithms.torch.ops`` / ``parl_algorithms.paddle.ops``) is an argument.

The documented entry point is :func:`parl_algorithms.vtrace.from_importance_weights` (it picks the layer from
its inputs); IMPALA calls :func:`vtrace` with its own ``ops``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, NamedTuple

__all__ = ["VTraceReturns", "vtrace"]

TB_NAMES = ("behaviour_actions_log_probs", "target_actions_log_probs", "discounts", "rewards", "values")


class VTraceReturns(NamedTuple):
    """The result of :func:`from_importance_weights`.

    Attributes:
        vs: float32 ``[T, B]`` V-trace value targets ``v_s`` (eq. 1), no gradient.
        pg_advantages: float32 ``[T, B]`` policy-gradient advantages
            ``min(rho_bar_pg, rho_s) * (r_s + gamma_s * v_{s+1} - V(x_s))`` (Remark 1), no gradient.
    """

    vs: Any
    pg_advantages: Any


def check_threshold(value: float | None, name: str) -> float | None:
    """``float(value)``, or ``None`` for no clipping.

    Raises:
        ValueError: ``value`` is not a number > 0.
    """
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not value > 0:
        raise ValueError(f"vtrace: {name} must be a number > 0 (1.0 in the paper) or None for no clipping, "
                         f"got {value!r}")
    return float(value)


def check_shapes(tensors: Sequence[Any], bootstrap_value: Any) -> None:
    """Check that the five ``[T, B]`` inputs (in :data:`TB_NAMES` order) share one shape and that
    ``bootstrap_value`` is ``[B]`` (any tensor type with ``.shape``).

    Raises:
        ValueError: a shape differs; the message names the fix.
    """
    shapes = {name: tuple(t.shape) for name, t in zip(TB_NAMES, tensors, strict=True)}
    first = shapes[TB_NAMES[0]]
    if len(first) != 2 or any(shape != first for shape in shapes.values()):
        raise ValueError(f"vtrace: {', '.join(TB_NAMES)} must all have the same time-major shape [T, B], got "
                         f"{shapes}; reshape a flat batch of T x B steps with x.reshape(T, B)")
    if tuple(bootstrap_value.shape) != first[1:]:
        raise ValueError(f"vtrace: bootstrap_value must have shape [B]={list(first[1:])} (the value after the last "
                         f"step of each of the B sequences), got {list(bootstrap_value.shape)}")


def vtrace(ops: Any, behaviour_actions_log_probs: Any, target_actions_log_probs: Any, discounts: Any, rewards: Any,
           values: Any, bootstrap_value: Any, clip_rho_threshold: float | None = 1.0,
           clip_pg_rho_threshold: float | None = 1.0) -> VTraceReturns:
    """:func:`parl_algorithms.vtrace.from_importance_weights` (same arguments after ``ops``, same checks and
    result) on the backend of the layer ``ops``: float32 tensors ``[T, B]`` of that framework, no gradient;
    numpy / list inputs are converted."""
    clip_rho = check_threshold(clip_rho_threshold, "clip_rho_threshold")
    clip_pg_rho = check_threshold(clip_pg_rho_threshold, "clip_pg_rho_threshold")
    inputs = (behaviour_actions_log_probs, target_actions_log_probs, discounts, rewards, values)
    tensors = [ops.as_float(value, name) for value, name in zip(inputs, TB_NAMES, strict=True)]
    bootstrap_value = ops.as_float(bootstrap_value, "bootstrap_value")
    check_shapes(tensors, bootstrap_value)
    behaviour_log_probs, target_log_probs, discounts, rewards, values = tensors
    with ops.no_grad():
        rhos = (target_log_probs - behaviour_log_probs).exp()
        clipped_rhos = rhos if clip_rho is None else rhos.clip(max=clip_rho)
        cs = rhos.clip(max=1.0)
        values_t_plus_1 = ops.concat([values[1:], bootstrap_value.unsqueeze(0)], axis=0)
        deltas = clipped_rhos * (rewards + discounts * values_t_plus_1 - values)
        decay = discounts * cs
        acc = bootstrap_value.clone().zero_()  # v_s - V(x_s), backwards from 0 after the last step
        steps = []
        for t in range(values.shape[0] - 1, -1, -1):
            acc = deltas[t] + decay[t] * acc
            steps.append(acc.unsqueeze(0))
        vs = (ops.concat(steps[::-1], axis=0) if steps else values) + values  # (T = 0: empty)
        vs_t_plus_1 = ops.concat([vs[1:], bootstrap_value.unsqueeze(0)], axis=0)
        clipped_pg_rhos = rhos if clip_pg_rho is None else rhos.clip(max=clip_pg_rho)
        pg_advantages = clipped_pg_rhos * (rewards + discounts * vs_t_plus_1 - values)
    return VTraceReturns(vs=vs.detach(), pg_advantages=pg_advantages.detach())
