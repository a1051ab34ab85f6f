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
# MADDPG (Lowe et al. 2017) and QMIX (Rashid et al. 2018): parl_algorithms.algorithms.maddpg / qmix
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


# ======================================================================================================
# COMA (Foerster et al. 2018, "Counterfactual Multi-Agent Policy Gradients")
# ======================================================================================================


def _coma_check(name: str, tensor: torch.Tensor, shape: tuple) -> None:
    if tuple(tensor.shape) != tuple(shape):
        raise ValueError(f"{name}: expected shape {list(shape)}, got {list(tensor.shape)}")


def coma_policy_probs(logits: torch.Tensor, avail_actions: torch.Tensor, epsilon: float) -> torch.Tensor:
    """COMA's behaviour policy: the softmax over the available actions mixed with epsilon of the uniform
    distribution over them (Foerster et al. 2018, sec. 6: "epsilon-bounded" exploration; PARL's and PyMARL's
    ``(1 - epsilon) * pi + epsilon / |available|``).

    Args:
        logits: float32 ``[..., A]`` actor outputs.
        avail_actions: float32 / bool ``[..., A]``, 1 where the action is available; a row of zeros (padding)
            gives a row of zeros.
        epsilon: in ``[0, 1]``.

    Returns:
        float32 ``[..., A]`` probabilities, 0 on unavailable actions, summing to 1 where any action is available.

    Raises:
        ValueError: the shapes differ.
    """
    _coma_check("coma_policy_probs: avail_actions", avail_actions, tuple(logits.shape))
    avail = avail_actions.to(logits.dtype)
    pi = torch.softmax(logits.masked_fill(avail == 0, -1e10), dim=-1)
    n_avail = avail.sum(-1, keepdim=True).clamp_min(1.0)
    return ((1.0 - epsilon) * pi + epsilon / n_avail) * avail


