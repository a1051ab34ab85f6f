"""paddle's side of the framework layer: the same names, with the same meaning, in ``parl_algorithms.torch.ops``.

Two uses. An example picks the module by backend (``importlib.import_module(f"parl_algorithms.{backend}.ops")``)
and writes its loop once: numpy in, tensors to the algorithm, numpy out (``tensor`` ... ``zeros_parameter``).
An algorithm written once (``parl_algorithms.algorithms``) calls it as ``self.ops`` for what paddle and torch
name or mean differently (``take_along_axis``, an Adam ``step`` with gradient clipping, device moves, a
categorical draw, the readable shape error, ...); everything else it writes in the operators and tensor
methods the two frameworks share.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import Any

import numpy as np
import paddle

from parl_algorithms.paddle import functional as _functional
from parl_algorithms.paddle._common import adam as _adam
from parl_algorithms.paddle._common import as_float as _as_float
from parl_algorithms.paddle._common import (
    column,
    discrete_actions,
    fast_adam_step,
    flat_q,
    grad_norm,
    host_float,
    obs_batch,
    rewrite_shape_error,
    two_q,
)
from parl_algorithms.paddle._common import continuous_actions as _continuous_actions
from parl_algorithms.paddle._common import optimizer_parameters as optimizer_params
from parl_algorithms.paddle._common import set_lr as _set_lr
from parl_algorithms.paddle._common import step as _step

__all__ = ["tensor", "to_numpy", "no_grad", "seed", "concat", "randperm", "zeros_parameter", "Tensor", "F",
           "functional", "Distribution", "to_device", "scalar", "as_float", "as_int64", "take_along_axis",
           "value_range", "categorical_sample", "rand", "randint", "randn_like", "uniform", "where", "obs_batch",
           "column", "discrete_actions", "continuous_actions", "two_q", "flat_q", "optimizer_params", "freeze",
           "frozen", "info_mean", "info_zero", "adam", "set_lr", "step", "info_scalar", "host_floats", "shape_error",
           "gradient", "cosine_adam", "adamw"]


def tensor(array: Any, dtype: str | None = None) -> paddle.Tensor:
    """A tensor on paddle's current device from a numpy array, cast to the numpy ``dtype`` name if given."""
    return paddle.to_tensor(np.asarray(array, dtype=dtype))


def to_numpy(value: paddle.Tensor) -> np.ndarray:
    """The tensor's values as a numpy array on the host."""
    return value.numpy()


def no_grad() -> Any:
    """A context manager that records no autograd graph (``paddle.no_grad``)."""
    return paddle.no_grad()


def seed(value: int) -> None:
    """Seed paddle's global generator."""
    paddle.seed(value)


def concat(tensors: Sequence[paddle.Tensor], axis: int = -1) -> paddle.Tensor:
    """``paddle.concat`` along ``axis``."""
    return paddle.concat(list(tensors), axis=axis)


def randperm(n: int) -> paddle.Tensor:
    """A random permutation of ``0..n-1``, int64 ``[n]``, from paddle's global generator."""
    return paddle.randperm(n)


def zeros_parameter(layer: paddle.nn.Layer, shape: Sequence[int]) -> paddle.Tensor:
    """A trainable float32 parameter of zeros created by ``layer`` (assign it to an attribute of ``layer``)."""
    return layer.create_parameter(list(shape), default_initializer=paddle.nn.initializer.Constant(0.0))


# -- the algorithms' layer: what the one-file algorithms (parl_algorithms.algorithms) call where torch and
# paddle differ in name or semantics; torch's module has the same names with the same meaning

Tensor = paddle.Tensor
F = paddle.nn.functional
functional = _functional
Distribution = paddle.distribution.Distribution


def to_device(device: Any, *values: Any) -> tuple[Any, ...]:
    """``values`` unchanged: paddle computes on its process-wide device, and the checks convert numpy arrays."""
    del device
    return values


def scalar(value: float, device: Any, requires_grad: bool = False) -> paddle.Tensor:
    """A float32 0-d tensor on paddle's device (a learned scalar such as SAC's ``log_alpha`` when ``requires_grad``)."""
    del device
    return paddle.to_tensor(value, dtype="float32", stop_gradient=not requires_grad)


def as_float(value: Any, name: str) -> paddle.Tensor:
    """A float32 tensor from a tensor / numpy array / list; ``TypeError`` naming ``name`` when not numeric."""
    return _as_float(value, name)


def as_int64(value: Any, device: Any) -> paddle.Tensor:
    """An int64 tensor from a tensor / numpy array / list (on paddle's device: ``device`` is torch's argument)."""
    del device
    tensor = value if isinstance(value, paddle.Tensor) else paddle.to_tensor(value)
    return tensor.astype("int64")


def take_along_axis(x: paddle.Tensor, index: paddle.Tensor, axis: int) -> paddle.Tensor:
    """``x``'s entries at ``index`` along ``axis`` (``paddle.take_along_axis``; torch's ``gather``)."""
    return paddle.take_along_axis(x, index, axis=axis)


def value_range(x: paddle.Tensor) -> tuple[int, int]:
    """``(min, max)`` of an integer tensor as Python ints in one device -> host read; ``(0, 0)`` when empty."""
    values = x.numpy()  # (checked in numpy: two paddle reductions, each read back, cost ~2x more)
    if not values.size:
        return 0, 0
    return int(values.min()), int(values.max())


def categorical_sample(probs: paddle.Tensor) -> paddle.Tensor:
    """int64 indices ``probs.shape[:-1]`` drawn from the rows of ``probs`` (paddle's global generator)."""
    flat = probs.reshape([-1, probs.shape[-1]])
    return paddle.multinomial(flat, 1).squeeze(1).reshape(probs.shape[:-1])


