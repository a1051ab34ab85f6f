"""torch's side of the framework layer: the same names, with the same meaning, in ``parl_algorithms.paddle.ops``.

Two uses. An example picks the module by backend (``importlib.import_module(f"parl_algorithms.{backend}.ops")``)
and writes its loop once: numpy in, tensors to the algorithm, numpy out (``tensor`` ... ``zeros_parameter``).
An algorithm written once (``parl_algorithms.algorithms``) calls it as ``self.ops`` for what torch and paddle
name or mean differently (``take_along_axis``, an Adam ``step`` with gradient clipping, device moves, a
categorical draw, the readable shape error, ...); everything else it writes in the operators and tensor
methods the two frameworks share.
"""

from __future__ import annotations

import contextlib
import functools
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import Any

import numpy as np
import torch

from parl_algorithms.torch import functional as _functional
from parl_algorithms.torch._common import (
    _SHAPE_ERROR_HINTS,
    as_float_tensor,
    clip_grad_norm,
    column,
    discrete_actions,
    flat_q,
    obs_batch,
    optimizer_params,
    two_q,
)
from parl_algorithms.torch._common import adam as _adam
from parl_algorithms.torch._common import continuous_actions as _continuous_actions
from parl_core.torch.device import to_device as _to_device

__all__ = ["tensor", "to_numpy", "no_grad", "seed", "concat", "randperm", "zeros_parameter", "Tensor", "F",
           "functional", "Distribution", "to_device", "scalar", "as_float", "as_int64", "take_along_axis",
           "value_range", "categorical_sample", "rand", "randint", "randn_like", "uniform", "where", "obs_batch",
           "column", "discrete_actions", "continuous_actions", "two_q", "flat_q", "optimizer_params", "freeze",
           "frozen", "info_mean", "info_zero", "adam", "set_lr", "step", "info_scalar", "host_floats", "shape_error",
           "gradient", "cosine_adam", "adamw"]


def tensor(array: Any, dtype: str | None = None) -> torch.Tensor:
    """A tensor from a numpy array (shares memory where it can), cast to the numpy ``dtype`` name if given."""
    return torch.from_numpy(np.asarray(array, dtype=dtype))


def to_numpy(value: torch.Tensor) -> np.ndarray:
    """The tensor's values as a numpy array on the host."""
    return value.detach().cpu().numpy()


def no_grad() -> Any:
    """A context manager that records no autograd graph (``torch.no_grad``)."""
    return torch.no_grad()


def seed(value: int) -> None:
    """Seed torch's global generator and use one CPU thread (2-4x faster for the small networks here)."""
    torch.set_num_threads(1)
    torch.manual_seed(value)


def concat(tensors: Sequence[torch.Tensor], axis: int = -1) -> torch.Tensor:
    """``torch.cat`` along ``axis``."""
    return torch.cat(list(tensors), dim=axis)


def randperm(n: int) -> torch.Tensor:
    """A random permutation of ``0..n-1``, int64 ``[n]``, from torch's global generator."""
    return torch.randperm(n)


def zeros_parameter(layer: torch.nn.Module, shape: Sequence[int]) -> torch.nn.Parameter:
    """A trainable float32 parameter of zeros (assign it to an attribute of ``layer`` to register it)."""
    del layer  # torch registers a parameter on assignment
    return torch.nn.Parameter(torch.zeros(*shape))


# -- the algorithms' layer: what the one-file algorithms (parl_algorithms.algorithms) call where torch and
# paddle differ in name or semantics; paddle's module has the same names with the same meaning

Tensor = torch.Tensor
F = torch.nn.functional
functional = _functional
Distribution = torch.distributions.Distribution


def to_device(device: Any, *values: Any) -> tuple[Any, ...]:
    """``values`` with every numpy array / tensor on ``device`` (float64 arrays as float32), others unchanged."""
    if device is None:
        return values
    return tuple(_to_device(v, device) for v in values)


