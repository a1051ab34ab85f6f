"""Helpers shared by the paddle algorithms: argument checks, batch-shape normalisation, Adam."""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

import numpy as np
import paddle
from paddle import _C_ops
from paddle.framework import _current_expected_place as _current_place

from parl_algorithms._validation import positive, unit_interval
from parl_core.paddle.algorithm import optimizer_parameters

__all__ = ["positive", "unit_interval", "as_float", "obs_batch", "column", "discrete_actions",
           "continuous_actions", "two_q", "flat_q", "adam", "set_lr", "readable_shape_errors",
           "rewrite_shape_error", "optimizer_parameters", "grad_norm", "step", "fast_adam_step",
           "accepts_single_obs", "host_float"]


_Tensor = paddle.Tensor
_FLOAT32 = paddle.float32


def as_float(value: Any, name: str) -> paddle.Tensor:
    """float32 paddle tensor from a tensor / numpy array / list.

    Raises:
        TypeError: ``value`` is not numeric.
    """
    if isinstance(value, _Tensor):
        dtype = value.dtype  # (paddle 3 returns the float32 singleton: ``is`` is 4x cheaper than ``==``)
        return value if dtype is _FLOAT32 or dtype == _FLOAT32 else value.astype("float32")
    array = np.asarray(value)
    if array.dtype.kind not in "biufc":  # bool / int / uint / float / complex (np.issubdtype: 10x the time)
        raise TypeError(f"{name} must be numeric, got dtype {array.dtype}; pass np.asarray(x, dtype=np.float32)")
    return paddle.to_tensor(array.astype(np.float32))


def host_float(value: Any) -> float:
    """``float(value)`` of a one-element tensor (a logged loss, a mean) or a number.

    ``Tensor.item()`` reads the value back in about 1 us; ``float(tensor)`` (``Tensor.__float__``) gives the
    same float after 12-25 us of Python checks per call on paddle 3.3 / 2.6 (CPU), several times per update.

    Raises:
        ValueError: the tensor has more than one element (paddle's ``item()`` error).
    """
    return float(value.item()) if isinstance(value, paddle.Tensor) else float(value)


def obs_batch(obs: Any, algo: str) -> paddle.Tensor:
    """float32 ``[B, *obs_shape]``; a single observation must be batched by the caller.

    On the acting path (``predict`` / ``sample`` of one observation) every tensor attribute read is a call
    into paddle's C++ that costs several microseconds next to a small network's forward pass, so the shape
    is read once (``len(obs.shape)``; on paddle 2.6 ``Tensor.ndim`` is a Python property over it).

    Raises:
        TypeError: ``obs`` is not numeric.
        ValueError: ``obs`` has fewer than 2 dimensions.
    """
    obs = as_float(obs, "obs")
    shape = obs.shape
    if len(shape) < 2:
        raise ValueError(f"{algo}: obs must be a batch [B, *obs_shape], got shape {tuple(shape)}; "
                         "add a batch axis with obs[None] / np.expand_dims(obs, 0)")
    return obs


def accepts_single_obs(method: Callable) -> Callable:
    """Let ``method(obs, ...)`` take one unbatched vector observation ``[obs_dim]``, as PARL's algorithms do
    (the torch helper of the same name): it runs as a batch of one and the batch axis is removed from the
    result (``[act_dim]`` instead of ``[1, act_dim]``). Batched input is unchanged."""

    @functools.wraps(method)
    def wrapper(self: Any, obs: Any, *args: Any, **kwargs: Any) -> Any:
        if getattr(obs, "ndim", None) != 1:
            return method(self, obs, *args, **kwargs)
        out = method(self, as_float(obs, "obs").unsqueeze(0), *args, **kwargs)
        return tuple(x.squeeze(0) for x in out) if isinstance(out, tuple) else out.squeeze(0)

    return wrapper


def _tensor(value: Any) -> paddle.Tensor:
    return value if isinstance(value, paddle.Tensor) else paddle.to_tensor(np.asarray(value))


