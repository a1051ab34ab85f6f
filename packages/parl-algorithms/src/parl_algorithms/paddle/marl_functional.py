"""Pure, shape-checked loss and target functions of the multi-agent algorithms (paddle).

Same contract as :mod:`parl_algorithms.paddle.functional`: tensors in, tensors out, no side effects, a
``ValueError`` naming the expected shapes when inputs do not fit, and each function cites the equation of
its paper. The other backend's module has the same names and is tested against this one on the same inputs.
Sections, one per algorithm: MADDPG, QMIX, MAPPO (with PopArt), COMA.
"""

from __future__ import annotations

import paddle

from parl_algorithms.algorithms.marl_functional import bind
from parl_algorithms.paddle import ops

# ======================================================================================================
# MADDPG (Lowe et al. 2017), QMIX (Rashid et al. 2018), COMA (Foerster et al. 2018): parl_algorithms.algorithms
# ======================================================================================================

globals().update(bind(ops, __name__))


# ======================================================================================================
# MAPPO (Yu et al. 2022, "The Surprising Effectiveness of PPO in Cooperative Multi-Agent Games") and PopArt
# (van Hasselt et al. 2016, "Learning values across many orders of magnitude")
# (the torch module's functions of the same names: docstrings there)
# ======================================================================================================


def _mappo_column(name: str, value: paddle.Tensor, batch: int) -> paddle.Tensor:
    if value.ndim == 1:
        value = value.unsqueeze(1)
    if tuple(value.shape) != (batch, 1):
        raise ValueError(f"{name} must be [B, 1] (or [B]) with B={batch}, got {tuple(value.shape)}")
    return value


def masked_mean(x: paddle.Tensor, active_masks: paddle.Tensor | None) -> paddle.Tensor:
    """``sum(x * m) / sum(m)``, or ``mean(x)`` when ``active_masks`` is None; ``x``, ``m`` float32 ``[B, 1]``."""
    x = _mappo_column("x", x, x.shape[0])
    if active_masks is None:
        return x.mean()
    active_masks = _mappo_column("active_masks", active_masks, x.shape[0]).astype(x.dtype)
    return (x * active_masks).sum() / active_masks.sum()


def huber_loss(error: paddle.Tensor, delta: float) -> paddle.Tensor:
    """Elementwise symmetric Huber loss (``e^2 / 2`` inside ``[-delta, delta]``, linear beyond)."""
    if not delta > 0:
        raise ValueError(f"huber_loss: delta must be > 0, got {delta}")
    abs_error = error.abs()
    return paddle.where(abs_error <= delta, 0.5 * error.pow(2), delta * (abs_error - 0.5 * delta))


def mappo_value_loss(values: paddle.Tensor, value_preds: paddle.Tensor, returns: paddle.Tensor, clip_param: float,
                     huber_delta: float | None, active_masks: paddle.Tensor | None = None) -> paddle.Tensor:
    """MAPPO's clipped (Huber) value loss over active rows; all ``[B, 1]`` (Yu et al. 2022)."""
    batch = values.shape[0]
    values = _mappo_column("values", values, batch)
    value_preds = _mappo_column("value_preds", value_preds, batch)
    returns = _mappo_column("returns", returns, batch)
    if not clip_param > 0:
        raise ValueError(f"mappo_value_loss: clip_param must be > 0, got {clip_param}")
    clipped = value_preds + (values - value_preds).clip(-clip_param, clip_param)
    error_clipped, error_original = returns - clipped, returns - values
    if huber_delta is None:
        loss_clipped, loss_original = 0.5 * error_clipped.pow(2), 0.5 * error_original.pow(2)
    else:
        loss_clipped, loss_original = huber_loss(error_clipped, huber_delta), huber_loss(error_original, huber_delta)
    return masked_mean(paddle.maximum(loss_original, loss_clipped), active_masks)


def mappo_policy_loss(log_probs: paddle.Tensor, old_log_probs: paddle.Tensor, adv_targ: paddle.Tensor,
                      clip_param: float, active_masks: paddle.Tensor | None = None) -> paddle.Tensor:
    """MAPPO's clipped surrogate, negated, summed over action components, averaged over active rows."""
    if log_probs.ndim != 2 or tuple(old_log_probs.shape) != tuple(log_probs.shape):
        raise ValueError(f"mappo_policy_loss: log_probs and old_log_probs must both be [B, k], got "
                         f"{tuple(log_probs.shape)} and {tuple(old_log_probs.shape)}")
    adv_targ = _mappo_column("adv_targ", adv_targ, log_probs.shape[0])
    if not clip_param > 0:
        raise ValueError(f"mappo_policy_loss: clip_param must be > 0, got {clip_param}")
    ratio = paddle.exp(log_probs - old_log_probs)
    surrogate = paddle.minimum(ratio * adv_targ, ratio.clip(1.0 - clip_param, 1.0 + clip_param) * adv_targ)
    return masked_mean(-surrogate.sum(axis=-1, keepdim=True), active_masks)


def popart_update(mean: paddle.Tensor, mean_sq: paddle.Tensor, debiasing_term: paddle.Tensor, batch: paddle.Tensor,
                  beta: float, norm_axes: int = 1) -> tuple[paddle.Tensor, paddle.Tensor, paddle.Tensor]:
    """PopArt's bias-corrected moving moments after one batch of targets (van Hasselt et al. 2016, eq. 4-5)."""
    axes = list(range(norm_axes))
    batch = batch.astype(mean.dtype)
    return (mean * beta + batch.mean(axis=axes) * (1.0 - beta),
            mean_sq * beta + batch.pow(2).mean(axis=axes) * (1.0 - beta),
            debiasing_term * beta + (1.0 - beta))


def popart_debiased_mean_var(mean: paddle.Tensor, mean_sq: paddle.Tensor, debiasing_term: paddle.Tensor,
                             epsilon: float) -> tuple[paddle.Tensor, paddle.Tensor]:
    """``(mu, max(mean_sq / d - mu^2, 1e-2))`` with ``mu = mean / d``, ``d = max(debiasing_term, epsilon)``."""
    denominator = debiasing_term.clip(min=epsilon)
    debiased_mean = mean / denominator
    return debiased_mean, (mean_sq / denominator - debiased_mean.pow(2)).clip(min=1e-2)


def popart_preserve_outputs(weight: paddle.Tensor, bias: paddle.Tensor, old_mean: paddle.Tensor,
                            old_std: paddle.Tensor, new_mean: paddle.Tensor,
                            new_std: paddle.Tensor) -> tuple[paddle.Tensor, paddle.Tensor]:
    """``W' = W sigma / sigma'``, ``b' = (sigma b + mu - mu') / sigma'`` (van Hasselt et al. 2016, eq. 6); ``weight``
    in paddle's Linear layout ``[in, out]``."""
    return weight * (old_std / new_std), (old_std * bias + old_mean - new_mean) / new_std


# (end of MAPPO)
