"""Helpers shared by the torch algorithms: argument checks and batch-shape normalisation."""

from __future__ import annotations

import functools
import operator
from collections.abc import Callable
from typing import Any

import torch
from torch.optim import optimizer as _torch_optimizer

from parl_algorithms._validation import as_float_tensor, positive, unit_interval  # noqa: F401 (re-exported)


def obs_batch(obs: Any, algo: str) -> torch.Tensor:
    """float32 ``[B, *obs_shape]``; a single observation must be batched by the caller."""
    obs = as_float_tensor(obs, "obs")
    if obs.ndim < 2:
        raise ValueError(f"{algo}: obs must be a batch [B, *obs_shape], got shape {tuple(obs.shape)}; "
                         "add a batch axis with obs[None] / np.expand_dims(obs, 0)")
    return obs


def column(value: Any, name: str, batch: int, algo: str, dtype: torch.dtype = torch.float32) -> torch.Tensor:
    """Accept ``[B]`` or ``[B, 1]`` and return ``[B]`` of ``dtype``."""
    tensor = torch.as_tensor(value) if not isinstance(value, torch.Tensor) else value
    if tensor.ndim == 2 and tensor.shape[1] == 1:
        tensor = tensor.squeeze(1)
    if tensor.ndim != 1 or tensor.shape[0] != batch:
        raise ValueError(f"{algo}: {name} must have shape [B] or [B, 1] with B={batch} (the batch size of obs), "
                         f"got {tuple(tensor.shape)}")
    return tensor.to(dtype)


def discrete_actions(action: Any, batch: int, num_actions: int, algo: str) -> torch.Tensor:
    """int64 ``[B]`` action indices in ``[0, num_actions)``.

    Raises:
        ValueError: the actions are not integer indices of one discrete action per row (a continuous
            action space given to a discrete-action algorithm) or lie outside the range.
    """
    tensor = torch.as_tensor(action) if not isinstance(action, torch.Tensor) else action
    if tensor.is_floating_point():
        if not torch.equal(tensor, torch.round(tensor)):
            raise ValueError(f"{algo} is for discrete action spaces: action must hold integer indices [B], got "
                             "fractional values; for a continuous (Box) action space use DDPG, TD3, SAC or "
                             "PPO(continuous_action=True)")
    if tensor.ndim == 2 and tensor.shape[1] == 1:
        tensor = tensor.squeeze(1)
    if tensor.ndim != 1 or tensor.shape[0] != batch:
        raise ValueError(f"{algo}: action must be discrete indices of shape [B] or [B, 1] with B={batch}, got "
                         f"{tuple(tensor.shape)}; for a continuous (Box) action space use DDPG, TD3, SAC or "
                         "PPO(continuous_action=True)")
    tensor = tensor.long()
    if tensor.numel():
        low, high = torch.aminmax(tensor)
        low, high = torch.stack((low, high)).tolist()  # one device -> host copy
        if low < 0 or high >= num_actions:
            raise ValueError(f"{algo}: action indices must lie in [0, {num_actions}) (the model's output size), "
                             f"got range [{low}, {high}]")
    return tensor


def continuous_actions(action: Any, batch: int, act_dim: int | None, algo: str) -> torch.Tensor:
    """float32 ``[B, act_dim]`` continuous actions.

    Raises:
        ValueError: the actions are a vector of indices (a discrete action space given to a
            continuous-action algorithm) or the shape does not fit.
    """
    tensor = as_float_tensor(action, "action")
    if tensor.ndim != 2 or tensor.shape[0] != batch or (act_dim is not None and tensor.shape[1] != act_dim):
        expected = f"[B={batch}, act_dim{'=' + str(act_dim) if act_dim is not None else ''}]"
        raise ValueError(f"{algo} is for continuous (Box) action spaces: action must be float32 {expected}, got "
                         f"{tuple(tensor.shape)}; for a Discrete action space use DQN, A2C or PPO "
                         "(continuous_action=False)")
    return tensor


def two_q(output: Any, algo: str) -> tuple[torch.Tensor, torch.Tensor]:
    """Unpack ``model.value(obs, action)`` returning two critics ``(Q1, Q2)``, each ``[B]`` or ``[B, 1]``."""
    if not (isinstance(output, (tuple, list)) and len(output) == 2):
        raise ValueError(f"{algo} needs model.value(obs, action) to return a pair (Q1, Q2) of twin critics, "
                         f"got {type(output).__name__}")
    return flat_q(output[0], algo), flat_q(output[1], algo)


def flat_q(q: torch.Tensor, algo: str) -> torch.Tensor:
    """``[B, 1]`` or ``[B]`` -> ``[B]``."""
    if q.ndim == 2 and q.shape[1] == 1:
        return q.squeeze(1)
    if q.ndim != 1:
        raise ValueError(f"{algo}: the critic must return Q values of shape [B] or [B, 1], got {tuple(q.shape)}")
    return q


