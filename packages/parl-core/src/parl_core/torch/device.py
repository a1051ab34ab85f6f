"""Where an algorithm's tensors live: resolving ``device=`` and moving a method's inputs there.

PARL's torch algorithms put their models on ``torch.device("cuda" if torch.cuda.is_available() else
"cpu")``; here every algorithm takes ``device=`` (default: that same rule) through
:class:`parl_core.torch.Algorithm`, and its ``learn`` / ``predict`` / ``sample`` accept numpy arrays or
tensors on any device (:func:`on_device` moves them), so one copy of the batch crosses to the device per
call and nothing else does.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

import numpy as np
import torch

__all__ = ["resolve_device", "on_device", "to_device"]

DeviceLike = str | torch.device | None


def resolve_device(device: DeviceLike = None) -> torch.device:
    """Turn a ``device=`` argument into a ``torch.device`` that exists on this machine.

    Args:
        device: ``None`` (CUDA when ``torch.cuda.is_available()``, else the CPU: PARL's rule), a string
            (``"cpu"``, ``"cuda"``, ``"cuda:1"``) or a ``torch.device``.

    Returns:
        the device; a bare ``"cuda"`` becomes ``cuda:<current index>`` (so that ``tensor.device == device``
        compares equal for the tensors put there).

    Raises:
        TypeError: ``device`` is not a string, a ``torch.device`` or ``None``.
        ValueError: the string is not a device torch knows, CUDA is asked for where it is not available, or
            the CUDA index is not one of this machine's GPUs; the message names ``device="cpu"``.
    """
    if device is None:
        device = "cuda" if torch.cuda.is_available() else "cpu"
    if not isinstance(device, (str, torch.device)):
        raise TypeError(f"device must be a string such as 'cpu' / 'cuda' / 'cuda:1' or a torch.device, got "
                        f"{type(device).__name__}; e.g. device='cpu'")
    try:
        resolved = torch.device(device)
    except RuntimeError as err:
        raise ValueError(f"device={device!r} is not a torch device ({err}); pass device='cpu', 'cuda' or "
                         "'cuda:<index>'") from err
    if resolved.type == "cuda":
        if not torch.cuda.is_available():
            raise ValueError(f"device={device!r} asks for CUDA, but CUDA is not available here "
                             "(torch.cuda.is_available() is False: no NVIDIA GPU visible, CUDA_VISIBLE_DEVICES "
                             "empty, or a CPU-only torch build); pass device='cpu', or leave device unset to use "
                             "CUDA only where it is present")
        count = torch.cuda.device_count()
        if resolved.index is not None and resolved.index >= count:
            raise ValueError(f"device={device!r}: this machine has {count} visible CUDA device(s) "
                             f"(cuda:0 .. cuda:{count - 1}); pass one of those, or device='cpu'")
        if resolved.index is None:
            resolved = torch.device("cuda", torch.cuda.current_device())
    return resolved


def to_device(value: Any, device: torch.device) -> Any:
    """Put a numpy array or a tensor on ``device``; anything else is returned unchanged.

    numpy float64 becomes float32 (the dtype of every model here); other dtypes are kept. A tensor already
    on ``device`` is returned as is (no copy).

    Args:
        value: ``np.ndarray`` / ``np.generic`` / ``torch.Tensor``, or any other object (passed through).
        device: the target device.
    """
    if isinstance(value, torch.Tensor):
        return value if value.device == device else value.to(device)
    if isinstance(value, (np.ndarray, np.generic)) and (np.issubdtype(value.dtype, np.number)
                                                        or value.dtype == np.bool_):
        if value.dtype == np.float64:
            value = value.astype(np.float32)
        return torch.as_tensor(value, device=device)
    return value


def on_device(method: Callable) -> Callable:
    """Decorate an ``Algorithm`` method so that its numpy / tensor arguments arrive on ``self.device``.

    Positional and keyword arguments that are numpy arrays or tensors are moved (see :func:`to_device`);
    Python numbers, lists and other objects are left alone. Without a ``self.device`` (a PARL-style
    algorithm that never called ``Algorithm.__init__``) the method is called unchanged.
    """

    @functools.wraps(method)
    def wrapper(self: Any, *args: Any, **kwargs: Any) -> Any:
        device = getattr(self, "device", None)
        if device is None:
            return method(self, *args, **kwargs)
        args = tuple(to_device(a, device) for a in args)
        kwargs = {k: to_device(v, device) for k, v in kwargs.items()}
        return method(self, *args, **kwargs)

    return wrapper
