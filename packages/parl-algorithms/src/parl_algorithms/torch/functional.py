"""Pure, shape-checked loss and target functions shared by the algorithms.

Every function takes and returns torch tensors, has no side effects (except :func:`soft_update_`,
which updates its first argument in place, as its trailing underscore says), and raises
``ValueError`` naming the expected shapes when its inputs do not fit.
"""

from __future__ import annotations

import math
from collections.abc import Iterable

import torch

__all__ = [
    "td_target",
    "double_dqn_target",
    "clipped_double_q_target",
    "sac_target",
    "target_policy_smoothing",
    "normalize_advantages",
    "clipped_surrogate_loss",
    "clipped_value_loss",
    "approx_kl",
    "clip_fraction",
    "soft_update_",
    "tanh_gaussian_log_prob",
    "cql_penalty",
    "categorical_log_prob_entropy",
    "categorical_sample",
    "gaussian_log_prob_entropy",
]


def _same_shape(**tensors: torch.Tensor) -> torch.Size:
    shapes = {name: tuple(t.shape) for name, t in tensors.items()}
    first = next(iter(shapes.values()))
    if any(s != first for s in shapes.values()):
        raise ValueError(f"shape mismatch: {shapes}; all of these must have the same shape [B]")
    return torch.Size(first)


def _check_gamma(gamma: float) -> float:
    gamma = float(gamma)
    if not 0.0 <= gamma <= 1.0:
        raise ValueError(f"gamma must be in [0, 1], got {gamma}")
    return gamma


def td_target(reward: torch.Tensor, next_value: torch.Tensor, terminal: torch.Tensor, gamma: float) -> torch.Tensor:
    """One-step TD target ``r + gamma * (1 - terminal) * V(s')`` (Sutton & Barto 2018, eq. 6.2).

    Args:
        reward: float32 ``[B]``.
        next_value: float32 ``[B]`` value of the next state (e.g. ``max_a Q_target(s', a)``).
        terminal: float32 / bool ``[B]``, 1 where the episode terminated (not truncated) at this step.
        gamma: discount in ``[0, 1]``.

    Returns:
        float32 ``[B]``.

    Raises:
        ValueError: shapes differ or ``gamma`` is outside ``[0, 1]``.
    """
    _same_shape(reward=reward, next_value=next_value, terminal=terminal)
    gamma = _check_gamma(gamma)
    return reward + gamma * (1.0 - terminal.float()) * next_value


def double_dqn_target(reward: torch.Tensor, next_q_online: torch.Tensor, next_q_target: torch.Tensor,
                      terminal: torch.Tensor, gamma: float) -> torch.Tensor:
    """Double-DQN target: the online net picks ``a* = argmax_a Q(s', a)``, the target net values it
    (van Hasselt et al. 2016, "Deep Reinforcement Learning with Double Q-learning").

    Args:
        reward: float32 ``[B]``.
        next_q_online: float32 ``[B, A]`` online Q values of the next state.
        next_q_target: float32 ``[B, A]`` target Q values of the next state.
        terminal: float32 / bool ``[B]``.
        gamma: discount in ``[0, 1]``.

    Returns:
        float32 ``[B]`` = ``r + gamma * (1 - terminal) * Q_target(s', argmax_a Q_online(s', a))``.

    Raises:
        ValueError: shapes do not fit.
    """
    if next_q_online.ndim != 2 or next_q_online.shape != next_q_target.shape:
        raise ValueError(f"next_q_online {tuple(next_q_online.shape)} and next_q_target "
                         f"{tuple(next_q_target.shape)} must both be [B, num_actions]")
    best = next_q_online.argmax(dim=1, keepdim=True)
    return td_target(reward, next_q_target.gather(1, best).squeeze(1), terminal, gamma)


def clipped_double_q_target(reward: torch.Tensor, next_q1: torch.Tensor, next_q2: torch.Tensor,
                            terminal: torch.Tensor, gamma: float) -> torch.Tensor:
    """TD3's target ``r + gamma * (1 - terminal) * min(Q1', Q2')`` (Fujimoto et al. 2018, "Addressing
    Function Approximation Error in Actor-Critic Methods").

    Args:
        reward, next_q1, next_q2: float32 ``[B]``.
        terminal: float32 / bool ``[B]``.
        gamma: discount in ``[0, 1]``.

    Returns:
        float32 ``[B]``.
    """
    _same_shape(next_q1=next_q1, next_q2=next_q2)
    return td_target(reward, torch.min(next_q1, next_q2), terminal, gamma)


