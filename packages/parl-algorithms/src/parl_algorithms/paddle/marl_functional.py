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
# MADDPG (Lowe et al. 2017) and QMIX (Rashid et al. 2018): parl_algorithms.algorithms.maddpg / qmix
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


# ======================================================================================================
# COMA (Foerster et al. 2018, "Counterfactual Multi-Agent Policy Gradients")
# ======================================================================================================


def _coma_check(name: str, tensor: paddle.Tensor, shape: tuple) -> None:
    if tuple(tensor.shape) != tuple(shape):
        raise ValueError(f"{name}: expected shape {list(shape)}, got {list(tensor.shape)}")


def coma_policy_probs(logits: paddle.Tensor, avail_actions: paddle.Tensor, epsilon: float) -> paddle.Tensor:
    """COMA's behaviour policy: the softmax over the available actions mixed with epsilon of the uniform
    distribution over them (Foerster et al. 2018, sec. 6). Same contract as the torch function.

    Args:
        logits: float32 ``[..., A]``; avail_actions: float32 / bool ``[..., A]``; epsilon: in ``[0, 1]``.

    Returns:
        float32 ``[..., A]``, 0 on unavailable actions.
    """
    _coma_check("coma_policy_probs: avail_actions", avail_actions, tuple(logits.shape))
    avail = avail_actions.astype(logits.dtype)
    pi = paddle.nn.functional.softmax(paddle.where(avail == 0, paddle.full_like(logits, -1e10), logits), axis=-1)
    n_avail = avail.sum(-1, keepdim=True).clip(min=1.0)
    return ((1.0 - epsilon) * pi + epsilon / n_avail) * avail


def coma_counterfactual_advantage(q_values: paddle.Tensor, pi: paddle.Tensor, actions: paddle.Tensor
                                  ) -> tuple[paddle.Tensor, paddle.Tensor, paddle.Tensor]:
    """Counterfactual advantage (Foerster et al. 2018, eq. 4),
    ``A^a(s, u) = Q(s, u) - sum_u' pi^a(u' | tau^a) Q(s, (u^-a, u'))``; same contract as the torch function.

    Args:
        q_values, pi: float32 ``[..., n_agents, A]``; actions: int64 ``[..., n_agents]``.

    Returns:
        ``(advantage, q_taken, baseline)`` float32 ``[..., n_agents]``, without gradient.
    """
    _coma_check("coma_counterfactual_advantage: pi", pi, tuple(q_values.shape))
    _coma_check("coma_counterfactual_advantage: actions", actions, tuple(q_values.shape[:-1]))
    q_values, pi = q_values.detach(), pi.detach()
    q_taken = paddle.take_along_axis(q_values, actions.astype("int64").unsqueeze(-1), axis=-1).squeeze(-1)
    baseline = (pi * q_values).sum(-1)
    return q_taken - baseline, q_taken, baseline


def coma_td_lambda_targets(r: paddle.Tensor, q_next: paddle.Tensor, terminated: paddle.Tensor,
                           isover: paddle.Tensor, padded: paddle.Tensor, gamma: float,
                           td_lambda: float) -> paddle.Tensor:
    """TD(lambda) targets of COMA's critic (Foerster et al. 2018, sec. 4; Sutton & Barto 2018, eq. 12.18) by the
    backward recursion; same contract as the torch function.

    Args:
        r: float32 ``[E, T, 1]``; q_next: float32 ``[E, T, n_agents]`` (the target network's ``Q'_t``);
        terminated, isover, padded: float32 ``[E, T, 1]``; gamma, td_lambda: in ``[0, 1]``.

    Returns:
        float32 ``[E, T, n_agents]``, without gradient.
    """
    episodes, steps = q_next.shape[:2]
    for name, flag in (("r", r), ("terminated", terminated), ("isover", isover), ("padded", padded)):
        _coma_check(f"coma_td_lambda_targets: {name}", flag, (episodes, steps, 1))
    with paddle.no_grad():
        q_next = q_next.detach()
        cont = 1.0 - isover
        boot_scale = 1.0 - terminated
        live = 1.0 - padded
        targets = [None] * steps
        following = paddle.zeros_like(q_next[:, 0])
        for t in range(steps - 1, -1, -1):
            boot = boot_scale[:, t] * ((1.0 - td_lambda * cont[:, t]) * q_next[:, t]
                                       + td_lambda * cont[:, t] * following)
            following = live[:, t] * (r[:, t] + gamma * boot)
            targets[t] = following
        return paddle.stack(targets, axis=1)


def coma_critic_loss(q_taken: paddle.Tensor, targets: paddle.Tensor, mask: paddle.Tensor) -> paddle.Tensor:
    """Masked mean squared TD error, ``sum(mask * (G - Q(s, u))^2) / sum(mask)``; same contract as the torch
    function (all float32 ``[E, T, n_agents]``; returns a scalar)."""
    _coma_check("coma_critic_loss: targets", targets, tuple(q_taken.shape))
    _coma_check("coma_critic_loss: mask", mask, tuple(q_taken.shape))
    return ((targets.detach() - q_taken) ** 2 * mask).sum() / mask.sum().clip(min=1.0)


def coma_actor_loss(pi: paddle.Tensor, actions: paddle.Tensor, advantage: paddle.Tensor, mask: paddle.Tensor,
                    entropy_coeff: float = 0.0) -> tuple[paddle.Tensor, paddle.Tensor]:
    """COMA's policy-gradient loss (Foerster et al. 2018, eq. 4 in ``g = E[sum_a grad log pi^a A^a]``), masked
    mean, minus ``entropy_coeff`` times the mean entropy; same contract as the torch function.

    Args:
        pi: float32 ``[E, T, n_agents, A]``; actions: int64 ``[E, T, n_agents]``; advantage, mask: float32
            ``[E, T, n_agents]``; entropy_coeff: >= 0.

    Returns:
        ``(loss, entropy)`` float32 scalars.
    """
    _coma_check("coma_actor_loss: actions", actions, tuple(pi.shape[:-1]))
    _coma_check("coma_actor_loss: advantage", advantage, tuple(pi.shape[:-1]))
    _coma_check("coma_actor_loss: mask", mask, tuple(pi.shape[:-1]))
    pi_taken = paddle.take_along_axis(pi, actions.astype("int64").unsqueeze(-1), axis=-1).squeeze(-1)
    log_pi_taken = paddle.log(paddle.where(mask > 0, pi_taken, paddle.ones_like(pi_taken)).clip(min=1e-10))
    count = mask.sum().clip(min=1.0)
    entropy = (-(pi * paddle.log(pi.clip(min=1e-10))).sum(-1) * mask).sum() / count
    loss = -(advantage.detach() * log_pi_taken * mask).sum() / count
    if entropy_coeff:
        loss = loss - entropy_coeff * entropy
    return loss, entropy.detach()


# (end of COMA)
