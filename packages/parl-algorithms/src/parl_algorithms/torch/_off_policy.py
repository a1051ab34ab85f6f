"""The off-policy actor-critic base (:mod:`parl_algorithms.algorithms._off_policy`) bound to torch, with torch's
fused soft target update."""

from __future__ import annotations

import torch

from parl_algorithms.algorithms import _off_policy as _algorithm
from parl_algorithms.torch import ops
from parl_algorithms.torch._common import LazyInfo
from parl_core.torch import Algorithm


class OffPolicyActorCritic(_algorithm.OffPolicyActorCritic, LazyInfo, Algorithm):
    __doc__ = _algorithm.OffPolicyActorCritic.__doc__
    ops = ops

    def sync_target(self, decay: float | None = None) -> None:
        """Soft-update the target network: ``target = decay * target + (1 - decay) * model``.

        Same result as ``model.sync_weights_to(target_model, decay)``; the per-step path uses one
        ``torch._foreach_lerp_`` over cached parameter lists (the models must keep their parameters).

        Args:
            decay: defaults to ``1 - tau``.
        """
        decay = 1.0 - self.tau if decay is None else float(decay)
        pairs = self._sync_pairs()
        if pairs is None or not 0.0 <= decay <= 1.0:
            self.model.sync_weights_to(self.target_model, decay=decay)
            return
        with torch.no_grad():
            torch._foreach_lerp_(pairs[0], pairs[1], 1.0 - decay)
            for dst, src in zip(pairs[2], pairs[3], strict=True):
                dst.copy_(src)

    def _sync_pairs(self) -> tuple[list, list, list, list] | None:
        """Cached ``(target params, source params, target buffers, source buffers)``; ``None`` when the
        fast path does not apply (different structures, devices or dtypes, or no ``_foreach_lerp_``)."""
        key = (id(self.model), id(self.target_model))
        cached = getattr(self, "_sync_cache", None)
        if cached is not None and cached[0] == key:
            return cached[1]
        src, dst = dict(self.model.named_parameters()), dict(self.target_model.named_parameters())
        src_b, dst_b = dict(self.model.named_buffers()), dict(self.target_model.named_buffers())
        pairs = None
        if (hasattr(torch, "_foreach_lerp_") and src.keys() == dst.keys() and src_b.keys() == dst_b.keys()
                and all(src[k].shape == dst[k].shape and src[k].device == dst[k].device
                        and src[k].dtype == dst[k].dtype for k in src)):
            pairs = ([dst[k] for k in src], [src[k] for k in src], [dst_b[k] for k in src_b], [src_b[k] for k in src_b])
        self._sync_cache = (key, pairs)
        return pairs


class DeterministicActorCritic(_algorithm.DeterministicActorCritic, OffPolicyActorCritic):
    __doc__ = _algorithm.DeterministicActorCritic.__doc__
