"""COMA on PyTorch: :class:`parl_algorithms.algorithms.coma.COMA` bound to torch, with an RMSprop of
``torch.optim.RMSprop``'s arithmetic without its per-step overhead."""

from __future__ import annotations

from typing import Any

import torch

from parl_algorithms.algorithms import coma as _algorithm
from parl_algorithms.torch import ops
from parl_algorithms.torch._common import LazyInfo
from parl_core.torch import Algorithm

__all__ = ["COMA"]


class COMA(_algorithm.COMA, LazyInfo, Algorithm):
    __doc__ = _algorithm.COMA.__doc__
    ops = ops

    def _rmsprop(self, params: list[torch.Tensor], lr: float) -> RMSprop:
        return RMSprop(params, lr=lr)  # (ops.step clips)


class RMSprop(torch.optim.RMSprop):
    """``torch.optim.RMSprop`` (PARL's COMA optimizer; alpha 0.99, eps 1e-8, no momentum) whose ``step`` is the same
    arithmetic on the same state (``square_avg``, ``step``) in five foreach calls, without the ``torch._dynamo``
    import that ``torch.optim``'s step decorator makes at the first step of a process (1-5 s here). It falls back
    to ``torch.optim.RMSprop.step`` for momentum, centered, weight decay, maximize, a closure or hooks."""

    if hasattr(torch.optim.Optimizer.add_param_group, "__wrapped__"):  # (the same lazy import, at construction)
        add_param_group = torch.optim.Optimizer.add_param_group.__wrapped__

    def step(self, closure: Any = None) -> Any:  # noqa: D102 (torch.optim.RMSprop.step)
        if closure is not None or self._optimizer_step_pre_hooks or self._optimizer_step_post_hooks or any(
                g["momentum"] or g["centered"] or g["weight_decay"] or g["maximize"] or g.get("differentiable")
                or isinstance(g["lr"], torch.Tensor) for g in self.param_groups):
            return super().step(closure)
        with torch.no_grad():
            for group in self.param_groups:
                params = [p for p in group["params"] if p.grad is not None]
                if not params:
                    continue
                grads, avgs, steps = [p.grad for p in params], [], []
                for p in params:
                    state = self.state[p]
                    if not state:
                        state["step"] = torch.zeros((), dtype=torch.float32)
                        state["square_avg"] = torch.zeros_like(p, memory_format=torch.preserve_format)
                    avgs.append(state["square_avg"])
                    steps.append(state["step"])
                torch._foreach_add_(steps, 1)
                torch._foreach_mul_(avgs, group["alpha"])
                torch._foreach_addcmul_(avgs, grads, grads, value=1 - group["alpha"])
                denominators = torch._foreach_sqrt(avgs)
                torch._foreach_add_(denominators, group["eps"])
                torch._foreach_addcdiv_(params, grads, denominators, value=-group["lr"])
        return None
