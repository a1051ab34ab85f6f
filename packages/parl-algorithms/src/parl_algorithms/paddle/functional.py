"""Pure, shape-checked loss and target functions of the paddle algorithms.

Each function mirrors the one of the same name in :mod:`parl_algorithms.torch.functional` (same
arguments, shapes, formulas and errors; see its docstrings for the papers) on paddle tensors; the tests
check both on the same inputs.
"""

from __future__ import annotations

import math

import paddle

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
    "tanh_gaussian_log_prob",
    "cql_penalty",
    "categorical_log_prob_entropy",
    "gaussian_log_prob_entropy",
]


def _same_shape(**tensors: paddle.Tensor) -> None:
    shapes = {name: tuple(t.shape) for name, t in tensors.items()}
    first = next(iter(shapes.values()))
    if any(s != first for s in shapes.values()):
        raise ValueError(f"shape mismatch: {shapes}; all of these must have the same shape [B]")


def td_target(reward: paddle.Tensor, next_value: paddle.Tensor, terminal: paddle.Tensor,
              gamma: float) -> paddle.Tensor:
    """``r + gamma * (1 - terminal) * V(s')``: float32 ``[B]`` from ``[B]`` inputs (Sutton & Barto, eq. 6.2).

    Raises:
        ValueError: shapes differ or ``gamma`` is outside ``[0, 1]``.
    """
    _same_shape(reward=reward, next_value=next_value, terminal=terminal)
    gamma = float(gamma)
    if not 0.0 <= gamma <= 1.0:
        raise ValueError(f"gamma must be in [0, 1], got {gamma}")
    return reward + gamma * (1.0 - terminal.astype("float32")) * next_value


def double_dqn_target(reward: paddle.Tensor, next_q_online: paddle.Tensor, next_q_target: paddle.Tensor,
                      terminal: paddle.Tensor, gamma: float) -> paddle.Tensor:
    """Double-DQN target (van Hasselt et al. 2016): ``[B]`` from Q values ``[B, A]`` of both networks."""
    if next_q_online.ndim != 2 or next_q_online.shape != next_q_target.shape:
        raise ValueError(f"next_q_online {tuple(next_q_online.shape)} and next_q_target "
                         f"{tuple(next_q_target.shape)} must both be [B, num_actions]")
    best = next_q_online.argmax(axis=1, keepdim=True)
    return td_target(reward, paddle.take_along_axis(next_q_target, best, axis=1).squeeze(1), terminal, gamma)


def clipped_double_q_target(reward: paddle.Tensor, next_q1: paddle.Tensor, next_q2: paddle.Tensor,
                            terminal: paddle.Tensor, gamma: float) -> paddle.Tensor:
    """TD3's ``r + gamma * (1 - terminal) * min(Q1', Q2')`` (Fujimoto et al. 2018), all ``[B]``."""
    _same_shape(next_q1=next_q1, next_q2=next_q2)
    return td_target(reward, paddle.minimum(next_q1, next_q2), terminal, gamma)


def sac_target(reward: paddle.Tensor, next_q1: paddle.Tensor, next_q2: paddle.Tensor, next_log_prob: paddle.Tensor,
               terminal: paddle.Tensor, gamma: float, alpha: float) -> paddle.Tensor:
    """Soft Bellman target ``r + gamma * (1 - terminal) * (min(Q1', Q2') - alpha * log pi(a'|s'))``, ``[B]``."""
    _same_shape(next_q1=next_q1, next_q2=next_q2, next_log_prob=next_log_prob)
    return td_target(reward, paddle.minimum(next_q1, next_q2) - alpha * next_log_prob, terminal, gamma)


def target_policy_smoothing(next_action: paddle.Tensor, policy_noise: float, noise_clip: float,
                            max_action: float = 1.0) -> paddle.Tensor:
    """``clip(a' + clip(N(0, policy_noise), -noise_clip, noise_clip), -max, max)``: float32 ``[B, act_dim]``."""
    if policy_noise < 0 or noise_clip < 0 or max_action <= 0:
        raise ValueError(f"policy_noise ({policy_noise}) and noise_clip ({noise_clip}) must be >= 0 and "
                         f"max_action ({max_action}) > 0")
    noise = paddle.clip(paddle.randn(next_action.shape, dtype=next_action.dtype) * policy_noise,
                        -noise_clip, noise_clip)
    return paddle.clip(next_action + noise, -max_action, max_action)


def normalize_advantages(adv: paddle.Tensor, eps: float = 1e-8) -> paddle.Tensor:
    """``(adv - mean) / (std + eps)`` over the batch ``[B]`` (unbiased std)."""
    if adv.ndim != 1:
        raise ValueError(f"adv must be 1-D [B], got shape {tuple(adv.shape)}")
    if adv.shape[0] < 2:
        return adv - adv.mean()
    return (adv - adv.mean()) / (adv.std() + eps)


def clipped_surrogate_loss(log_prob: paddle.Tensor, old_log_prob: paddle.Tensor, adv: paddle.Tensor,
                           clip_param: float) -> paddle.Tensor:
    """PPO's negated clipped surrogate (Schulman et al. 2017, eq. 7): 0-d from ``[B]`` inputs."""
    _same_shape(log_prob=log_prob, old_log_prob=old_log_prob, adv=adv)
    if clip_param <= 0:
        raise ValueError(f"clip_param must be > 0, got {clip_param}")
    ratio = paddle.exp(log_prob - old_log_prob)
    surr2 = paddle.clip(ratio, 1.0 - clip_param, 1.0 + clip_param) * adv
    return -paddle.minimum(ratio * adv, surr2).mean()


