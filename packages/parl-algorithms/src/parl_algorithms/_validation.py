"""Input validation shared by the algorithms: model-method checks and tensor shape checks."""

from __future__ import annotations

from typing import Any

__all__ = ["check_model_method", "as_float_tensor", "check_batch"]


def check_model_method(model: Any, method: str, algo_name: str) -> None:
    """Raise ``ValueError`` when ``model`` lacks a callable ``method`` (PARL's model-method contract).

    Delegates to ``parl_core.utils.check_model_method`` when it exists, so the message is the same
    across packages.

    Args:
        model: the user's ``parl.Model``.
        method: the method the algorithm calls, e.g. ``"value"``.
        algo_name: the algorithm's name, used in the message.

    Raises:
        ValueError: the method is missing (or, for ``forward``, not overridden).
    """
    try:
        from parl_core.utils import check_model_method as core_check
    except ImportError:
        core_check = None
    if core_check is not None:
        core_check(model, method, algo_name)
        return
    func = getattr(model, method, None)
    if not callable(func):
        raise ValueError(f"{algo_name} needs the model to define `{method}`; add a method "
                         f"`def {method}(self, ...)` to {type(model).__name__}")
    if method == "forward":
        import torch

        if type(model).forward is torch.nn.Module.forward:
            raise ValueError(f"{algo_name} needs the model to define `forward`; override "
                             f"`def forward(self, obs)` in {type(model).__name__}")


def as_float_tensor(value: Any, name: str, device: Any = None) -> Any:
    """Convert ``value`` (tensor / numpy / list) to a float32 tensor on ``device``.

    Raises:
        TypeError: ``value`` is not numeric.
    """
    import numpy as np
    import torch

    if isinstance(value, torch.Tensor):
        if not (value.is_floating_point() or value.dtype in (torch.int32, torch.int64, torch.bool, torch.uint8)):
            raise TypeError(f"{name} must be a numeric tensor, got {value.dtype}")
        out = value if value.dtype == torch.float32 else value.float()
        return out if device is None else out.to(device)
    array = np.asarray(value)
    if not (np.issubdtype(array.dtype, np.number) or array.dtype == np.bool_):
        raise TypeError(f"{name} must be numeric, got dtype {array.dtype}; pass np.asarray(x, dtype=np.float32)")
    return torch.as_tensor(array, dtype=torch.float32, device=device)


def check_batch(name: str, tensor: Any, ndim: int | tuple[int, ...], batch: int | None = None,
                last_dim: int | None = None, hint: str = "") -> None:
    """Raise ``ValueError`` when ``tensor`` has the wrong rank, batch size or last dimension.

    Args:
        name: argument name for the message.
        tensor: the tensor to check.
        ndim: the allowed rank(s).
        batch: required size of axis 0, if given.
        last_dim: required size of the last axis, if given.
        hint: extra text appended to the message (how to fix it).

    Raises:
        ValueError: the shape does not fit.
    """
    allowed = (ndim,) if isinstance(ndim, int) else ndim
    shape = tuple(tensor.shape)
    if len(shape) not in allowed:
        raise ValueError(f"{name} must have {' or '.join(map(str, allowed))} dimensions, got shape {shape}"
                         + (f"; {hint}" if hint else ""))
    if batch is not None and shape[0] != batch:
        raise ValueError(f"{name} has batch size {shape[0]} but obs has {batch}; pass one row per observation"
                         + (f"; {hint}" if hint else ""))
    if last_dim is not None and shape[-1] != last_dim:
        raise ValueError(f"{name} has last dimension {shape[-1]}, expected {last_dim}"
                         + (f"; {hint}" if hint else ""))
