"""``Algorithm``: losses and optimizers over one or more paddle ``Model``s."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import paddle

from parl_core._algorithm_base import AlgorithmBase
from parl_core.paddle.device import resolve_device
from parl_core.paddle.model import Model

__all__ = ["Algorithm"]

_Optimizer = paddle.optimizer.Optimizer
_Scheduler = paddle.optimizer.lr.LRScheduler
_StateHolder = (Model, _Optimizer, _Scheduler)


def optimizer_parameters(optimizer: _Optimizer) -> list[paddle.Tensor]:
    """The parameters an optimizer updates, in order (parameter groups flattened)."""
    params = list(optimizer._parameter_list or ())
    if params and isinstance(params[0], dict):
        params = [p for group in params for p in group["params"]]
    return params


def _split(key: str, names: list[str]) -> tuple[int, str] | None:
    """``"linear_3.w_0_moment1_0"`` -> ``(index of linear_3.w_0, "_moment1_0")`` (longest name first)."""
    best = None
    for index, name in enumerate(names):
        if key.startswith(name + "_") and (best is None or len(name) > len(names[best])):
            best = index
    return None if best is None else (best, key[len(names[best]):])


def portable_optimizer_state(optimizer: _Optimizer) -> dict[str, Any]:
    """``optimizer.state_dict()`` keyed by parameter position instead of paddle's global parameter names.

    Paddle names an optimizer's accumulators after its parameters' unique names (``linear_3.w_0``), which
    differ between two instances of the same model; keying them as ``"@<index>_moment1_0"`` lets a fresh
    agent load the moments of the agent that saved them.
    """
    names = [p.name for p in optimizer_parameters(optimizer)]
    state = {}
    for key, value in optimizer.state_dict().items():
        split = _split(key, names) if isinstance(value, paddle.Tensor) else None
        state[key if split is None else f"@{split[0]}{split[1]}"] = value
    return state


def load_portable_optimizer_state(optimizer: _Optimizer, state: Mapping[str, Any]) -> None:
    """Inverse of :func:`portable_optimizer_state`."""
    names = [p.name for p in optimizer_parameters(optimizer)]
    loaded = {}
    for key, value in state.items():
        if key.startswith("@"):
            index, _, rest = key[1:].partition("_")
            key = f"{names[int(index)]}_{rest}"
        loaded[key] = value
    optimizer.set_state_dict(loaded)


class Algorithm(AlgorithmBase):
    """Base class of an algorithm on PaddlePaddle: defines ``learn``, ``predict`` and ``sample``.

    Same contract as ``parl_core.torch.Algorithm``: every ``Model`` attribute (one level into lists,
    tuples and dicts) is covered by :meth:`get_weights` / :meth:`set_weights`; every model, optimizer,
    LR scheduler and tensor attribute (e.g. SAC's ``log_alpha``), plus the names in ``checkpoint_attrs``,
    by :meth:`state_dict` / :meth:`load_state_dict`, which ``Agent.save`` / ``Agent.restore`` use.

    Args:
        model: the algorithm's main model, a ``parl_core.paddle.Model``.
        device: ``"cpu"``, ``"gpu"``, ``"gpu:1"`` (or ``"cuda"`` / ``"cuda:1"``); it becomes paddle's current
            device (``paddle.set_device``, process-wide) and the model is moved there. ``None`` keeps paddle's
            default (the GPU in a CUDA build, as PARL). See :func:`parl_core.paddle.device.resolve_device`.

    Raises:
        TypeError: ``model`` is not a paddle ``parl.Model`` (e.g. a torch model).
        ValueError: ``device`` asks for a GPU paddle does not have (use ``device="cpu"``).
    """

    checkpoint_attrs: tuple[str, ...] = ()
    _model_type = Model

    def __init__(self, model: Model | None = None, *, device: str | None = None) -> None:
        check_paddle_model(model, type(self).__name__)
        self.device = resolve_device(device)
        if device is not None:
            paddle.set_device(self.device)
            if model is not None:
                model.to(device=self.device)
        self.model = model

    # -- checkpoints -----------------------------------------------------------------------------
    def _tensors(self) -> dict[str, paddle.Tensor]:
        return dict(self._named((paddle.Tensor,)))

    def state_dict(self) -> dict[str, Any]:
        """Everything needed to resume training exactly: models, optimizers, schedulers, tensors."""
        state: dict[str, Any] = {}
        for key, obj in self._named(_StateHolder):
            state[key] = portable_optimizer_state(obj) if isinstance(obj, _Optimizer) else obj.state_dict()
        for key, tensor in self._tensors().items():
            state[key] = tensor.numpy().copy()
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
        tensors = self._tensors()
        expected = set(holders) | set(tensors) | set(self.checkpoint_attrs)
        if set(state) != expected:
            raise ValueError(f"checkpoint does not match {type(self).__name__}: it has {sorted(state)}, "
                             f"expected {sorted(expected)}; restore it into the agent that saved it")
        for key, obj in holders.items():
            if isinstance(obj, Model):
                obj.set_weights(state[key])
            elif isinstance(obj, _Optimizer):
                load_portable_optimizer_state(obj, state[key])
            else:
                obj.set_state_dict(state[key])
        for key, tensor in tensors.items():
            value = state[key]
            tensor.set_value(value.numpy() if isinstance(value, paddle.Tensor) else value)
        for attr in self.checkpoint_attrs:
            setattr(self, attr, state[attr])


def check_paddle_model(model: Any, owner: str) -> None:
    """Raise ``TypeError`` naming the fix when ``model`` is not ``None`` and not a paddle ``parl.Model``."""
    if model is None or isinstance(model, Model):
        return
    kind = type(model).__module__.split(".")[0]
    if kind == "torch" or any(c.__module__.startswith("torch") for c in type(model).__mro__):
        raise TypeError(f"{owner} is a PaddlePaddle algorithm but got the torch model {type(model).__name__}; "
                        "build the model on parl_core.paddle.Model (paddle.nn layers), or use the torch "
                        "algorithm (parl_algorithms.torch / export PARL_BACKEND=torch)")
    raise TypeError(f"{owner} expects a parl.Model (a paddle.nn.Layer subclass of parl_core.paddle.Model), "
                    f"got {type(model).__name__}; define `class MyModel(parl.Model)`")
