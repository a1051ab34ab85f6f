"""The off-policy actor-critic base (:mod:`parl_algorithms.algorithms._off_policy`) bound to paddle, with an
in-place soft target update over cached parameter lists."""

from __future__ import annotations

import paddle

from parl_algorithms.algorithms import _off_policy as _algorithm
from parl_algorithms.paddle import ops
from parl_core.paddle import Algorithm
from parl_core.paddle.model import soft_update_, split_statistics


class OffPolicyActorCritic(_algorithm.OffPolicyActorCritic, Algorithm):
    __doc__ = _algorithm.OffPolicyActorCritic.__doc__
    ops = ops

    def sync_target(self, decay: float | None = None) -> None:
        """Soft-update the target network: ``target = decay * target + (1 - decay) * model``.

        Same result as ``model.sync_weights_to(target_model, decay)``; the per-step path (dygraph mode) runs one
        in-place ``lerp_`` per parameter over cached parameter lists, as the torch backend does, without walking
        the two models' layers on every call (the models must keep their parameters, as with torch).

        Args:
            decay: defaults to ``1 - tau``.
        """
        decay = 1.0 - self.tau if decay is None else float(decay)
        pairs = self._sync_pairs() if 0.0 < decay <= 1.0 and paddle.in_dynamic_mode() else None
        if pairs is None:
            self.model.sync_weights_to(self.target_model, decay=decay)
            return
        soft_update_(*pairs, decay)

    def _sync_pairs(self) -> tuple[list, list, list, list] | None:
        """Cached ``(target params, source params, target statistics, source statistics)`` (statistics: buffers
        and BatchNorm's running mean / variance, copied rather than averaged); ``None`` when the two models'
        names, shapes or dtypes differ (``sync_weights_to`` then says how)."""
        key = (id(self.model), id(self.target_model))
        cached = getattr(self, "_sync_cache", None)
        if cached is not None and cached[0] == key:
            return cached[1]
        src, src_stats = split_statistics(self.model)
        dst_all = dict(self.target_model.named_parameters()) | dict(self.target_model.named_buffers())
        pairs = None
        if dst_all.keys() == src.keys() | src_stats.keys() and all(
                dst_all[k].shape == v.shape and dst_all[k].dtype == v.dtype for k, v in (src | src_stats).items()):
            pairs = ([dst_all[k] for k in src], list(src.values()), [dst_all[k] for k in src_stats],
                     list(src_stats.values()))
        self._sync_cache = (key, pairs)
        return pairs


class DeterministicActorCritic(_algorithm.DeterministicActorCritic, OffPolicyActorCritic):
    __doc__ = _algorithm.DeterministicActorCritic.__doc__