def rand(shape: Sequence[int], like: paddle.Tensor) -> paddle.Tensor:
    """float32 uniform draws in ``[0, 1)`` of ``shape`` on paddle's device (paddle's global generator)."""
    del like
    return paddle.rand(list(shape))


def randint(high: int, shape: Sequence[int], like: paddle.Tensor) -> paddle.Tensor:
    """int64 uniform draws in ``[0, high)`` of ``shape`` on paddle's device (paddle's global generator)."""
    del like
    return paddle.randint(0, high, list(shape), dtype="int64")


def randn_like(x: paddle.Tensor) -> paddle.Tensor:
    """Standard normal draws of ``x``'s shape and dtype (paddle's global generator)."""
    return paddle.randn(x.shape, dtype=x.dtype)


def uniform(shape: Sequence[int], low: float, high: float, like: paddle.Tensor) -> paddle.Tensor:
    """float32 uniform draws in ``[low, high)`` of ``shape`` on paddle's device (paddle's global generator)."""
    del like
    return paddle.uniform(list(shape), dtype="float32", min=low, max=high)


def where(condition: paddle.Tensor, x: paddle.Tensor, y: paddle.Tensor) -> paddle.Tensor:
    """``x`` where ``condition`` holds, else ``y`` (``paddle.where``)."""
    return paddle.where(condition, x, y)


def continuous_actions(action: Any, batch: int, algo: str, act_dim: int | None = None) -> paddle.Tensor:
    """float32 ``[B, act_dim]`` continuous actions; ``ValueError`` naming the fix for indices or a wrong shape."""
    return _continuous_actions(action, batch, algo, act_dim)


def freeze(params: Iterable[paddle.Tensor]) -> None:
    """Let ``params`` take no gradient from now on (a target network's)."""
    for param in params:
        param.stop_gradient = True


@contextlib.contextmanager
def frozen(params: list[paddle.Tensor]) -> Iterator[None]:
    """Within the block ``params`` take no gradient; their own flags come back after it."""
    flags = [p.stop_gradient for p in params]
    for p in params:
        p.stop_gradient = True
    try:
        yield
    finally:
        for p, flag in zip(params, flags, strict=True):
            p.stop_gradient = flag


def adam(params: Any, lr: float, eps: float = 1e-8, max_grad_norm: float | None = None) -> paddle.optimizer.Adam:
    """``paddle.optimizer.Adam``; with ``max_grad_norm`` it clips the gradients' global L2 norm in each step."""
    return _adam(params, lr=lr, eps=eps, max_grad_norm=max_grad_norm)


def cosine_adam(params: Any, lr: float,
                steps: int) -> tuple[paddle.optimizer.Adam, paddle.optimizer.lr.CosineAnnealingDecay]:
    """``(optimizer, scheduler)``: Adam whose learning rate is cosine-annealed from ``lr`` to 0 over ``steps``."""
    scheduler = paddle.optimizer.lr.CosineAnnealingDecay(lr, T_max=steps)
    return _adam(params, lr=scheduler), scheduler


def adamw(params: Any, lr: float, weight_decay: float, lr_factor: Callable[[int], float],
          max_grad_norm: float | None = None) -> tuple[paddle.optimizer.AdamW, paddle.optimizer.lr.LambdaDecay]:
    """``(optimizer, scheduler)``: AdamW at ``lr * lr_factor(step)``, clipping the global grad norm in its step."""
    scheduler = paddle.optimizer.lr.LambdaDecay(lr, lr_factor)
    clip = None if max_grad_norm is None else paddle.nn.ClipGradByGlobalNorm(max_grad_norm)
    optimizer = paddle.optimizer.AdamW(learning_rate=scheduler, parameters=params, weight_decay=weight_decay,
                                       grad_clip=clip)
    return optimizer, scheduler


def set_lr(optimizer: paddle.optimizer.Optimizer, lr: float) -> None:
    """Set the learning rate of every parameter group for the next steps."""
    _set_lr(optimizer, lr)


def step(optimizer: paddle.optimizer.Optimizer, loss: paddle.Tensor, max_grad_norm: float | None = None,
         return_norm: bool = False) -> paddle.Tensor | None:
    """Clear grads, backpropagate ``loss``, step (the optimizer clips); the global norm before the clip if asked."""
    del max_grad_norm  # built into the optimizer by adam(): paddle clips inside its step
    if not return_norm:
        _step(optimizer, loss)
        return None
    optimizer.clear_grad()
    loss.backward()
    norm = grad_norm(optimizer)
    if not fast_adam_step(optimizer):
        optimizer.step()
    return norm


def info_scalar(value: paddle.Tensor) -> float:
    """A diagnostic for ``last_info``: the one-element tensor's value as a host float."""
    return host_float(value)


def info_mean(value: paddle.Tensor) -> float:
    """A diagnostic for ``last_info``: the mean of ``value`` as a host float."""
    return host_float(value.detach().mean())


def info_zero(device: Any) -> float:
    """The zero diagnostic (a host float, as :func:`info_scalar` returns)."""
    del device
    return 0.0


def host_floats(*values: paddle.Tensor) -> tuple[float, ...]:
    """The values of one-element tensors as Python floats."""
    return tuple(host_float(v) for v in values)


shape_error = rewrite_shape_error  # (the same function: no frame of its own in a traceback)


def gradient(fn: Callable[[paddle.Tensor], paddle.Tensor], x: paddle.Tensor) -> paddle.Tensor:
    """d fn(x) / d x of a scalar ``fn`` at a detached copy of ``x`` (recorded under ``no_grad`` too); no graph."""
    with paddle.enable_grad():
        x = x.detach()
        x.stop_gradient = False
        (grad,) = paddle.grad([fn(x)], [x])
    return grad
