"""QMIX on PyTorch: :class:`parl_algorithms.algorithms.qmix.QMIX` bound to torch (``torch.optim.RMSprop``)."""

from __future__ import annotations

from typing import Any

import torch

from parl_algorithms.algorithms import qmix as _algorithm
from parl_algorithms.torch import ops
from parl_algorithms.torch._common import LazyInfo
from parl_core.torch import Algorithm, Model

__all__ = ["QMIX"]


class QMIX(_algorithm.QMIX, LazyInfo, Algorithm):
    __doc__ = _algorithm.QMIX.__doc__
    ops = ops

    @staticmethod
    def _check_model(model: Any, role: str) -> None:
        if not isinstance(model, Model):
            other = "paddle" if any(c.__module__.startswith(("paddle", "parl_core.paddle"))
                                    for c in type(model).__mro__) else None
            hint = ("build it on parl_core.torch.Model (torch.nn layers), or use the paddle algorithm "
                    "(parl_algorithms.paddle.QMIX)") if other else "define `class MyModel(parl.Model)`"
            raise TypeError(f"QMIX (torch) expects {role} to be a torch parl.Model, got {type(model).__name__}; "
                            f"{hint}")

    def _placed(self, model: Model, device: Any) -> Model:
        return model.to(self.device)

    def _rmsprop(self, params: list[torch.Tensor]) -> torch.optim.RMSprop:
        return torch.optim.RMSprop(params, lr=self.lr, alpha=0.99, eps=1e-5)  # (ops.step clips)