def optimizer_params(optimizer: torch.optim.Optimizer) -> list[torch.Tensor]:
    """The parameters an optimizer updates, in order (a list walk, unlike ``Module.parameters()``, which
    recurses through every sub-module on each call)."""
    return [p for group in optimizer.param_groups for p in group["params"]]


def clip_grad_norm(parameters: Any, max_norm: float) -> torch.Tensor:
    """``torch.nn.utils.clip_grad_norm_`` (L2, same math: ``g *= min(max_norm / (norm + 1e-6), 1)``) in
    three tensor calls, without its per-call grouping by device and dtype (~0.1 ms on small networks).

    Falls back to ``torch.nn.utils.clip_grad_norm_`` when the gradients span several devices / dtypes
    or are sparse.

    Args:
        parameters: iterable of tensors whose ``.grad`` is clipped in place.
        max_norm: the largest allowed L2 norm of all gradients together.

    Returns:
        the total L2 norm of the gradients before clipping, a float32 scalar tensor.
    """
    params = list(parameters)
    grads = [p.grad for p in params if p.grad is not None]
    if not grads:
        return torch.zeros((), device=params[0].device if params else None)
    first = grads[0]
    if any(g.is_sparse or g.device != first.device or g.dtype != first.dtype for g in grads):
        return torch.nn.utils.clip_grad_norm_(params, max_norm)
    with torch.no_grad():
        total = torch.linalg.vector_norm(torch.stack(torch._foreach_norm(grads, 2.0)), 2.0)
        torch._foreach_mul_(grads, torch.clamp(float(max_norm) / (total + 1e-6), max=1.0))
    return total


# FusedAdam's fast path calls torch internals (``torch._fused_adam_``, ``Optimizer.profile_hook_step``, the
# global step-hook dicts) whose names and signatures are not a public contract: it is used only on the torch
# minor versions it was tested against, and only when every internal it touches exists. Elsewhere ``adam()``
# returns plain ``torch.optim.Adam(fused=True)`` (same results, ~25 us more Python per step).
_FAST_ADAM_TORCH_VERSIONS = ("2.13.",)
_FAST_ADAM = (
    torch.__version__.startswith(_FAST_ADAM_TORCH_VERSIONS)
    and hasattr(torch, "_fused_adam_")
    and hasattr(torch.optim.Optimizer, "profile_hook_step")
    and hasattr(_torch_optimizer, "_global_optimizer_pre_hooks")
    and hasattr(_torch_optimizer, "_global_optimizer_post_hooks")
    and all(hasattr(getattr(torch.optim.Optimizer, name), "__wrapped__")
            for name in ("add_param_group", "state_dict", "load_state_dict"))
)
# parameter dtypes whose state the fast path creates itself (as Adam._init_group does for fused=True)
_FUSED_DTYPES = (torch.float32, torch.float64)


