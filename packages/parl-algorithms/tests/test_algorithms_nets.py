"""MLP: the same function, parameters and initialisation as the equivalent nn.Sequential."""

from __future__ import annotations

import pytest
import torch
from torch import nn

from parl_algorithms.torch.nets import MLP


@pytest.mark.parametrize("activation, act_cls", [("relu", nn.ReLU), ("tanh", nn.Tanh)])
def test_mlp_matches_sequential(activation, act_cls):
    torch.manual_seed(3)
    mlp = MLP([4, 8, 8, 2], activation=activation)
    torch.manual_seed(3)
    seq = nn.Sequential(nn.Linear(4, 8), act_cls(), nn.Linear(8, 8), act_cls(), nn.Linear(8, 2))
    for a, b in zip(mlp.parameters(), seq.parameters(), strict=True):
        assert torch.equal(a, b)  # same draws from the generator: same default init
    x = torch.randn(5, 4)
    out = mlp(x)
    assert out.shape == (5, 2)
    assert torch.allclose(out, seq(x))
    out.sum().backward()
    assert mlp.layers[0].weight.grad is not None and float(mlp.layers[0].weight.grad.abs().sum()) > 0


def test_mlp_bad_arguments():
    with pytest.raises(ValueError, match="sizes"):
        MLP([4])
    with pytest.raises(ValueError, match="activation"):
        MLP([4, 2], activation="gelu")
