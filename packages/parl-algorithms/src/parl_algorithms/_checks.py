"""Framework-free pieces shared by the torch and paddle IMPALA and A3C: IMPALA's loss record, hyperparameter and
input checks and their error messages (one text per error, whatever the backend)."""

from __future__ import annotations

from typing import Any, NamedTuple

from parl_algorithms._validation import positive, unit_interval

__all__ = ["VTraceLoss", "CONTINUOUS_HINT", "impala_hyperparameters", "check_unroll_batch", "a3c_hyperparameters",
           "a3c_logits", "a3c_value", "number"]

CONTINUOUS_HINT = ("IMPALA supports Discrete action spaces only (its V-trace ratios are of categorical "
                   "policies); for a continuous (Box) action space use PPO(continuous_action=True), SAC or TD3")


class VTraceLoss(NamedTuple):
    """The losses of one ``IMPALA.learn`` call (scalar tensors of the backend; PARL's ``VTraceLoss`` fields).

    Attributes:
        total_loss: ``pi_loss + vf_loss_coeff * vf_loss + entropy_coeff * entropy``.
        pi_loss: ``-sum(log pi(a_s|x_s) * pg_advantages)``.
        vf_loss: ``0.5 * sum((V(x_s) - v_s)^2)``.
        entropy: ``sum(H(pi(.|x_s)))``.
    """

    total_loss: Any
    pi_loss: Any
    vf_loss: Any
    entropy: Any


def impala_hyperparameters(sample_batch_steps: Any, gamma: Any, vf_loss_coeff: Any, clip_rho_threshold: Any,
                           clip_pg_rho_threshold: Any, max_grad_norm: Any) -> dict[str, Any]:
    """IMPALA's checked hyperparameters with PARL's defaults filled in (``None`` -> default).

    Returns:
        ``{"sample_batch_steps": int, "gamma", "vf_loss_coeff", "clip_rho_threshold", "clip_pg_rho_threshold":
        float, "max_grad_norm": float or None}``.

    Raises:
        ValueError: a value is missing or out of range; the message gives an example.
    """
    if isinstance(sample_batch_steps, bool) or not isinstance(sample_batch_steps, int) or sample_batch_steps < 2:
        raise ValueError(f"IMPALA needs sample_batch_steps, the unroll length T (an int >= 2: the last step of "
                         f"each unroll only bootstraps), got {sample_batch_steps!r}; e.g. "
                         "IMPALA(model, sample_batch_steps=50)")
    vf = 0.5 if vf_loss_coeff is None else vf_loss_coeff
    if isinstance(vf, bool) or not isinstance(vf, (int, float)) or vf < 0:
        raise ValueError(f"IMPALA needs vf_loss_coeff >= 0, got {vf!r}; e.g. IMPALA(model, vf_loss_coeff=0.5)")
    return {
        "sample_batch_steps": sample_batch_steps,
        "gamma": unit_interval(0.99 if gamma is None else gamma, "gamma", "IMPALA", "0.99"),
        "vf_loss_coeff": float(vf),
        "clip_rho_threshold": positive(1.0 if clip_rho_threshold is None else clip_rho_threshold,
                                       "clip_rho_threshold", "IMPALA", "1.0"),
        "clip_pg_rho_threshold": positive(1.0 if clip_pg_rho_threshold is None else clip_pg_rho_threshold,
                                          "clip_pg_rho_threshold", "IMPALA", "1.0"),
        "max_grad_norm": None if max_grad_norm is None else positive(max_grad_norm, "max_grad_norm", "IMPALA",
                                                                     "40.0"),
    }


def check_unroll_batch(batch: int, steps: int) -> None:
    """Raise ``ValueError`` unless ``batch`` is a whole number of unrolls of ``steps`` steps."""
    if batch % steps:
        raise ValueError(f"IMPALA.learn: the batch B={batch} must be a whole number of unrolls of "
                         f"sample_batch_steps={steps} steps (B = E x T, env-major as PARL); send whole unrolls or "
                         "build IMPALA with the actors' unroll length")


def a3c_hyperparameters(vf_loss_coeff: Any, max_grad_norm: Any, reduction: Any) -> dict[str, Any]:
    """A3C's checked constructor arguments: ``{"vf_loss_coeff": float, "max_grad_norm": float or None,
    "reduction": "sum" | "mean"}``.

    Raises:
        ValueError: ``vf_loss_coeff`` is missing or negative, ``max_grad_norm`` not > 0, or ``reduction``
            unknown.
    """
    if vf_loss_coeff is None or isinstance(vf_loss_coeff, bool) or not isinstance(vf_loss_coeff, (int, float)) \
            or not vf_loss_coeff >= 0:
        raise ValueError(f"A3C needs vf_loss_coeff >= 0, got vf_loss_coeff={vf_loss_coeff!r}; "
                         "e.g. A3C(model, vf_loss_coeff=0.5)")
    max_grad_norm = None if max_grad_norm is None else positive(max_grad_norm, "max_grad_norm", "A3C", "40")
    if reduction not in ("sum", "mean"):
        raise ValueError(f"A3C: reduction must be 'sum' (PARL) or 'mean', got {reduction!r}")
    return {"vf_loss_coeff": float(vf_loss_coeff), "max_grad_norm": max_grad_norm, "reduction": reduction}


def a3c_logits(logits: Any, batch: int) -> Any:
    """``logits`` (any tensor type) if it is ``[B, num_actions]``.

    Raises:
        ValueError: not a 2-D tensor of ``batch`` rows (e.g. a continuous policy's ``(mean, std)``).
    """
    if isinstance(logits, (tuple, list)) or getattr(logits, "ndim", 0) != 2 or logits.shape[0] != batch:
        got = f"a {type(logits).__name__}" if isinstance(logits, (tuple, list)) else \
            f"shape {tuple(getattr(logits, 'shape', ()))}"
        raise ValueError(f"A3C needs model.policy(obs) to return logits float32 [B, num_actions], got {got}; "
                         "A3C is for Discrete action spaces (for a continuous Box space use "
                         "PPO(continuous_action=True), SAC or TD3)")
    return logits


def a3c_value(value: Any, batch: int) -> Any:
    """``value`` (any tensor type) ``[B]`` or ``[B, 1]`` as ``[B]``.

    Raises:
        ValueError: another shape.
    """
    if value.ndim == 2 and value.shape[1] == 1:
        value = value.squeeze(1)
    if value.ndim != 1 or value.shape[0] != batch:
        raise ValueError(f"A3C needs model.value(obs) to return float32 [B] or [B, 1], got shape "
                         f"{tuple(value.shape)} for B={batch}")
    return value


def number(value: Any, name: str, example: str) -> float:
    """``float(value)`` of a Python / numpy number or a one-element tensor (``Agent.learn`` passes tensors).

    Raises:
        TypeError: ``value`` is not a number; the message gives ``name=example``.
    """
    if hasattr(value, "item") and _size(value) == 1:
        value = value.item()
    try:
        if isinstance(value, (bool, str, bytes)) or value is None:
            raise TypeError
        return float(value)
    except (TypeError, ValueError):
        raise TypeError(f"A3C.learn: {name} must be a number, got {value!r}; e.g. {name}={example}") from None


def _size(value: Any) -> int:
    size = getattr(value, "size", None)  # numpy / paddle: an int; torch: a method
    if callable(size):
        size = value.numel()
    return int(size) if size is not None else -1