def clipped_value_loss(value: paddle.Tensor, old_value: paddle.Tensor, returns: paddle.Tensor,
                       clip_param: float | None) -> paddle.Tensor:
    """PPO's value loss ``0.5 * mean(max((V - R)^2, (V_old + clip(V - V_old) - R)^2))``; plain with ``None``."""
    _same_shape(value=value, old_value=old_value, returns=returns)
    loss = (value - returns).pow(2)
    if clip_param is not None:
        if clip_param <= 0:
            raise ValueError(f"clip_param must be > 0 or None, got {clip_param}")
        clipped = old_value + paddle.clip(value - old_value, -clip_param, clip_param)
        loss = paddle.maximum(loss, (clipped - returns).pow(2))
    return 0.5 * loss.mean()


def approx_kl(log_prob: paddle.Tensor, old_log_prob: paddle.Tensor) -> paddle.Tensor:
    """``mean((ratio - 1) - log ratio)``, the low-variance KL(old || new) estimator: 0-d, >= 0."""
    _same_shape(log_prob=log_prob, old_log_prob=old_log_prob)
    log_ratio = log_prob - old_log_prob
    return ((paddle.exp(log_ratio) - 1.0) - log_ratio).mean()


def clip_fraction(log_prob: paddle.Tensor, old_log_prob: paddle.Tensor, clip_param: float) -> paddle.Tensor:
    """Fraction of samples whose ratio lies outside ``[1 - clip_param, 1 + clip_param]``: 0-d in ``[0, 1]``."""
    _same_shape(log_prob=log_prob, old_log_prob=old_log_prob)
    return ((paddle.exp(log_prob - old_log_prob) - 1.0).abs() > clip_param).astype("float32").mean()


def tanh_gaussian_log_prob(pre_tanh: paddle.Tensor, mean: paddle.Tensor, log_std: paddle.Tensor,
                           eps: float = 1e-6) -> paddle.Tensor:
    """Log-density of ``tanh(u)``, ``u ~ N(mean, exp(log_std))``, summed over actions: ``[B]`` from ``[B, A]``."""
    _same_shape(pre_tanh=pre_tanh, mean=mean, log_std=log_std)
    var = paddle.exp(2.0 * log_std)
    normal_logp = -((pre_tanh - mean) ** 2) / (2.0 * var) - log_std - 0.5 * math.log(2.0 * math.pi)
    return (normal_logp - paddle.log(1.0 - paddle.tanh(pre_tanh).pow(2) + eps)).sum(-1)


def cql_penalty(q_data: paddle.Tensor, q_sampled: paddle.Tensor, temperature: float = 1.0) -> paddle.Tensor:
    """``mean(T * logsumexp(Q(s, a_k) / T, k) - Q(s, a_data))`` (Kumar et al. 2020): 0-d from ``[B]``, ``[B, K]``."""
    if q_sampled.ndim != 2 or q_data.ndim != 1 or q_sampled.shape[0] != q_data.shape[0]:
        raise ValueError(f"q_data must be [B] and q_sampled [B, K], got {tuple(q_data.shape)} and "
                         f"{tuple(q_sampled.shape)}")
    if temperature <= 0:
        raise ValueError(f"temperature must be > 0, got {temperature}")
    return (paddle.logsumexp(q_sampled / temperature, axis=1) * temperature - q_data).mean()


def categorical_log_prob_entropy(logits: paddle.Tensor,
                                 action: paddle.Tensor) -> tuple[paddle.Tensor, paddle.Tensor]:
    """``(log_prob [B], entropy [B])`` of ``softmax(logits)`` (``[B, A]``) at int64 ``action [B]``."""
    if logits.ndim != 2 or tuple(action.shape) != tuple(logits.shape[:1]):
        raise ValueError(f"logits must be [B, num_actions] and action [B], got {tuple(logits.shape)} and "
                         f"{tuple(action.shape)}")
    log_p = paddle.nn.functional.log_softmax(logits, axis=-1)
    log_prob = paddle.take_along_axis(log_p, action.unsqueeze(1), axis=1).squeeze(1)
    return log_prob, -(log_p.exp() * log_p).sum(-1)


def gaussian_log_prob_entropy(mean: paddle.Tensor, log_std: paddle.Tensor,
                              action: paddle.Tensor) -> tuple[paddle.Tensor, paddle.Tensor]:
    """``(log_prob [B], entropy [B])`` of the diagonal Gaussian ``N(mean, exp(log_std)^2)`` at ``action``."""
    if mean.shape != action.shape or log_std.shape[-1] != mean.shape[-1]:
        raise ValueError(f"mean {tuple(mean.shape)}, log_std {tuple(log_std.shape)} and action "
                         f"{tuple(action.shape)} must all be [B, act_dim] (log_std may be [act_dim])")
    log_std = log_std.expand_as(mean)
    half_log_2pi = 0.5 * math.log(2.0 * math.pi)
    z = (action - mean) * paddle.exp(-log_std)
    log_prob = (-0.5 * z.pow(2) - log_std - half_log_2pi).sum(-1)
    return log_prob, (0.5 + half_log_2pi + log_std).sum(-1)