def column(value: Any, name: str, batch: int, algo: str, dtype: str = "float32") -> paddle.Tensor:
    """Accept ``[B]`` or ``[B, 1]`` and return ``[B]`` of ``dtype``."""
    tensor = _tensor(value)
    if tensor.ndim == 2 and tensor.shape[1] == 1:
        tensor = tensor.squeeze(1)
    if tensor.ndim != 1 or tensor.shape[0] != batch:
        raise ValueError(f"{algo}: {name} must have shape [B] or [B, 1] with B={batch} (the batch size of obs), "
                         f"got {tuple(tensor.shape)}")
    target = getattr(paddle, dtype)
    return tensor if tensor.dtype is target or tensor.dtype == target else tensor.astype(dtype)


def discrete_actions(action: Any, batch: int, num_actions: int, algo: str) -> paddle.Tensor:
    """int64 ``[B]`` action indices in ``[0, num_actions)``.

    Raises:
        ValueError: the actions are not integer indices of one discrete action per row, or out of range.
    """
    tensor = _tensor(action)
    hint = "for a continuous (Box) action space use DDPG, TD3, SAC or PPO(continuous_action=True)"
    # one device -> host read of the actions, checked in numpy (three paddle reductions, each read back
    # on its own, cost more than the update's Adam kernels on a small network)
    values = tensor.numpy()
    if values.dtype.kind == "f" and not np.array_equal(values, np.round(values)):
        raise ValueError(f"{algo} is for discrete action spaces: action must hold integer indices [B], got "
                         f"fractional values; {hint}")
    if tensor.ndim == 2 and tensor.shape[1] == 1:
        tensor = tensor.squeeze(1)
    if tensor.ndim != 1 or tensor.shape[0] != batch:
        raise ValueError(f"{algo}: action must be discrete indices of shape [B] or [B, 1] with B={batch}, got "
                         f"{tuple(tensor.shape)}; {hint}")
    if values.size and (values.min() < 0 or values.max() >= num_actions):
        raise ValueError(f"{algo}: action indices must lie in [0, {num_actions}) (the model's output size), got "
                         f"range [{int(values.min())}, {int(values.max())}]")
    tensor = tensor if tensor.dtype == paddle.int64 else tensor.astype("int64")
    return tensor


def continuous_actions(action: Any, batch: int, algo: str, act_dim: int | None = None) -> paddle.Tensor:
    """float32 ``[B, act_dim]`` continuous actions (``act_dim`` checked when given).

    Raises:
        ValueError: the actions are a vector of indices (a Discrete action space) or the shape does not fit.
    """
    tensor = as_float(action, "action")
    if tensor.ndim != 2 or tensor.shape[0] != batch or (act_dim is not None and tensor.shape[1] != act_dim):
        expected = f"[B={batch}, act_dim{'=' + str(act_dim) if act_dim is not None else ''}]"
        raise ValueError(f"{algo} is for continuous (Box) action spaces: action must be float32 {expected}, got "
                         f"{tuple(tensor.shape)}; for a Discrete action space use DQN, A2C or PPO "
                         "(continuous_action=False)")
    return tensor


def flat_q(q: paddle.Tensor, algo: str) -> paddle.Tensor:
    """``[B, 1]`` or ``[B]`` -> ``[B]``."""
    if q.ndim == 2 and q.shape[1] == 1:
        return q.squeeze(1)
    if q.ndim != 1:
        raise ValueError(f"{algo}: the critic must return Q values of shape [B] or [B, 1], got {tuple(q.shape)}")
    return q


def two_q(output: Any, algo: str) -> tuple[paddle.Tensor, paddle.Tensor]:
    """Unpack ``model.value(obs, action)`` returning two critics ``(Q1, Q2)``, each ``[B]`` or ``[B, 1]``."""
    if not (isinstance(output, (tuple, list)) and len(output) == 2):
        raise ValueError(f"{algo} needs model.value(obs, action) to return a pair (Q1, Q2) of twin critics, "
                         f"got {type(output).__name__}")
    return flat_q(output[0], algo), flat_q(output[1], algo)