def scalar(value: float, device: Any, requires_grad: bool = False) -> torch.Tensor:
    """A float32 0-d tensor on ``device`` (a learned scalar such as SAC's ``log_alpha`` when ``requires_grad``)."""
    return torch.tensor(value, device=device, requires_grad=requires_grad)


def as_float(value: Any, name: str) -> torch.Tensor:
    """A float32 tensor from a tensor / numpy array / list; ``TypeError`` naming ``name`` when not numeric."""
    return as_float_tensor(value, name)


def as_int64(value: Any, device: Any) -> torch.Tensor:
    """An int64 tensor on ``device`` from a tensor / numpy array / list."""
    return torch.as_tensor(value, device=device).long()


def take_along_axis(x: torch.Tensor, index: torch.Tensor, axis: int) -> torch.Tensor:
    """``x``'s entries at ``index`` along ``axis`` (``torch.gather``; numpy's ``take_along_axis``)."""
    return x.gather(axis, index)


def value_range(x: torch.Tensor) -> tuple[int, int]:
    """``(min, max)`` of an integer tensor as Python ints in one device -> host copy; ``(0, 0)`` when empty."""
    if not x.numel():
        return 0, 0
    low, high = torch.stack(torch.aminmax(x)).tolist()
    return low, high


def categorical_sample(probs: torch.Tensor) -> torch.Tensor:
    """int64 indices ``probs.shape[:-1]`` drawn from the rows of ``probs`` (``torch.multinomial``'s draws)."""
    if probs.ndim == 2:
        return _functional.categorical_sample(probs)
    return _functional.categorical_sample(probs.reshape(-1, probs.shape[-1])).reshape(probs.shape[:-1])


def rand(shape: Sequence[int], like: torch.Tensor) -> torch.Tensor:
    """float32 uniform draws in ``[0, 1)`` of ``shape`` on ``like``'s device (torch's global generator)."""
    return torch.rand(*shape, device=like.device)


def randint(high: int, shape: Sequence[int], like: torch.Tensor) -> torch.Tensor:
    """int64 uniform draws in ``[0, high)`` of ``shape`` on ``like``'s device (torch's global generator)."""
    return torch.randint(high, tuple(shape), device=like.device)


def randn_like(x: torch.Tensor) -> torch.Tensor:
    """Standard normal draws of ``x``'s shape, dtype and device (torch's global generator)."""
    return torch.randn_like(x)


def uniform(shape: Sequence[int], low: float, high: float, like: torch.Tensor) -> torch.Tensor:
    """float32 uniform draws in ``[low, high)`` of ``shape`` on ``like``'s device (torch's global generator)."""
    return torch.empty(*shape, device=like.device).uniform_(low, high)


