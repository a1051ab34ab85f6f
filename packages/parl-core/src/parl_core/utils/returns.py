"""Discounted returns and generalized advantage estimation as pure, shape-checked numpy functions.

Every function takes time as axis 0 (``[T, *B]``: T steps of a batch of B environments, or ``[T]`` for a
single trajectory) and returns new float32 arrays; no input is modified.
"""

from __future__ import annotations

import numpy as np

__all__ = ["discounted_returns", "compute_gae", "calc_discount_sum_rewards", "calc_gae"]


def _check_factor(value: float, name: str) -> float:
    value = float(value)
    if not 0.0 <= value <= 1.0:
        raise ValueError(f"{name} must be in [0, 1], got {value}")
    return value


def _as_time_major(array, name: str, shape: tuple[int, ...] | None, dtype=np.float32) -> np.ndarray:
    array = np.asarray(array)
    if array.dtype == object or not (np.issubdtype(array.dtype, np.number) or array.dtype == np.bool_):
        raise TypeError(f"{name} must be a numeric array, got dtype {array.dtype}")
    if shape is None:
        if array.ndim == 0:
            raise ValueError(f"{name} must have a time axis (shape [T, *B]), got a scalar; "
                             "wrap a single step as [value]")
    elif array.shape != shape:
        raise ValueError(f"{name} has shape {array.shape}, expected {shape} (the shape of rewards, "
                         "time on axis 0)")
    return array.astype(dtype, copy=False)


def discounted_returns(rewards, gamma: float, *, dones=None, bootstrap_value=None) -> np.ndarray:
    """Discounted sums of future rewards, cut at episode ends.

    ``G_t = r_t + gamma * (1 - done_t) * G_{t+1}`` with ``G_T = bootstrap_value``.

    Args:
        rewards: float32 ``[T, *B]``, time on axis 0.
        gamma: discount factor in [0, 1].
        dones: bool ``[T, *B]``; ``dones[t]`` means the episode ended after step t (nothing is carried
            back across it). Default: no episode ends inside the batch.
        bootstrap_value: float32 ``[*B]``, the value estimate V(s_T) of the state after the last step
            (default 0, i.e. the trajectory ended).

    Returns:
        float32 ``[T, *B]``: the returns G_t.

    Raises:
        ValueError: ``gamma`` is outside [0, 1], or ``dones`` / ``bootstrap_value`` do not match the
            shape of ``rewards`` (``[T, *B]`` / ``[*B]``).
        TypeError: an input is not numeric.
    """
    gamma = _check_factor(gamma, "gamma")
    rewards = _as_time_major(rewards, "rewards", None)
    batch_shape = rewards.shape[1:]
    if dones is None:
        not_done = np.ones_like(rewards)
    else:
        not_done = 1.0 - _as_time_major(dones, "dones", rewards.shape, dtype=np.bool_).astype(np.float32)
    if bootstrap_value is None:
        running = np.zeros(batch_shape, dtype=np.float32)
    else:
        running = np.asarray(bootstrap_value, dtype=np.float32)
        if running.shape != batch_shape:
            raise ValueError(f"bootstrap_value has shape {running.shape}, expected {batch_shape} "
                             "(rewards.shape[1:], one value per environment)")
    returns = np.empty_like(rewards)
    for t in range(rewards.shape[0] - 1, -1, -1):
        running = rewards[t] + gamma * not_done[t] * running
        returns[t] = running
    return returns