def adam(params: Any, lr: float, eps: float = 1e-8, max_grad_norm: float | None = None,
         global_norm: bool = True) -> paddle.optimizer.Adam:
    """``paddle.optimizer.Adam`` (PARL's optimizer), optionally with gradient clipping.

    Args:
        params: the parameters to update.
        lr: learning rate (> 0).
        eps: Adam's epsilon.
        max_grad_norm: clip gradients to this L2 norm; ``None`` does not clip.
        global_norm: clip the norm of all gradients together (``ClipGradByGlobalNorm``) rather than each
            tensor's (``ClipGradByNorm``, PARL's PPO).
    """
    clip = None
    if max_grad_norm is not None:
        clip = (paddle.nn.ClipGradByGlobalNorm if global_norm else paddle.nn.ClipGradByNorm)(float(max_grad_norm))
    return paddle.optimizer.Adam(learning_rate=lr, parameters=list(params), epsilon=eps, grad_clip=clip)


def set_lr(optimizer: paddle.optimizer.Optimizer, lr: float) -> None:
    """Set a (float) learning rate for the next steps."""
    optimizer.set_lr(float(lr))


def grad_norm(optimizer: paddle.optimizer.Optimizer) -> paddle.Tensor:
    """The global L2 norm of the gradients of ``optimizer``'s parameters (before its clip), a float32 0-d tensor
    (0 when no parameter has a gradient)."""
    squares = [paddle.sum(paddle.square(p.grad)) for p in optimizer_parameters(optimizer) if p.grad is not None]
    return paddle.sqrt(paddle.add_n(squares)) if squares else paddle.zeros([], dtype="float32")


def step(optimizer: paddle.optimizer.Optimizer, loss: paddle.Tensor) -> None:
    """``clear_grad``, ``backward``, ``step``.

    For the optimizers :func:`adam` builds (a plain ``paddle.optimizer.Adam`` with a float learning rate,
    optionally ``ClipGradByGlobalNorm`` / ``ClipGradByNorm``) the step runs :func:`fast_adam_step`: the same
    kernels on the same tensors as ``optimizer.step()`` (bit-identical results), without paddle's per-step
    Python set-up. Anything else goes through ``optimizer.step()``.
    """
    optimizer.clear_grad()
    loss.backward()
    if not fast_adam_step(optimizer):
        optimizer.step()


_ADAM_KEYS = ("_moment1_acc_str", "_moment2_acc_str", "_beta1_pow_acc_str", "_beta2_pow_acc_str")


def _fast_adam_eligible(optimizer: paddle.optimizer.Optimizer) -> bool:
    """Whether :func:`fast_adam_step` reproduces ``optimizer.step()`` exactly (checked once per optimizer); the
    ``adam_`` kernel signature it calls is paddle 3's (``_amsgrad`` exists), paddle 2.6 takes ``optimizer.step()``."""
    if type(optimizer) is not paddle.optimizer.Adam:  # (any other optimizer, duck-typed ones too, steps itself)
        return False
    params = optimizer._parameter_list
    clip = optimizer._grad_clip
    return (isinstance(optimizer._learning_rate, float)
            and bool(params) and not isinstance(params[0], dict) and not optimizer._use_multi_tensor
            and getattr(optimizer, "_amsgrad", None) is False and not optimizer._multi_precision
            and not optimizer._lazy_mode
            and optimizer.regularization is None
            and not isinstance(optimizer._beta1, paddle.Tensor) and not isinstance(optimizer._beta2, paddle.Tensor)
            and (clip is None or type(clip) is paddle.nn.ClipGradByNorm
                 or (type(clip) is paddle.nn.ClipGradByGlobalNorm and not clip.auto_skip_clip
                     and clip.group_name == "default_group"))
            and all(p.dtype == paddle.float32 and getattr(p, "need_clip", True)
                    and getattr(p, "regularizer", None) is None
                    and (getattr(p, "optimize_attr", None) or {}).get("learning_rate", 1.0) == 1.0
                    and not p.is_dist() for p in params))


