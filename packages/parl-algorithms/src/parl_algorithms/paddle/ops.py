"""The few tensor operations of a training loop, with the same names in ``parl_algorithms.torch.ops``.

An example picks the module by backend (``importlib.import_module(f"parl_algorithms.{backend}.ops")``) and
writes its loop once: numpy in, tensors to the algorithm, numpy out.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import paddle

__all__ = ["tensor", "to_numpy", "no_grad", "seed", "concat", "randperm", "zeros_parameter"]


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
