"""The ES policy: an MLP ``obs -> tanh hidden layers -> action`` in numpy, torch or paddle (EvoKit's back ends)."""

from __future__ import annotations

from typing import Any

from evokit import NumpyMLP

BACKENDS = ("numpy", "torch", "paddle")


def make_policy(backend: str, obs_dim: int, act_dim: int, hidden: list[int], seed: int = 0) -> Any:
    """Build the MLP ``[obs_dim, *hidden, act_dim]`` (tanh hidden, linear output) for ``backend``.

    Raises:
        ValueError: an unknown back end.
    """
    sizes = [obs_dim, *hidden, act_dim]
    if backend == "numpy":
        return NumpyMLP(sizes, seed=seed)
    if backend == "torch":
        import torch

        torch.manual_seed(seed)
        layers: list = []
        for i, (a, b) in enumerate(zip(sizes[:-1], sizes[1:], strict=False)):
            layers += [torch.nn.Linear(a, b)] + ([torch.nn.Tanh()] if i < len(sizes) - 2 else [])
        return torch.nn.Sequential(*layers)
    if backend == "paddle":
        import paddle

        paddle.seed(seed)
        layers = []
        for i, (a, b) in enumerate(zip(sizes[:-1], sizes[1:], strict=False)):
            layers += [paddle.nn.Linear(a, b)] + ([paddle.nn.Tanh()] if i < len(sizes) - 2 else [])
        return paddle.nn.Sequential(*layers)
    raise ValueError(f"unknown --backend {backend!r}; use one of {', '.join(BACKENDS)}")