def sac_target(reward: torch.Tensor, next_q1: torch.Tensor, next_q2: torch.Tensor, next_log_prob: torch.Tensor,
               terminal: torch.Tensor, gamma: float, alpha: float | torch.Tensor) -> torch.Tensor:
    """Soft Bellman target ``r + gamma * (1 - terminal) * (min(Q1', Q2') - alpha * log pi(a'|s'))``
    (Haarnoja et al. 2018, "Soft Actor-Critic Algorithms and Applications", eq. 3).

    Args:
        reward, next_q1, next_q2, next_log_prob: float32 ``[B]``; ``a' ~ pi(.|s')``.
        terminal: float32 / bool ``[B]``.
        gamma: discount in ``[0, 1]``.
        alpha: entropy temperature (>= 0), a float or a 0-d tensor.

    Returns:
        float32 ``[B]``.
    """
    _same_shape(next_q1=next_q1, next_q2=next_q2, next_log_prob=next_log_prob)
    soft_value = torch.min(next_q1, next_q2) - alpha * next_log_prob
    return td_target(reward, soft_value, terminal, gamma)


def target_policy_smoothing(next_action: torch.Tensor, policy_noise: float, noise_clip: float,
                            max_action: float = 1.0, generator: torch.Generator | None = None) -> torch.Tensor:
    """TD3's target policy smoothing: ``clip(a' + clip(N(0, policy_noise), -noise_clip, noise_clip), -max, max)``.

    Args:
        next_action: float32 ``[B, act_dim]`` from the target actor.
        policy_noise: standard deviation of the Gaussian noise (>= 0).
        noise_clip: bound on the noise magnitude (>= 0).
        max_action: bound on the action magnitude (> 0).
        generator: optional torch generator for reproducible noise.

    Returns:
        float32 ``[B, act_dim]``.
    """
    if policy_noise < 0 or noise_clip < 0 or max_action <= 0:
        raise ValueError(f"policy_noise ({policy_noise}) and noise_clip ({noise_clip}) must be >= 0 and "
                         f"max_action ({max_action}) > 0")
    noise = torch.randn(next_action.shape, generator=generator, dtype=next_action.dtype,
                        device=next_action.device) * policy_noise
    noise = noise.clamp(-noise_clip, noise_clip)
    return (next_action + noise).clamp(-max_action, max_action)


def normalize_advantages(adv: torch.Tensor, eps: float = 1e-8) -> torch.Tensor:
    """``(adv - mean) / (std + eps)`` over the whole batch (unbiased std, as PARL / SB3 do).

    Args:
        adv: float32 ``[B]``; a batch of one is returned centred (zero).

    Returns:
        float32 ``[B]``.
    """
    if adv.ndim != 1:
        raise ValueError(f"adv must be 1-D [B], got shape {tuple(adv.shape)}")
    if adv.numel() < 2:
        return adv - adv.mean()
    return (adv - adv.mean()) / (adv.std() + eps)


def clipped_surrogate_loss(log_prob: torch.Tensor, old_log_prob: torch.Tensor, adv: torch.Tensor,
                           clip_param: float) -> torch.Tensor:
    """PPO's clipped surrogate objective, negated for minimisation (Schulman et al. 2017, eq. 7).

    ``-mean(min(ratio * A, clip(ratio, 1 - eps, 1 + eps) * A))`` with ``ratio = exp(log_prob - old_log_prob)``.

    Args:
        log_prob: float32 ``[B]`` log pi_theta(a|s) (with gradient).
        old_log_prob: float32 ``[B]`` log-probs under the behaviour policy.
        adv: float32 ``[B]`` advantages.
        clip_param: epsilon (> 0).

    Returns:
        0-d float32 loss.
    """
    _same_shape(log_prob=log_prob, old_log_prob=old_log_prob, adv=adv)
    if clip_param <= 0:
        raise ValueError(f"clip_param must be > 0, got {clip_param}")
    ratio = torch.exp(log_prob - old_log_prob)
    surr1 = ratio * adv
    surr2 = torch.clamp(ratio, 1.0 - clip_param, 1.0 + clip_param) * adv
    return -torch.min(surr1, surr2).mean()


