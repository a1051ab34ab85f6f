"""The few tensor operations of a training loop, with the same names in ``parl_algorithms.paddle.ops``.

An example picks the module by backend (``importlib.import_module(f"parl_algorithms.{backend}.ops")``) and
writes its loop once: numpy in, tensors to the algorithm, numpy out.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import torch

__all__ = ["tensor", "to_numpy", "no_grad", "seed", "concat", "randperm", "zeros_parameter"]


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
