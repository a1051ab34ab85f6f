"""MAPPO and PopArt on PyTorch: :class:`parl_algorithms.algorithms.mappo.MAPPO` and ``PopArt`` bound to torch."""

from __future__ import annotations

from typing import Any

import numpy as np
import torch

from parl_algorithms.algorithms import mappo as _algorithm
from parl_algorithms.torch import ops
from parl_algorithms.torch._common import optimizer_params
from parl_core.torch import Algorithm
from parl_core.torch.device import to_device

__all__ = ["MAPPO", "PopArt"]


class PopArt(_algorithm.PopArt, torch.nn.Module):
    __doc__ = _algorithm.PopArt.__doc__
    ops = ops
    linear_out_axis = 0  # torch.nn.Linear's weight is [out, in]

    def _zeros(self, shape: list[int], device: Any) -> torch.Tensor:
        return torch.zeros(shape, device=self.weight.device if device is None else torch.device(device))

    def _assign(self, target: torch.Tensor, value: torch.Tensor) -> None:
        target.copy_(value)

    def _tensor(self, value: Any) -> torch.Tensor:
        return to_device(np.asarray(value, dtype=np.float32) if not isinstance(value, torch.Tensor) else value,
                         self.mean.device).to(torch.float32)

    def _stat(self, statistic: torch.Tensor) -> torch.Tensor:
        return statistic[(None,) * self.norm_axes]  # (PARL's torch PopArt: a [B] batch gives [1, B])

    def statistics(self) -> dict[str, torch.Tensor]:
        return {k: v.detach().clone() for k, v in self.state_dict().items()}

    def load_statistics(self, stats: dict[str, torch.Tensor], device: Any) -> None:
        self.load_state_dict({k: v.to(device) for k, v in stats.items()})


class MAPPO(_algorithm.MAPPO, Algorithm):
    __doc__ = _algorithm.MAPPO.__doc__
    ops = ops
    popart_class = PopArt
    linear = torch.nn.Linear

    def _step(self, optimizer: torch.optim.Optimizer, loss: torch.Tensor) -> torch.Tensor:
        if self.max_grad_norm is not None:
            return super()._step(optimizer, loss)
        optimizer.zero_grad()  # without a clip, the norm of the concatenated gradients
        loss.backward()
        grads = [p.grad.reshape(-1) for p in optimizer_params(optimizer) if p.grad is not None]
        norm = torch.linalg.vector_norm(torch.cat(grads)) if grads else torch.zeros((), device=self.device)
        optimizer.step()
        return norm
