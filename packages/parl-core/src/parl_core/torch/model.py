"""``Model``: a ``torch.nn.Module`` with numpy weight exchange and target-network syncing."""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np
import torch
from torch import nn

__all__ = ["Model"]


class Model(nn.Module):
    """The forward network(s) of an agent: a policy, a value function, or both.

    Subclass it exactly like ``torch.nn.Module`` (call ``super().__init__()``, define ``forward`` or
    the methods an algorithm needs, such as ``value`` and ``policy``). A target network is built with
    ``copy.deepcopy(model)``.
    """

    def get_weights(self) -> dict[str, np.ndarray]:
        """Return every parameter and buffer as a numpy copy.

        Returns:
            ``{name: array}`` in ``state_dict`` order; each array is a CPU copy with the tensor's
            dtype and shape (changing it does not change the model).
        """
        return {name: tensor.detach().cpu().numpy().copy() for name, tensor in self.state_dict().items()}

    def set_weights(self, weights: Mapping[str, np.ndarray]) -> None:
        """Load weights produced by :meth:`get_weights` (of this or an identical model).

        Args:
            weights: ``{name: array}`` with exactly the keys and shapes of ``self.state_dict()``;
                arrays may be numpy arrays or tensors, and are cast to each entry's dtype and device.

        Raises:
            TypeError: ``weights`` is not a mapping.
            ValueError: keys are missing or unexpected, or a shape differs; the message lists each.
        """
        if not isinstance(weights, Mapping):
            raise TypeError(f"set_weights expects a dict name -> array as returned by get_weights(), "
                            f"got {type(weights).__name__}")
        own = self.state_dict()
        missing = [k for k in own if k not in weights]
        unexpected = [k for k in weights if k not in own]
        mismatched = [
            f"{k}: model {tuple(own[k].shape)} vs given {tuple(np.shape(weights[k]))}"
            for k in own if k in weights and tuple(np.shape(weights[k])) != tuple(own[k].shape)
        ]
        if missing or unexpected or mismatched:
            parts = []
            if missing:
                parts.append(f"missing keys {missing}")
            if unexpected:
                parts.append(f"unexpected keys {unexpected}")
            if mismatched:
                parts.append(f"shape mismatches [{'; '.join(mismatched)}]")
            raise ValueError(f"{type(self).__name__}.set_weights: {', '.join(parts)}; pass the output "
                             "of get_weights() of a model with the same architecture")
        with torch.no_grad():
            for name, target in own.items():
                value = np.asarray(weights[name])
                if not value.flags.writeable:  # e.g. arrays received from a remote call: torch warns on those
                    value = value.copy()
                target.copy_(torch.as_tensor(value).to(dtype=target.dtype))

    def sync_weights_to(self, target_model: Model, decay: float = 0.0) -> None:
        """Soft-update ``target_model`` toward this model.

        ``target = decay * target + (1 - decay) * source`` for every parameter (Polyak averaging;
        ``decay = 1 - tau`` in DDPG's notation), and buffers (e.g. BatchNorm statistics) are copied.

        Args:
            target_model: a model with the same parameter names and shapes (usually a deepcopy).
            decay: in ``[0, 1]``; 0 copies the weights.

        Raises:
            TypeError: ``target_model`` is not a ``Model``.
            ValueError: ``target_model`` is this model, ``decay`` is outside ``[0, 1]``, or the two
                models' parameters differ in names or shapes.
        """
        if not isinstance(target_model, Model):
            raise TypeError(f"sync_weights_to expects a parl Model, got {type(target_model).__name__}")
        if target_model is self:
            raise ValueError("sync_weights_to: the target model is the source model itself; "
                             "build the target with copy.deepcopy(model)")
        decay = float(decay)
        if not 0.0 <= decay <= 1.0:
            raise ValueError(f"sync_weights_to: decay must be in [0, 1], got {decay}")
        src_params = dict(self.named_parameters())
        dst_params = dict(target_model.named_parameters())
        src_buffers = dict(self.named_buffers())
        dst_buffers = dict(target_model.named_buffers())
        if src_params.keys() != dst_params.keys() or src_buffers.keys() != dst_buffers.keys():
            raise ValueError("sync_weights_to: source and target models have different parameters "
                             f"({sorted(set(src_params) ^ set(dst_params) | set(src_buffers) ^ set(dst_buffers))})")
        with torch.no_grad():
            for name, src in src_params.items():
                dst = dst_params[name]
                if dst.shape != src.shape:
                    raise ValueError(f"sync_weights_to: shape of {name} differs: "
                                     f"{tuple(src.shape)} vs target {tuple(dst.shape)}")
                if decay == 0.0:
                    dst.copy_(src)
                else:
                    dst.lerp_(src.to(dst.device), 1.0 - decay)
            for name, src in src_buffers.items():
                dst_buffers[name].copy_(src)
