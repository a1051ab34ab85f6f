"""PARL's policy distributions on paddle (``parl.core.paddle.policy_distribution``): the paddle twin of
``parl_core.torch.policy_distribution``, same classes, arguments, shapes and math.

``CategoricalDistribution(logits)`` and ``DiagGaussianDistribution((mean, logstd))`` are the usual
discrete / diagonal-Gaussian policies; ``SoftCategoricalDistribution`` samples the Gumbel-softmax
relaxation of a categorical (Jang et al. 2017, "Categorical reparameterization with Gumbel-softmax";
Maddison et al. 2017), which MADDPG (Lowe et al. 2017) uses for differentiable discrete actions, and
``SoftMultiCategoricalDistribution`` does so for each part of a MultiDiscrete space.

All are computed with ``log_softmax`` (no ``exp`` of unshifted logits), so large logits do not overflow.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np
import paddle
import paddle.nn.functional as F

__all__ = [
    "CategoricalDistribution",
    "DiagGaussianDistribution",
    "PolicyDistribution",
    "SoftCategoricalDistribution",
    "SoftMultiCategoricalDistribution",
]

_TINY = float(np.finfo(np.float32).tiny)


def _check_rank(tensor: Any, rank: int, name: str, shape: str) -> paddle.Tensor:
    if not isinstance(tensor, paddle.Tensor) or tensor.ndim != rank:
        got = tuple(tensor.shape) if hasattr(tensor, "shape") else type(tensor).__name__
        raise ValueError(f"{name} must be a paddle tensor {shape}, got {got}; add a batch axis with x.unsqueeze(0)")
    return tensor


class PolicyDistribution:
    """Interface: ``sample()``, ``entropy()``, ``logp(actions)``, ``kl(other)``, each over a batch."""

    def sample(self) -> paddle.Tensor:
        """Sample one action per batch row."""
        raise NotImplementedError

    def entropy(self) -> paddle.Tensor:
        """Entropy per batch row: float32 ``[B]``."""
        raise NotImplementedError

    def kl(self, other: PolicyDistribution) -> paddle.Tensor:
        """``KL(self || other)`` per batch row: float32 ``[B]``."""
        raise NotImplementedError

    def logp(self, actions: paddle.Tensor) -> paddle.Tensor:
        """Log-probability of ``actions`` per batch row: float32 ``[B]``."""
        raise NotImplementedError


class DiagGaussianDistribution(PolicyDistribution):
    """A Gaussian with diagonal covariance, for continuous actions.

    Args:
        logits: ``(mean, logstd)``, each float32 ``[B, act_dim]``.

    Raises:
        ValueError: ``logits`` is not a pair of ``[B, act_dim]`` tensors of one shape.
    """

    def __init__(self, logits: Sequence[paddle.Tensor]) -> None:
        if len(logits) != 2:
            raise ValueError(f"DiagGaussianDistribution takes logits=(mean, logstd), got {len(logits)} tensors")
        mean = _check_rank(logits[0], 2, "mean", "[B, act_dim]")
        logstd = _check_rank(logits[1], 2, "logstd", "[B, act_dim]")
        if mean.shape != logstd.shape:
            raise ValueError(f"mean {tuple(mean.shape)} and logstd {tuple(logstd.shape)} must have one shape; "
                             "expand a state-independent logstd with logstd.expand_as(mean)")
        self.logits = logits
        self.mean, self.logstd = mean, logstd
        self.std = paddle.exp(logstd)

    def sample(self) -> paddle.Tensor:
        """float32 ``[B, act_dim]``: ``mean + std * N(0, 1)``."""
        return self.mean + self.std * paddle.randn(self.mean.shape, dtype=self.mean.dtype)

    def entropy(self) -> paddle.Tensor:
        """float32 ``[B]``: ``sum(logstd + 0.5 * log(2 pi e))``."""
        return paddle.sum(self.logstd + 0.5 * math.log(2.0 * math.pi * math.e), axis=1)

    def logp(self, actions: paddle.Tensor) -> paddle.Tensor:
        """float32 ``[B]`` for ``actions`` float32 ``[B, act_dim]``."""
        actions = _check_rank(actions, 2, "actions", "[B, act_dim]")
        z = (actions - self.mean) / self.std
        return -0.5 * paddle.sum(z * z, axis=1) - paddle.sum(self.logstd, axis=1) \
            - 0.5 * math.log(2.0 * math.pi) * actions.shape[1]

    def kl(self, other: PolicyDistribution) -> paddle.Tensor:
        """float32 ``[B]``: ``KL(self || other)`` of two diagonal Gaussians."""
        if not isinstance(other, DiagGaussianDistribution):
            raise TypeError(f"kl needs another DiagGaussianDistribution, got {type(other).__name__}")
        ratio = (self.std ** 2 + (self.mean - other.mean) ** 2) / (2.0 * other.std ** 2)
        return paddle.sum(other.logstd - self.logstd + ratio - 0.5, axis=1)


class CategoricalDistribution(PolicyDistribution):
    """A categorical distribution over ``num_actions`` discrete actions.

    Args:
        logits: float32 ``[B, num_actions]``, unnormalised log-probabilities.

    Raises:
        ValueError: ``logits`` is not a ``[B, num_actions]`` tensor.
    """

    def __init__(self, logits: paddle.Tensor) -> None:
        self.logits = _check_rank(logits, 2, "logits", "[B, num_actions]")
        self.log_probs = F.log_softmax(logits, axis=-1)

    def sample(self) -> paddle.Tensor:
        """int64 ``[B]`` action indices."""
        return paddle.multinomial(self.log_probs.exp(), num_samples=1).squeeze(1)

    def entropy(self) -> paddle.Tensor:
        """float32 ``[B]``."""
        return -paddle.sum(self.log_probs.exp() * self.log_probs, axis=1)

    def logp(self, actions: paddle.Tensor, eps: float = 1e-6) -> paddle.Tensor:
        """float32 ``[B]``: ``log(p(actions) + eps)`` (PARL's ``eps`` keeps it finite for p = 0).

        Args:
            actions: int64 ``[B]`` indices in ``[0, num_actions)``.
            eps: added to the probability before the log.
        """
        actions = _check_rank(actions, 1, "actions", "[B]")
        index = actions.astype("int64").unsqueeze(1)
        prob = paddle.take_along_axis(self.log_probs.exp(), index, axis=1).squeeze(1)
        return paddle.log(prob + eps)

    def kl(self, other: PolicyDistribution) -> paddle.Tensor:
        """float32 ``[B]``: ``KL(self || other)``."""
        if not isinstance(other, CategoricalDistribution):
            raise TypeError(f"kl needs another CategoricalDistribution, got {type(other).__name__}")
        return paddle.sum(self.log_probs.exp() * (self.log_probs - other.log_probs), axis=1)


class SoftCategoricalDistribution(CategoricalDistribution):
    """A categorical whose ``sample()`` is the Gumbel-softmax relaxation (differentiable in ``logits``).

    Args:
        logits: float32 ``[B, num_actions]``.
    """

    def sample(self) -> paddle.Tensor:
        """float32 ``[B, num_actions]``: ``softmax(logits + g)`` with Gumbel noise ``g = -log(-log(u))``."""
        uniform = paddle.uniform(self.logits.shape, dtype=self.logits.dtype, min=_TINY, max=1.0)
        return F.softmax(self.logits - paddle.log(-paddle.log(uniform)), axis=-1)


class SoftMultiCategoricalDistribution(PolicyDistribution):
    """Gumbel-softmax relaxations of the parts of a MultiDiscrete action space.

    Part ``i`` takes values ``low[i] .. high[i]``, so ``high[i] - low[i] + 1`` consecutive logits.

    Args:
        logits: float32 ``[B, sum(high - low + 1)]``.
        low: int ``[num_parts]``, the lowest value of each part.
        high: int ``[num_parts]``, the highest value of each part.

    Raises:
        ValueError: ``low`` / ``high`` differ in length or have ``high < low``, or the logits' last axis is
            not ``sum(high - low + 1)``.
    """

    def __init__(self, logits: paddle.Tensor, low: Any, high: Any) -> None:
        low, high = np.asarray(low, dtype=np.int64), np.asarray(high, dtype=np.int64)
        if low.shape != high.shape or low.ndim != 1 or np.any(high < low):
            raise ValueError(f"low {low.tolist()} and high {high.tolist()} must be equal-length lists with high >= low")
        sizes = (high - low + 1).tolist()
        if logits.shape[-1] != sum(sizes):
            raise ValueError(f"logits' last axis has {logits.shape[-1]} entries; the parts need sum(high - low + 1) "
                             f"= {sum(sizes)}")
        self.logits, self.low, self.high = logits, low, high
        self.categoricals = [SoftCategoricalDistribution(part) for part in paddle.split(logits, sizes, axis=-1)]

    def sample(self) -> paddle.Tensor:
        """float32 ``[B, sum(high - low + 1)]``: each part's relaxed one-hot sample, shifted by ``low`` as PARL."""
        parts = [low + dist.sample() for low, dist in zip(self.low.tolist(), self.categoricals, strict=True)]
        return paddle.concat(parts, axis=-1)

    def entropy(self) -> paddle.Tensor:
        """float32 ``[B]``: the sum of the parts' entropies."""
        return paddle.stack([dist.entropy() for dist in self.categoricals]).sum(0)

    def kl(self, other: PolicyDistribution) -> paddle.Tensor:
        """float32 ``[B]``: the sum of the parts' KL divergences."""
        if not isinstance(other, SoftMultiCategoricalDistribution) or len(other.categoricals) != len(self.categoricals):
            raise TypeError("kl needs a SoftMultiCategoricalDistribution with the same parts")
        return paddle.stack([p.kl(q) for p, q in zip(self.categoricals, other.categoricals, strict=True)]).sum(0)
