"""Numerically stable numpy helpers (PARL's ``np_softmax`` and ``np_cross_entropy``)."""

from __future__ import annotations

import numpy as np

__all__ = ["np_cross_entropy", "np_softmax"]


def np_softmax(logits, axis: int = -1) -> np.ndarray:
    """Softmax along ``axis``, computed stably (the maximum is subtracted first).

    Args:
        logits: float [..., n].
        axis: the axis to normalise over.

    Returns:
        Probabilities with the shape of ``logits`` (float64 unless ``logits`` is float32).
    """
    logits = np.asarray(logits)
    if not np.issubdtype(logits.dtype, np.floating):
        logits = logits.astype(np.float64)
    shifted = logits - np.max(logits, axis=axis, keepdims=True)
    exp = np.exp(shifted)
    return exp / np.sum(exp, axis=axis, keepdims=True)


def np_cross_entropy(probs, labels) -> np.ndarray:
    """Cross entropy ``-log probs[i, labels[i]]`` of each row.

    Args:
        probs: float [B, n], rows summing to 1.
        labels: int [B] (or [B, 1]), class indices in ``[0, n)``.

    Returns:
        float [B].

    Raises:
        ValueError: ``probs`` is not 2-D, the batch sizes differ, or a label is out of range.
    """
    probs = np.asarray(probs)
    labels = np.asarray(labels).reshape(-1)
    if probs.ndim != 2 or probs.shape[0] != labels.shape[0]:
        raise ValueError(f"np_cross_entropy expects probs [B, n] and labels [B], got {probs.shape} and {labels.shape}")
    if labels.size and (labels.min() < 0 or labels.max() >= probs.shape[1]):
        raise ValueError(f"np_cross_entropy: labels must lie in [0, {probs.shape[1]})")
    return -np.log(np.maximum(probs[np.arange(len(labels)), labels], 1e-12))