class FusedAdam(torch.optim.Adam):
    """``torch.optim.Adam(fused=True)`` whose ``step()`` calls the fused kernel directly.

    ``Optimizer.step`` spends ~0.1 ms per call in Python (profiler record, hook and ``_init_group``
    bookkeeping), as long as the fused kernel itself on 64x64 networks. This class creates the Adam state
    of a parameter at its first gradient as ``torch.optim.Adam``'s fused path does (a float32 ``step`` and
    zero moments), and issues the same two calls ``torch.optim.Adam`` issues on one device/dtype (``_foreach_add_``
    on the step counters, then ``torch._fused_adam_``) on the same state tensors, so results,
    ``state_dict()`` and learning-rate changes through ``param_groups`` are those of ``torch.optim.Adam``.
    It falls back to ``torch.optim.Adam.step`` for a closure, step hooks, amsgrad, maximize, a tensor
    lr, grad scaling, or parameters on several devices / dtypes.

    The step counters of a parameter group are 0-d views of one float32 tensor, counted with one ``add_``:
    ``torch._foreach_add_`` over 0-d CPU tensors costs ~4 us per tensor (~45 us per step for a 64x64
    actor-critic's 12 parameters). Their values, dtype and shape are those of torch's; after
    ``load_state_dict`` (or any replacement of a ``step`` entry) the next step rebuilds the views.
    """

    # Optimizer.add_param_group without its lazy ``torch._dynamo`` import (~1 s at the first optimizer of a
    # process; dynamo is only needed under torch.compile, which never traces this eager optimizer)
    # (also ``state_dict`` / ``load_state_dict``, which a checkpoint calls)
    if _FAST_ADAM:
        add_param_group = torch.optim.Optimizer.add_param_group.__wrapped__
        state_dict = torch.optim.Optimizer.state_dict.__wrapped__
        load_state_dict = torch.optim.Optimizer.load_state_dict.__wrapped__

    # torch.optim.Adam.step with torch's profiler record and step hooks (what Optimizer.__init__ would
    # wrap ``step`` in); ``step.hooked`` below keeps Optimizer from wrapping the fast path
    _slow_step = (torch.optim.Optimizer.profile_hook_step(torch.optim.Adam.step) if _FAST_ADAM
                  else torch.optim.Adam.step)

    def step(self, closure: Callable | None = None) -> Any:  # noqa: D102 (same contract as Adam.step)
        if (closure is not None or self._optimizer_step_pre_hooks or self._optimizer_step_post_hooks
                or _torch_optimizer._global_optimizer_pre_hooks or _torch_optimizer._global_optimizer_post_hooks):
            return self._slow_step(closure)
        calls = []
        for group in self.param_groups:
            lr = group["lr"]
            if group["amsgrad"] or group["maximize"] or group.get("decoupled_weight_decay") \
                    or isinstance(lr, torch.Tensor) or group.get("differentiable"):
                return self._slow_step(closure)
            params, grads, exp_avgs, exp_avg_sqs, steps = [], [], [], [], []
            for p in group["params"]:
                if p.grad is None:
                    continue
                if p.grad.is_sparse or p.dtype not in _FUSED_DTYPES:
                    return self._slow_step(closure)
                state = self.state.get(p)
                if not state:  # Adam._init_group's fused-path state, created without Optimizer.step
                    state = self.state[p] = {
                        "step": torch.zeros((), dtype=torch.float32, device=p.device),
                        "exp_avg": torch.zeros_like(p, memory_format=torch.preserve_format),
                        "exp_avg_sq": torch.zeros_like(p, memory_format=torch.preserve_format),
                    }
                params.append(p)
                grads.append(p.grad)
                exp_avgs.append(state["exp_avg"])
                exp_avg_sqs.append(state["exp_avg_sq"])
                steps.append(state["step"])
            if params:
                first = params[0]
                if any(t.device != first.device or t.dtype != first.dtype for t in params):
                    return self._slow_step(closure)
                calls.append((group, params, grads, exp_avgs, exp_avg_sqs, steps))
        with torch.no_grad():
            for group, params, grads, exp_avgs, exp_avg_sqs, steps in calls:
                beta1, beta2 = group["betas"]
                steps = self._count_steps(group, params, steps)
                torch._fused_adam_(params, grads, exp_avgs, exp_avg_sqs, [], steps, amsgrad=False, lr=group["lr"],
                                   beta1=float(beta1), beta2=float(beta2), weight_decay=group["weight_decay"],
                                   eps=group["eps"], maximize=False, grad_scale=None, found_inf=None)
        return None

    step.hooked = True  # type: ignore[attr-defined]

    def _count_steps(self, group: dict, params: list[torch.Tensor], steps: list[torch.Tensor]) -> list[torch.Tensor]:
        """``torch._foreach_add_(steps, 1)`` as one ``add_`` on the tensor whose views ``steps`` are; the first
        call (and any call after a ``step`` entry was replaced) copies the counters into a new such tensor and
        stores its views in the parameters' states. Returns the (possibly new) step tensors, in order."""
        flats = self.__dict__.setdefault("_step_flats", {})  # id(param group) -> (flat counters, their views)
        cached = flats.get(id(group))
        if cached is None or len(cached[1]) != len(steps) or not all(map(operator.is_, steps, cached[1])):
            flat = torch.stack(steps)  # (the counters' current values)
            views = flat.unbind(0)
            for p, view in zip(params, views, strict=True):
                self.state[p]["step"] = view
            flats[id(group)] = cached = (flat, views)
        cached[0].add_(1)
        return list(cached[1])

    def zero_grad(self, set_to_none: bool = True) -> None:
        """As ``torch.optim.Optimizer.zero_grad``; the default ``set_to_none=True`` path only drops the
        ``.grad`` references (no profiler record or per-call grouping)."""
        if not set_to_none:
            super().zero_grad(set_to_none=False)
            return
        for group in self.param_groups:
            for p in group["params"]:
                p.grad = None


def adam(params: Any, lr: float, eps: float = 1e-8) -> torch.optim.Adam:
    """``torch.optim.Adam`` with the fused kernel where the parameters' device supports it.

    The fused implementation computes the same update with one kernel per step instead of a Python
    loop over tensors (2x faster steps for small networks on CPU), and :class:`FusedAdam` skips
    ``Optimizer.step``'s per-call Python bookkeeping; it falls back to the default implementation on
    torch versions / devices without the fused kernel.
    """
    params = list(params)
    if _FAST_ADAM:
        try:
            return FusedAdam(params, lr=lr, eps=eps, fused=True)
        except (RuntimeError, TypeError, ValueError):
            pass
    try:
        return torch.optim.Adam(params, lr=lr, eps=eps, fused=True)
    except (RuntimeError, TypeError, ValueError):
        return torch.optim.Adam(params, lr=lr, eps=eps)


