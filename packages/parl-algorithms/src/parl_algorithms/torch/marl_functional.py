"""Pure, shape-checked loss and target functions of the multi-agent algorithms (torch).

Same contract as :mod:`parl_algorithms.torch.functional`: tensors in, tensors out, no side effects, a
``ValueError`` naming the expected shapes when inputs do not fit, and each function cites the equation of
its paper. The other backend's module has the same names and is tested against this one on the same inputs.
Sections, one per algorithm: MADDPG, QMIX, MAPPO (with PopArt), COMA.
"""

from __future__ import annotations

import torch

from parl_algorithms.algorithms.marl_functional import bind
from parl_algorithms.torch import ops

# ======================================================================================================
# MADDPG (Lowe et al. 2017), QMIX (Rashid et al. 2018), COMA (Foerster et al. 2018): parl_algorithms.algorithms
# ======================================================================================================

globals().update(bind(ops, __name__))


# ======================================================================================================
# MAPPO (Yu et al. 2022, "The Surprising Effectiveness of PPO in Cooperative Multi-Agent Games") and PopArt
# (van Hasselt et al. 2016, "Learning values across many orders of magnitude")
# ======================================================================================================


def _mappo_column(name: str, value: torch.Tensor, batch: int) -> torch.Tensor:
    if value.ndim == 1:
        value = value.unsqueeze(1)
    if tuple(value.shape) != (batch, 1):
        raise ValueError(f"{name} must be [B, 1] (or [B]) with B={batch}, got {tuple(value.shape)}")
    return value


def masked_mean(x: torch.Tensor, active_masks: torch.Tensor | None) -> torch.Tensor:
    """``sum(x * m) / sum(m)`` (PARL's MAPPO mean over active agents), or ``mean(x)`` when ``active_masks`` is None.

    Args:
        x: float32 ``[B, 1]`` (or ``[B]``).
        active_masks: float32 ``[B, 1]`` (or ``[B]``), 1 where the agent was active, or ``None``.

    Returns:
        0-d float32.
    """
    x = _mappo_column("x", x, x.shape[0])
    if active_masks is None:
        return x.mean()
    active_masks = _mappo_column("active_masks", active_masks, x.shape[0]).to(x.dtype)
    return (x * active_masks).sum() / active_masks.sum()


def huber_loss(error: torch.Tensor, delta: float) -> torch.Tensor:
    """Elementwise Huber loss ``e^2 / 2`` for ``|e| <= delta``, ``delta * (|e| - delta / 2)`` beyond (Huber 1964).

    PARL's (and the MAPPO repo's) ``huber_loss`` weights the linear part with ``e > delta``, so an error below
    ``-delta`` costs 0 and has no gradient; this one is symmetric.

    Args:
        error: float32 ``[...]``.
        delta: > 0.

    Returns:
        float32 of ``error``'s shape.
    """
    if not delta > 0:
        raise ValueError(f"huber_loss: delta must be > 0, got {delta}")
    abs_error = error.abs()
    return torch.where(abs_error <= delta, 0.5 * error.pow(2), delta * (abs_error - 0.5 * delta))


def mappo_value_loss(values: torch.Tensor, value_preds: torch.Tensor, returns: torch.Tensor, clip_param: float,
                     huber_delta: float | None, active_masks: torch.Tensor | None = None) -> torch.Tensor:
    """MAPPO's clipped value loss (Yu et al. 2022, eq. 2 and the value-clipping suggestion, Huber as in PARL):

    ``V_clip = V_old + clip(V - V_old, -eps, eps)``, ``L = max(huber(R - V), huber(R - V_clip))``, averaged over
    the active agents (``sum(L * m) / sum(m)``) or over all rows. ``huber_delta=None`` uses ``e^2 / 2``.

    Args:
        values: float32 ``[B, 1]`` (or ``[B]``) current predictions (with gradient), PopArt-normalised when it is on.
        value_preds: float32 ``[B, 1]`` predictions at collection time, same scale.
        returns: float32 ``[B, 1]`` value targets, same scale (PopArt: ``normalize(returns)``).
        clip_param: epsilon > 0.
        huber_delta: Huber's delta > 0, or ``None`` for the squared error.
        active_masks: float32 ``[B, 1]`` or ``None``.

    Returns:
        0-d float32.

    Raises:
        ValueError: shapes differ or a parameter is out of range.
    """
    batch = values.shape[0]
    values = _mappo_column("values", values, batch)
    value_preds = _mappo_column("value_preds", value_preds, batch)
    returns = _mappo_column("returns", returns, batch)
    if not clip_param > 0:
        raise ValueError(f"mappo_value_loss: clip_param must be > 0, got {clip_param}")
    clipped = value_preds + (values - value_preds).clamp(-clip_param, clip_param)
    error_clipped, error_original = returns - clipped, returns - values
    if huber_delta is None:
        loss_clipped, loss_original = 0.5 * error_clipped.pow(2), 0.5 * error_original.pow(2)
    else:
        loss_clipped, loss_original = huber_loss(error_clipped, huber_delta), huber_loss(error_original, huber_delta)
    return masked_mean(torch.max(loss_original, loss_clipped), active_masks)