def clipped_value_loss(value: torch.Tensor, old_value: torch.Tensor, returns: torch.Tensor,
                       clip_param: float | None) -> torch.Tensor:
    """PPO's value loss ``0.5 * mean(max((V - R)^2, (V_old + clip(V - V_old, -eps, eps) - R)^2))``
    (as in OpenAI baselines / PARL); with ``clip_param=None`` the plain ``0.5 * mean((V - R)^2)``.

    Args:
        value: float32 ``[B]`` current value predictions (with gradient).
        old_value: float32 ``[B]`` predictions at collection time.
        returns: float32 ``[B]`` value targets.
        clip_param: epsilon (> 0) or ``None``.

    Returns:
        0-d float32 loss.
    """
    _same_shape(value=value, old_value=old_value, returns=returns)
    loss = (value - returns).pow(2)
    if clip_param is not None:
        if clip_param <= 0:
            raise ValueError(f"clip_param must be > 0 or None, got {clip_param}")
        clipped = old_value + torch.clamp(value - old_value, -clip_param, clip_param)
        loss = torch.max(loss, (clipped - returns).pow(2))
    return 0.5 * loss.mean()


def approx_kl(log_prob: torch.Tensor, old_log_prob: torch.Tensor) -> torch.Tensor:
    """Low-variance estimator of KL(old || new): ``mean((ratio - 1) - log ratio)`` (Schulman 2020,
    "Approximating KL divergence"; as in CleanRL / SB3).

    Args:
        log_prob, old_log_prob: float32 ``[B]``.

    Returns:
        0-d float32, >= 0.
    """
    _same_shape(log_prob=log_prob, old_log_prob=old_log_prob)
    log_ratio = log_prob - old_log_prob
    return ((torch.exp(log_ratio) - 1.0) - log_ratio).mean()


def clip_fraction(log_prob: torch.Tensor, old_log_prob: torch.Tensor, clip_param: float) -> torch.Tensor:
    """Fraction of samples whose ratio lies outside ``[1 - clip_param, 1 + clip_param]``.

    Args:
        log_prob, old_log_prob: float32 ``[B]``.

    Returns:
        0-d float32 in ``[0, 1]``.
    """
    _same_shape(log_prob=log_prob, old_log_prob=old_log_prob)
    return ((torch.exp(log_prob - old_log_prob) - 1.0).abs() > clip_param).float().mean()


def soft_update_(target: Iterable[torch.Tensor], source: Iterable[torch.Tensor], tau: float) -> None:
    """Polyak averaging in place: ``target = (1 - tau) * target + tau * source`` (Lillicrap et al. 2016).

    Args:
        target: tensors updated in place.
        source: tensors of the same shapes, in the same order.
        tau: in ``[0, 1]``; 1 copies the source.

    Raises:
        ValueError: ``tau`` outside ``[0, 1]``, or the two lists differ in length or shapes.
    """
    tau = float(tau)
    if not 0.0 <= tau <= 1.0:
        raise ValueError(f"tau must be in [0, 1], got {tau}")
    target, source = list(target), list(source)
    if len(target) != len(source):
        raise ValueError(f"soft_update_: {len(target)} target tensors but {len(source)} source tensors")
    with torch.no_grad():
        for t, s in zip(target, source, strict=True):
            if t.shape != s.shape:
                raise ValueError(f"soft_update_: shape {tuple(t.shape)} vs {tuple(s.shape)}")
            t.lerp_(s, tau)


def tanh_gaussian_log_prob(pre_tanh: torch.Tensor, mean: torch.Tensor, log_std: torch.Tensor,
                           eps: float = 1e-6) -> torch.Tensor:
    """Log-density of ``a = tanh(u)``, ``u ~ N(mean, exp(log_std))``, summed over action dimensions
    (Haarnoja et al. 2018, appendix C): ``sum(log N(u) - log(1 - tanh(u)^2 + eps))``.

    Args:
        pre_tanh, mean, log_std: float32 ``[B, act_dim]``.
        eps: numerical floor inside the log.

    Returns:
        float32 ``[B]``.
    """
    _same_shape(pre_tanh=pre_tanh, mean=mean, log_std=log_std)
    var = torch.exp(2.0 * log_std)
    normal_logp = -((pre_tanh - mean) ** 2) / (2.0 * var) - log_std - 0.5 * math.log(2.0 * math.pi)
    return (normal_logp - torch.log(1.0 - torch.tanh(pre_tanh).pow(2) + eps)).sum(-1)