_SHAPE_ERROR_HINTS = ("shape", "size of tensor", "mat1 and mat2", "dimension", "must match the size")


def readable_shape_errors(method: Callable) -> Callable:
    """Turn torch's shape ``RuntimeError`` raised inside the user's model into a ``ValueError`` that
    names the algorithm method, the input shapes and the fix (e.g. obs of the wrong feature size)."""

    @functools.wraps(method)
    def wrapper(self: Any, *args: Any, **kwargs: Any) -> Any:
        try:
            return method(self, *args, **kwargs)
        except RuntimeError as err:
            message = str(err)
            if not any(hint in message for hint in _SHAPE_ERROR_HINTS):
                raise
            shapes = ", ".join(str(tuple(a.shape)) for a in (*args, *kwargs.values()) if hasattr(a, "shape"))
            raise ValueError(f"{type(self).__name__}.{method.__name__}: the model rejected inputs of shapes "
                             f"[{shapes}] ({message}); pass obs as [B, *obs_shape] with the observation shape the "
                             "model was built for, and actions / rewards shaped as the method documents") from err

    return wrapper


def _drop_batch_axis(value: Any) -> Any:
    if isinstance(value, torch.Tensor) and value.ndim >= 1 and value.shape[0] == 1:
        return value[0]
    if isinstance(value, tuple):
        return tuple(_drop_batch_axis(v) for v in value)
    return value


def accepts_single_obs(method: Callable) -> Callable:
    """Let ``method(obs, ...)`` take one unbatched vector observation, as PARL's algorithms do.

    PARL hands ``obs`` straight to the model, so PARL code calls ``alg.predict(obs)`` with one
    observation float32 ``[obs_dim]``. A 1-D ``obs`` is run as a batch of one ``[1, obs_dim]`` and the
    batch axis is removed from every tensor of the result (``[num_actions]`` instead of
    ``[1, num_actions]``, a 0-d action instead of ``[1]``). Batched input is unchanged.
    """

    @functools.wraps(method)
    def wrapper(self: Any, obs: Any, *args: Any, **kwargs: Any) -> Any:
        if getattr(obs, "ndim", None) != 1:
            return method(self, obs, *args, **kwargs)
        return _drop_batch_axis(method(self, as_float_tensor(obs, "obs")[None], *args, **kwargs))

    return wrapper


class _PendingInfo:
    """Diagnostics of one ``learn`` call, kept as scalar tensors until read (not a Mapping: ``Algorithm``
    does not mistake it for checkpoint state)."""

    __slots__ = ("values", "floats")

    def __init__(self, values: dict[str, Any]) -> None:
        self.values = values
        self.floats: dict[str, float] | None = None

    def read(self) -> dict[str, float]:
        if self.floats is None:
            values = {k: v() if callable(v) else v for k, v in self.values.items()}
            keys = [k for k, v in values.items() if isinstance(v, torch.Tensor)]
            floats = {k: float(v) for k, v in values.items() if not isinstance(v, torch.Tensor)}
            if keys:  # one device -> host copy for all of them
                device = values[keys[0]].device
                stacked = torch.stack([values[k].detach().float().reshape(()).to(device) for k in keys])
                floats.update(zip(keys, stacked.tolist(), strict=True))
            self.floats = {k: floats[k] for k in self.values}
        return self.floats


class LazyInfo:
    """``last_info`` that costs a ``learn`` step no device sync.

    ``learn`` assigns ``self.last_info = {"train/x": scalar tensor, float, or a function returning one, ...}``;
    the tensors stay on the device until ``last_info`` is read, then the functions are called (a statistic that
    costs tensor ops, e.g. ``functools.partial(torch.mean, q.detach())``, is computed only for the steps whose
    diagnostics are read) and all values come to the host in one copy and are cached as floats
    (``float(cuda_tensor)`` per key per step would stall the GPU pipeline each time).
    """

    @property
    def last_info(self) -> dict[str, float]:
        """Diagnostics of the last ``learn`` call, ``{name: float}`` (``{}`` before the first)."""
        pending = self.__dict__.get("_pending_last_info")
        return {} if pending is None else pending.read()

    @last_info.setter
    def last_info(self, values: dict[str, Any]) -> None:
        self.__dict__["_pending_last_info"] = _PendingInfo(dict(values))