def coma_counterfactual_advantage(q_values: torch.Tensor, pi: torch.Tensor, actions: torch.Tensor
                                  ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Counterfactual advantage (Foerster et al. 2018, eq. 4):
    ``A^a(s, u) = Q(s, u) - sum_u' pi^a(u' | tau^a) Q(s, (u^-a, u'))``.

    Args:
        q_values: float32 ``[..., n_agents, A]``: ``Q(s, (u^-a, u'))`` for every action ``u'`` of agent ``a``
            (the COMA critic's output, other agents' actions fixed).
        pi: float32 ``[..., n_agents, A]`` agent ``a``'s policy.
        actions: int64 ``[..., n_agents]`` the actions taken.

    Returns:
        ``(advantage, q_taken, baseline)``, each float32 ``[..., n_agents]``; no gradient flows through any of
        them (the advantage weights the score function only).

    Raises:
        ValueError: the shapes do not fit.
    """
    _coma_check("coma_counterfactual_advantage: pi", pi, tuple(q_values.shape))
    _coma_check("coma_counterfactual_advantage: actions", actions, tuple(q_values.shape[:-1]))
    q_values, pi = q_values.detach(), pi.detach()
    q_taken = q_values.gather(-1, actions.long().unsqueeze(-1)).squeeze(-1)
    baseline = (pi * q_values).sum(-1)
    return q_taken - baseline, q_taken, baseline


def coma_td_lambda_targets(r: torch.Tensor, q_next: torch.Tensor, terminated: torch.Tensor, isover: torch.Tensor,
                           padded: torch.Tensor, gamma: float, td_lambda: float) -> torch.Tensor:
    """TD(lambda) targets of COMA's critic (Foerster et al. 2018, sec. 4; Sutton & Barto 2018, eq. 12.18),
    by the backward recursion over the episode:
    ``G_t = r_t + gamma * (1 - terminated_t) * Q'_t`` on an episode's last step (``isover_t = 1``), else
    ``G_t = r_t + gamma * ((1 - lambda) * Q'_t + lambda * G_{t+1})``; 0 on padding. ``lambda = 0`` is one-step
    TD, ``lambda = 1`` the Monte Carlo return. (PARL's weighted sum of n-step returns, in O(T) instead of
    O(T^2); numpy reference: ``parl_algorithms._coma.td_lambda_targets``.)

    Args:
        r: float32 ``[E, T, 1]`` team reward.
        q_next: float32 ``[E, T, n_agents]``: ``Q'_t``, the TARGET network's value of step t + 1's joint action
            (``Q_target(s_{t+1}, u_{t+1})[u^a_{t+1}]``).
        terminated, isover, padded: float32 ``[E, T, 1]`` flags (see ``parl_algorithms._coma``).
        gamma: discount; td_lambda: lambda, both in ``[0, 1]``.

    Returns:
        float32 ``[E, T, n_agents]``, without gradient.

    Raises:
        ValueError: the shapes do not fit.
    """
    episodes, steps = q_next.shape[:2]
    for name, flag in (("r", r), ("terminated", terminated), ("isover", isover), ("padded", padded)):
        _coma_check(f"coma_td_lambda_targets: {name}", flag, (episodes, steps, 1))
    with torch.no_grad():
        cont = 1.0 - isover
        boot_scale = 1.0 - terminated
        live = 1.0 - padded
        targets = [None] * steps
        following = torch.zeros_like(q_next[:, 0])
        for t in range(steps - 1, -1, -1):
            boot = boot_scale[:, t] * ((1.0 - td_lambda * cont[:, t]) * q_next[:, t]
                                       + td_lambda * cont[:, t] * following)
            following = live[:, t] * (r[:, t] + gamma * boot)
            targets[t] = following
        return torch.stack(targets, dim=1)


def coma_critic_loss(q_taken: torch.Tensor, targets: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """Masked mean squared TD error of COMA's critic, ``sum(mask * (G - Q(s, u))^2) / sum(mask)``.

    Args:
        q_taken: float32 ``[E, T, n_agents]`` online ``Q(s_t, u_t)`` per agent.
        targets: float32 ``[E, T, n_agents]`` TD(lambda) targets (no gradient).
        mask: float32 ``[E, T, n_agents]``, 0 on padding.

    Returns:
        float32 scalar.
    """
    _coma_check("coma_critic_loss: targets", targets, tuple(q_taken.shape))
    _coma_check("coma_critic_loss: mask", mask, tuple(q_taken.shape))
    return ((targets.detach() - q_taken) ** 2 * mask).sum() / mask.sum().clamp_min(1.0)


def coma_actor_loss(pi: torch.Tensor, actions: torch.Tensor, advantage: torch.Tensor, mask: torch.Tensor,
                    entropy_coeff: float = 0.0) -> tuple[torch.Tensor, torch.Tensor]:
    """COMA's policy-gradient loss (Foerster et al. 2018, eq. 4 in the gradient
    ``g = E[sum_a grad log pi^a(u^a | tau^a) A^a(s, u)]``), masked mean over real steps and agents, minus
    ``entropy_coeff`` times the mean entropy (EPyMARL's regulariser; 0 in PARL).

    Args:
        pi: float32 ``[E, T, n_agents, A]`` behaviour policy (with gradient).
        actions: int64 ``[E, T, n_agents]``.
        advantage: float32 ``[E, T, n_agents]`` (no gradient).
        mask: float32 ``[E, T, n_agents]``, 0 on padding (its log-probabilities are not taken).
        entropy_coeff: weight of the entropy bonus, >= 0.

    Returns:
        ``(loss, entropy)`` float32 scalars (entropy: masked mean, without gradient).
    """
    _coma_check("coma_actor_loss: actions", actions, tuple(pi.shape[:-1]))
    _coma_check("coma_actor_loss: advantage", advantage, tuple(pi.shape[:-1]))
    _coma_check("coma_actor_loss: mask", mask, tuple(pi.shape[:-1]))
    pi_taken = pi.gather(-1, actions.long().unsqueeze(-1)).squeeze(-1)
    log_pi_taken = torch.log(torch.where(mask > 0, pi_taken, torch.ones_like(pi_taken)).clamp_min(1e-10))
    count = mask.sum().clamp_min(1.0)
    entropy = (-(pi * torch.log(pi.clamp_min(1e-10))).sum(-1) * mask).sum() / count
    loss = -(advantage.detach() * log_pi_taken * mask).sum() / count
    if entropy_coeff:
        loss = loss - entropy_coeff * entropy
    return loss, entropy.detach()


# (end of COMA)