def compute_gae(rewards, values, next_values, terminated, truncated, *, gamma: float,
                gae_lambda: float) -> tuple[np.ndarray, np.ndarray]:
    """Generalized advantage estimation (Schulman et al. 2016, "High-Dimensional Continuous Control
    Using Generalized Advantage Estimation", arXiv:1506.02438).

    ``delta_t = r_t + gamma * (1 - terminated_t) * next_values_t - values_t`` and
    ``A_t = delta_t + gamma * gae_lambda * (1 - (terminated_t | truncated_t)) * A_{t+1}``;
    ``returns = A + values`` (the value-function targets). A truncated step (time limit) still
    bootstraps from ``next_values_t``; only a terminated step does not.

    Args:
        rewards: float32 ``[T, *B]``, time on axis 0.
        values: float32 ``[T, *B]``, V(s_t).
        next_values: float32 ``[T, *B]``, V(s_{t+1}); for a step that ended an episode by truncation, the
            value of the final observation before the reset.
        terminated: bool ``[T, *B]``, the episode reached a terminal state at step t.
        truncated: bool ``[T, *B]``, the episode was cut (e.g. time limit) at step t.
        gamma: discount factor in [0, 1].
        gae_lambda: GAE's lambda in [0, 1] (0: one-step TD, 1: Monte-Carlo).

    Returns:
        ``(advantages, returns)``, both float32 ``[T, *B]``.

    Raises:
        ValueError: shapes differ from ``rewards``' or ``gamma`` / ``gae_lambda`` is outside [0, 1].
        TypeError: an input is not numeric.
    """
    gamma = _check_factor(gamma, "gamma")
    gae_lambda = _check_factor(gae_lambda, "gae_lambda")
    rewards = _as_time_major(rewards, "rewards", None)
    shape = rewards.shape
    values = _as_time_major(values, "values", shape)
    next_values = _as_time_major(next_values, "next_values", shape)
    terminated = _as_time_major(terminated, "terminated", shape, dtype=np.bool_)
    truncated = _as_time_major(truncated, "truncated", shape, dtype=np.bool_)
    not_terminal = 1.0 - terminated.astype(np.float32)
    not_end = 1.0 - (terminated | truncated).astype(np.float32)
    deltas = rewards + gamma * not_terminal * next_values - values
    advantages = np.empty_like(rewards)
    running = np.zeros(shape[1:], dtype=np.float32)
    for t in range(shape[0] - 1, -1, -1):
        running = deltas[t] + gamma * gae_lambda * not_end[t] * running
        advantages[t] = running
    return advantages, (advantages + values).astype(np.float32)


def calc_discount_sum_rewards(rewards, gamma: float) -> np.ndarray:
    """PARL's 1-D helper: ``G_t = r_t + gamma * G_{t+1}`` over one complete episode.

    Args:
        rewards: float [T], one episode's rewards.
        gamma: discount factor in [0, 1].

    Returns:
        float32 [T].

    Raises:
        ValueError: ``rewards`` is not 1-D, or ``gamma`` is outside [0, 1]. For batches use
            :func:`discounted_returns`.
    """
    rewards = np.asarray(rewards, dtype=np.float32)
    if rewards.ndim != 1:
        raise ValueError(f"calc_discount_sum_rewards expects 1-D rewards [T], got shape {rewards.shape}; "
                         "use discounted_returns for [T, B] batches")
    return discounted_returns(rewards, gamma)


def calc_gae(rewards, values, next_value: float, gamma: float, lam: float) -> np.ndarray:
    """PARL's 1-D GAE helper: the advantages of one trajectory segment.

    ``delta_t = r_t + gamma * V_{t+1} - V_t`` (with ``V_T = next_value``), ``A_t = sum_k (gamma*lam)^k
    delta_{t+k}``. No episode ends inside the segment (pass ``next_value=0`` if it ended).

    Args:
        rewards: float [T].
        values: float [T], V(s_t).
        next_value: V(s_T), the value after the last step.
        gamma: discount factor in [0, 1].
        lam: GAE's lambda in [0, 1].

    Returns:
        float32 [T]: the advantages (add ``values`` for the value targets).

    Raises:
        ValueError: ``rewards`` / ``values`` are not 1-D of equal length, or a factor is outside [0, 1].
    """
    rewards = np.asarray(rewards, dtype=np.float32)
    values = np.asarray(values, dtype=np.float32)
    if rewards.ndim != 1 or values.shape != rewards.shape:
        raise ValueError(f"calc_gae expects 1-D rewards and values of equal length, got {rewards.shape} and "
                         f"{values.shape}; use compute_gae for [T, B] batches")
    next_values = np.append(values[1:], np.float32(next_value))
    no_end = np.zeros(rewards.shape, dtype=np.bool_)
    advantages, _ = compute_gae(rewards, values, next_values, no_end, no_end, gamma=gamma, gae_lambda=lam)
    return advantages