def fast_adam_step(optimizer: paddle.optimizer.Optimizer) -> bool:
    """One ``optimizer.step()`` of a plain Adam issued straight to paddle's kernels; ``False`` (nothing done)
    where the optimizer is of another kind, or its state is not yet created (its first step).

    ``paddle.optimizer.Adam.step`` spends most of a small network's update in Python (a program guard,
    flag reads, a learning-rate tensor and an ``adam_`` call set up per parameter, the clip's own loop);
    this function makes the same calls, in the same order on the same tensors: ``squared_l2_norm`` of every
    gradient, their stacked sum, ``sqrt``, ``max_norm / max(norm, max_norm)`` and one multiply per gradient
    (``ClipGradByGlobalNorm``), or ``clip_by_norm`` per gradient (``ClipGradByNorm``); then ``adam_`` per
    parameter with the optimizer's own moments and beta powers, so its ``state_dict`` and later
    ``optimizer.step()`` calls carry on unchanged.
    """
    eligible = getattr(optimizer, "__dict__", {}).get("_parl_fast_adam")
    if eligible is None:
        eligible = _fast_adam_eligible(optimizer)
        try:
            optimizer._parl_fast_adam = eligible
        except AttributeError:  # (an optimizer object that takes no new attribute: checked again next time)
            pass
    if not eligible:
        return False
    accumulators = optimizer._accumulators
    tables = [accumulators.get(getattr(optimizer, key)) for key in _ADAM_KEYS]
    params, grads = [], []
    for param in optimizer._parameter_list:
        if param.stop_gradient:
            continue
        grad = param._grad_ivar()
        if grad is None:
            continue
        if grad.is_selected_rows() or any(table is None or param.name not in table for table in tables):
            return False
        params.append(param)
        grads.append(grad)
    lr = optimizer._global_learning_rate()
    if lr is None:
        return False
    if not params:
        return True
    clip = optimizer._grad_clip
    with paddle.no_grad():
        if type(clip) is paddle.nn.ClipGradByGlobalNorm:
            norm = paddle.sqrt(paddle.stack([_C_ops.squared_l2_norm(g) for g in grads]).sum())
            max_norm = _C_ops.full([1], clip.clip_norm, paddle.float32, _current_place())  # (paddle.full's kernel)
            scale = paddle.divide(x=max_norm, y=paddle.maximum(x=norm, y=max_norm))
            grads = [paddle.multiply(g, scale) for g in grads]
        elif clip is not None:
            grads = [_C_ops.clip_by_norm(g, clip.clip_norm) for g in grads]
        moment1, moment2, beta1_pow, beta2_pow = tables
        beta1, beta2, eps = optimizer._beta1, optimizer._beta2, optimizer._epsilon
        for param, grad in zip(params, grads, strict=True):
            name = param.name
            _C_ops.adam_(param, grad, lr, moment1[name], moment2[name], None, beta1_pow[name], beta2_pow[name],
                         None, None, beta1, beta2, eps, False, 1000, False, False, False)
    return True


_SHAPE_ERROR_HINTS = ("shape", "dimension", "Dims", "mismatch", "must be equal")


def rewrite_shape_error(algo: Any, method: str, err: Exception, args: tuple) -> None:
    """Raise, from ``err``, a ``ValueError`` that names ``algo``'s ``method``, the shapes of ``args`` and the fix,
    when ``err`` is paddle's shape error from inside the user's model; return otherwise (the caller re-raises).

    The acting methods (``predict`` / ``sample``) call it from their own ``except`` clause instead of being
    wrapped by :func:`readable_shape_errors`: a wrapper's frame and ``*args`` packing cost several
    microseconds per call next to a small network's forward pass; a ``try`` block costs nothing until it raises.
    """
    message = str(err)
    if message.startswith(type(algo).__name__) or not any(h in message for h in _SHAPE_ERROR_HINTS):
        return
    shapes = ", ".join(str(tuple(a.shape)) for a in args if hasattr(a, "shape"))
    raise ValueError(f"{type(algo).__name__}.{method}: the model rejected inputs of shapes "
                     f"[{shapes}] ({message.strip().splitlines()[-1]}); pass obs as [B, *obs_shape] with "
                     "the observation shape the model was built for, and actions / rewards shaped as "
                     "the method documents") from err


def readable_shape_errors(method: Callable) -> Callable:
    """Turn paddle's shape ``ValueError`` raised inside the user's model into one that names the algorithm
    method, the input shapes and the fix (e.g. obs of the wrong feature size); see :func:`rewrite_shape_error`."""

    @functools.wraps(method)
    def wrapper(self: Any, *args: Any, **kwargs: Any) -> Any:
        try:
            return method(self, *args, **kwargs)
        except (ValueError, RuntimeError) as err:
            rewrite_shape_error(self, method.__name__, err, (*args, *kwargs.values()))
            raise

    return wrapper
