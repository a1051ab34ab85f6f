"""``Algorithm``: losses and optimizers over one or more ``Model``s."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import torch

from parl_core._algorithm_base import AlgorithmBase
from parl_core.torch.device import DeviceLike, resolve_device
from parl_core.torch.model import Model

__all__ = ["Algorithm"]

_StateHolder = (Model, torch.optim.Optimizer, torch.optim.lr_scheduler.LRScheduler)


class Algorithm(AlgorithmBase):
    """Base class of an algorithm: defines ``learn``, ``predict`` and ``sample`` over ``self.model``.

    Every ``Model`` attribute of the algorithm (``self.model``, ``self.target_model``, models inside a
    list, tuple or dict attribute) is covered by :meth:`get_weights` / :meth:`set_weights`; every
    model, optimizer, LR scheduler and tensor attribute (e.g. SAC's ``log_alpha``), plus the attribute
    names listed in ``checkpoint_attrs`` (counters such as a policy-delay step), is covered by
    :meth:`state_dict` / :meth:`load_state_dict`, which ``Agent.save`` / ``Agent.restore`` use.

    ``self.device`` is where the algorithm computes: ``model`` is moved there at construction, so target
    networks (``copy.deepcopy(self.model)``) and optimizers built afterwards live there too; a subclass
    creates its own tensors with ``device=self.device`` and decorates ``learn`` / ``predict`` / ``sample``
    with :func:`parl_core.torch.device.on_device` so that numpy arrays and CPU tensors are accepted.

    Args:
        model: the algorithm's main model.
        device: ``"cpu"``, ``"cuda"``, ``"cuda:1"`` or a ``torch.device``; default CUDA when available,
            else the CPU (PARL's rule).

    Raises:
        TypeError: ``model`` is not a ``parl.Model``, or ``device`` is not a device.
        ValueError: ``device`` asks for CUDA where there is none (use ``device="cpu"``).
    """

    checkpoint_attrs: tuple[str, ...] = ()
    _model_type = Model

    def __init__(self, model: Model | None = None, *, device: DeviceLike = None) -> None:
        if model is not None and not isinstance(model, Model):
            if any(cls.__module__.startswith(("paddle", "parl_core.paddle")) for cls in type(model).__mro__):
                raise TypeError(f"{type(self).__name__} is a PyTorch algorithm but got the paddle model "
                                f"{type(model).__name__}; build it on parl_core.torch.Model (torch.nn layers), or "
                                "use the paddle algorithm (parl_algorithms.paddle, export PARL_BACKEND=paddle)")
            raise TypeError(f"{type(self).__name__} expects a parl.Model (a torch.nn.Module subclass of "
                            f"parl.Model), got {type(model).__name__}; define `class MyModel(parl.Model)`")
        self.device = resolve_device(device)
        # (a model whose __init__ never ran has no parameters to move; the subclass's model checks name what it lacks)
        self.model = model.to(self.device) if model is not None and "_parameters" in vars(model) else model

    # -- checkpoints -----------------------------------------------------------------------------
    def state_dict(self) -> dict[str, Any]:
        """Everything needed to resume training exactly: models, optimizers, schedulers, tensors."""
        state: dict[str, Any] = {}
        for key, obj in self._named(_StateHolder):
            state[key] = obj.state_dict()
        for key, tensor in self._named((torch.Tensor,)):
            state[key] = tensor.detach().clone()
        for attr in self.checkpoint_attrs:
            state[attr] = getattr(self, attr)
        return state

    def load_state_dict(self, state: Mapping[str, Any]) -> None:
        """Restore what :meth:`state_dict` returned.

        Raises:
            ValueError: the checkpoint's entries do not match this algorithm's (another algorithm or
                another architecture wrote it).
        """
        holders = dict(self._named(_StateHolder))
        tensors = dict(self._named((torch.Tensor,)))
        expected = set(holders) | set(tensors) | set(self.checkpoint_attrs)
        if set(state) != expected:
            raise ValueError(f"checkpoint does not match {type(self).__name__}: it has {sorted(state)}, "
                             f"expected {sorted(expected)}; restore it into the agent that saved it")
        for key, obj in holders.items():
            if isinstance(obj, Model):
                obj.set_weights(state[key])
            else:
                obj.load_state_dict(state[key])
        with torch.no_grad():
            for key, tensor in tensors.items():
                tensor.copy_(state[key].to(tensor.device))
        for attr in self.checkpoint_attrs:
            setattr(self, attr, state[attr])