def where(condition: torch.Tensor, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    """``x`` where ``condition`` holds, else ``y`` (``torch.where``)."""
    return torch.where(condition, x, y)


def continuous_actions(action: Any, batch: int, algo: str, act_dim: int | None = None) -> torch.Tensor:
    """float32 ``[B, act_dim]`` continuous actions; ``ValueError`` naming the fix for indices or a wrong shape."""
    return _continuous_actions(action, batch, act_dim, algo)


def freeze(params: Iterable[torch.Tensor]) -> None:
    """Let ``params`` take no gradient from now on (a target network's)."""
    for param in params:
        param.requires_grad_(False)


@contextlib.contextmanager
def frozen(params: list[torch.Tensor]) -> Iterator[None]:
    """Within the block ``params`` take no gradient; their own flags come back after it."""
    flags = [p.requires_grad for p in params]
    for p in params:
        p.requires_grad_(False)
    try:
        yield
    finally:
        for p, flag in zip(params, flags, strict=True):
            p.requires_grad_(flag)


def adam(params: Any, lr: float, eps: float = 1e-8, max_grad_norm: float | None = None) -> torch.optim.Adam:
    """Adam (fused where the device has it); ``max_grad_norm`` is applied by :func:`step` (the global L2 norm)."""
    del max_grad_norm  # torch clips in step(); paddle's optimizer carries its clip
    return _adam(params, lr=lr, eps=eps)


def cosine_adam(params: Any, lr: float,
                steps: int) -> tuple[torch.optim.Adam, torch.optim.lr_scheduler.CosineAnnealingLR]:
    """``(optimizer, scheduler)``: Adam whose learning rate is cosine-annealed from ``lr`` to 0 over ``steps``."""
    optimizer = _adam(params, lr=lr)
    return optimizer, torch.optim.lr_scheduler.CosineAnnealingLR(optimizer, steps)


def adamw(params: Any, lr: float, weight_decay: float, lr_factor: Callable[[int], float],
          max_grad_norm: float | None = None) -> tuple[torch.optim.AdamW, torch.optim.lr_scheduler.LambdaLR]:
    """``(optimizer, scheduler)``: AdamW at ``lr * lr_factor(step)``; ``max_grad_norm`` is applied by :func:`step`."""
    del max_grad_norm  # torch clips in step(); paddle's optimizer carries its clip
    optimizer = torch.optim.AdamW(params, lr=lr, weight_decay=weight_decay)
    return optimizer, torch.optim.lr_scheduler.LambdaLR(optimizer, lr_factor)


def set_lr(optimizer: torch.optim.Optimizer, lr: float) -> None:
    """Set the learning rate of every parameter group for the next steps."""
    for group in optimizer.param_groups:
        group["lr"] = float(lr)


def step(optimizer: torch.optim.Optimizer, loss: torch.Tensor, max_grad_norm: float | None = None,
         return_norm: bool = False) -> torch.Tensor | None:
    """Zero grads, backpropagate ``loss``, clip the global norm to ``max_grad_norm``, step; the norm if asked."""
    optimizer.zero_grad()
    loss.backward()
    norm = None
    if max_grad_norm is not None or return_norm:  # (a clip to inf measures the norm and leaves the gradients)
        norm = clip_grad_norm(optimizer_params(optimizer), float("inf") if max_grad_norm is None else max_grad_norm)
    optimizer.step()
    return norm if return_norm else None


def info_scalar(value: torch.Tensor | float) -> torch.Tensor | float:
    """A diagnostic for ``last_info``: a detached 0-d tensor, read to the host only when ``last_info`` is read."""
    return value.detach() if isinstance(value, torch.Tensor) else value


def info_mean(value: torch.Tensor) -> Any:
    """A diagnostic for ``last_info``: the mean of ``value``, computed only when ``last_info`` is read."""
    return functools.partial(torch.mean, value.detach())


def info_zero(device: Any) -> torch.Tensor:
    """The zero diagnostic on ``device`` (a 0-d tensor, as :func:`info_scalar` returns)."""
    return torch.zeros((), device=device)


def host_floats(*values: torch.Tensor) -> tuple[float, ...]:
    """The values of one-element tensors as Python floats, in one device -> host copy."""
    return tuple(torch.stack([v.detach().reshape(()) for v in values]).tolist())


def shape_error(algo: Any, method: str, err: Exception, args: tuple) -> None:
    """Raise a ``ValueError`` naming ``algo.method``, the shapes of ``args`` and the fix from torch's shape error
    ``err`` inside the user's model; return otherwise (the caller re-raises ``err``)."""
    message = str(err)
    if not isinstance(err, RuntimeError) or not any(hint in message for hint in _SHAPE_ERROR_HINTS):
        return
    shapes = ", ".join(str(tuple(a.shape)) for a in args if hasattr(a, "shape"))
    raise ValueError(f"{type(algo).__name__}.{method}: the model rejected inputs of shapes "
                     f"[{shapes}] ({message}); pass obs as [B, *obs_shape] with the observation shape the "
                     "model was built for, and actions / rewards shaped as the method documents") from err


def gradient(fn: Callable[[torch.Tensor], torch.Tensor], x: torch.Tensor) -> torch.Tensor:
    """d fn(x) / d x of a scalar ``fn`` at a detached copy of ``x`` (recorded under ``no_grad`` too); no graph."""
    with torch.enable_grad():
        x = x.detach().requires_grad_(True)
        (grad,) = torch.autograd.grad(fn(x), x)
    return grad