def mappo_policy_loss(log_probs: torch.Tensor, old_log_probs: torch.Tensor, adv_targ: torch.Tensor,
                      clip_param: float, active_masks: torch.Tensor | None = None) -> torch.Tensor:
    """MAPPO's clipped surrogate (Yu et al. 2022, eq. 1; PPO: Schulman et al. 2017, eq. 7), negated:

    ``ratio = exp(log_probs - old_log_probs)`` per action component, ``-sum_k min(ratio A, clip(ratio) A)``
    per row, averaged over the active agents (PARL: a MultiDiscrete action's components each get a ratio).

    Args:
        log_probs: float32 ``[B, k]`` (k = 1, or the MultiDiscrete components), with gradient.
        old_log_probs: float32 ``[B, k]`` at collection time.
        adv_targ: float32 ``[B, 1]`` (or ``[B]``) advantages.
        clip_param: epsilon > 0.
        active_masks: float32 ``[B, 1]`` or ``None``.

    Returns:
        0-d float32.
    """
    if log_probs.ndim != 2 or tuple(old_log_probs.shape) != tuple(log_probs.shape):
        raise ValueError(f"mappo_policy_loss: log_probs and old_log_probs must both be [B, k], got "
                         f"{tuple(log_probs.shape)} and {tuple(old_log_probs.shape)}")
    adv_targ = _mappo_column("adv_targ", adv_targ, log_probs.shape[0])
    if not clip_param > 0:
        raise ValueError(f"mappo_policy_loss: clip_param must be > 0, got {clip_param}")
    ratio = torch.exp(log_probs - old_log_probs)
    surrogate = torch.min(ratio * adv_targ, ratio.clamp(1.0 - clip_param, 1.0 + clip_param) * adv_targ)
    return masked_mean(-surrogate.sum(dim=-1, keepdim=True), active_masks)


def popart_update(mean: torch.Tensor, mean_sq: torch.Tensor, debiasing_term: torch.Tensor, batch: torch.Tensor,
                  beta: float, norm_axes: int = 1) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """PopArt's running statistics after one batch of targets (van Hasselt et al. 2016, eq. 4-5, with the
    bias-corrected exponential moving average of PARL / the MAPPO repo):

    ``mean' = beta mean + (1 - beta) E[y]``, ``mean_sq' = beta mean_sq + (1 - beta) E[y^2]``,
    ``debiasing' = beta debiasing + (1 - beta)``; ``E`` over the first ``norm_axes`` axes.

    Args:
        mean, mean_sq: float32 ``[out]`` (``[1]`` for a scalar value).
        debiasing_term: float32 0-d.
        batch: float32 ``[B, ..., out]`` targets (unnormalised returns).
        beta: decay in (0, 1).
        norm_axes: how many leading axes of ``batch`` are averaged.

    Returns:
        ``(mean', mean_sq', debiasing_term')``, new tensors.
    """
    axes = tuple(range(norm_axes))
    batch = batch.to(mean.dtype)
    return (mean * beta + batch.mean(dim=axes) * (1.0 - beta),
            mean_sq * beta + batch.pow(2).mean(dim=axes) * (1.0 - beta),
            debiasing_term * beta + (1.0 - beta))


def popart_debiased_mean_var(mean: torch.Tensor, mean_sq: torch.Tensor, debiasing_term: torch.Tensor,
                             epsilon: float) -> tuple[torch.Tensor, torch.Tensor]:
    """``(mu, sigma^2)``: ``mu = mean / max(d, epsilon)``, ``sigma^2 = max(mean_sq / max(d, epsilon) - mu^2, 1e-2)``
    (PARL's ``debiased_mean_var``; the variance floor 1e-2 keeps sigma >= 0.1).

    Returns:
        ``(mu [out], sigma^2 [out])``.
    """
    denominator = debiasing_term.clamp(min=epsilon)
    debiased_mean = mean / denominator
    return debiased_mean, (mean_sq / denominator - debiased_mean.pow(2)).clamp(min=1e-2)


def popart_preserve_outputs(weight: torch.Tensor, bias: torch.Tensor, old_mean: torch.Tensor,
                            old_std: torch.Tensor, new_mean: torch.Tensor,
                            new_std: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """The output layer rescaled so that its unnormalised outputs are unchanged (van Hasselt et al. 2016, eq. 6,
    "Preserving Outputs Precisely"): ``W' = W sigma / sigma'``, ``b' = (sigma b + mu - mu') / sigma'``, so
    ``sigma' (W' h + b') + mu' = sigma (W h + b) + mu`` for every ``h``.

    Args:
        weight: float32 ``[out, in]`` (torch's Linear layout).
        bias: float32 ``[out]``.
        old_mean, old_std, new_mean, new_std: float32 ``[out]``.

    Returns:
        ``(weight', bias')``, new tensors.
    """
    return weight * (old_std / new_std).reshape(-1, *([1] * (weight.ndim - 1))), \
        (old_std * bias + old_mean - new_mean) / new_std


# (end of MAPPO)