def cql_penalty(q_data: torch.Tensor, q_sampled: torch.Tensor, temperature: float = 1.0) -> torch.Tensor:
    """Conservative Q-learning regulariser ``mean(T * logsumexp(Q(s, a_k) / T, k) - Q(s, a_data))``
    (Kumar et al. 2020, "Conservative Q-Learning for Offline RL", CQL(H), eq. 4).

    For CQL's importance-sampled variant (``min_q_version=3``) the caller passes
    ``q_sampled`` already corrected by the sampling log-densities (``Q(s, a_k) - log mu(a_k|s)``).

    Args:
        q_data: float32 ``[B]`` Q values of the dataset actions.
        q_sampled: float32 ``[B, K]`` Q values of K sampled actions per state.
        temperature: T > 0.

    Returns:
        0-d float32.
    """
    if q_sampled.ndim != 2 or q_data.ndim != 1 or q_sampled.shape[0] != q_data.shape[0]:
        raise ValueError(f"q_data must be [B] and q_sampled [B, K], got {tuple(q_data.shape)} and "
                         f"{tuple(q_sampled.shape)}")
    if temperature <= 0:
        raise ValueError(f"temperature must be > 0, got {temperature}")
    return (torch.logsumexp(q_sampled / temperature, dim=1) * temperature - q_data).mean()


def categorical_log_prob_entropy(logits: torch.Tensor, action: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Log-probability of ``action`` and entropy of the categorical distribution ``softmax(logits)``.

    Same values as ``torch.distributions.Categorical(logits=logits)``'s ``log_prob`` / ``entropy``, in
    three tensor ops (no argument validation, no broadcasting), for the hot loop of PPO / A2C.

    Args:
        logits: float32 ``[B, num_actions]`` unnormalised log-probabilities.
        action: int64 ``[B]`` indices.

    Returns:
        ``(log_prob [B], entropy [B])``.
    """
    if logits.ndim != 2 or action.shape != logits.shape[:1]:
        raise ValueError(f"logits must be [B, num_actions] and action [B], got {tuple(logits.shape)} and "
                         f"{tuple(action.shape)}")
    log_p = torch.log_softmax(logits, dim=-1)
    return log_p.gather(1, action.unsqueeze(1)).squeeze(1), -(log_p.exp() * log_p).sum(-1)


def categorical_sample(probs: torch.Tensor, generator: torch.Generator | None = None) -> torch.Tensor:
    """One draw per row from the categorical distribution ``probs``: the same draws as
    ``torch.multinomial(probs, 1).squeeze(1)``, without its validation passes.

    ``torch.multinomial`` draws one sample as an exponential race, the Gumbel-max trick in exponential form
    (Maddison, Tarlow and Minka 2014, "A* Sampling"): ``argmax(probs / E)`` with ``E ~ Exp(1)`` i.i.d., drawn
    by ``exponential_`` on the generator. Here the same
    three calls are issued directly, so the actions and the generator's state afterwards equal
    ``torch.multinomial``'s (checked in the tests for the installed torch); the checks it runs first (``max``,
    ``min`` and row sums of ``probs``, each read back to the host: ~60 % of its time for a batch of 8) are
    skipped, so ``probs`` must be valid (``softmax`` of finite logits).

    Args:
        probs: float32 ``[B, num_actions]``, non-negative, each row summing to > 0 (need not be normalised).
        generator: the random generator (default: torch's global one).

    Returns:
        int64 ``[B]`` action indices.

    Raises:
        ValueError: ``probs`` is not 2-D.
    """
    if probs.ndim != 2:
        raise ValueError(f"probs must be [B, num_actions], got shape {tuple(probs.shape)}")
    return probs.div(torch.empty_like(probs).exponential_(generator=generator)).argmax(-1)


def gaussian_log_prob_entropy(mean: torch.Tensor, log_std: torch.Tensor,
                              action: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Log-density of ``action`` under the diagonal Gaussian ``N(mean, exp(log_std)^2)`` and its entropy,
    each summed over action dimensions (as ``Normal(mean, std).log_prob(a).sum(-1)`` / ``.entropy().sum(-1)``).

    Args:
        mean: float32 ``[B, act_dim]``.
        log_std: float32 ``[B, act_dim]`` or ``[act_dim]`` (broadcast).
        action: float32 ``[B, act_dim]``.

    Returns:
        ``(log_prob [B], entropy [B])``.
    """
    if mean.shape != action.shape or log_std.shape[-1] != mean.shape[-1]:
        raise ValueError(f"mean {tuple(mean.shape)}, log_std {tuple(log_std.shape)} and action "
                         f"{tuple(action.shape)} must all be [B, act_dim] (log_std may be [act_dim])")
    log_std = log_std.expand_as(mean)
    half_log_2pi = 0.5 * math.log(2.0 * math.pi)
    z = (action - mean) * torch.exp(-log_std)
    log_prob = (-0.5 * z.pow(2) - log_std - half_log_2pi).sum(-1)
    entropy = (0.5 + half_log_2pi + log_std).sum(-1)
    return log_prob, entropy
