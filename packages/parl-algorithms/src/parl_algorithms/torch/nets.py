"""Small fully connected networks for writing Models, tuned for the per-call overhead of tiny nets.

For 64-unit MLPs on CPU most of a training step is Python and operator-dispatch overhead, not
arithmetic. :class:`MLP` is ``nn.Sequential(Linear, act, ..., Linear)`` without the per-layer module
calls (same parameters, same default initialisation, same outputs).

It is a plain ``torch.nn.Module`` building blocks: use them inside a ``parl.Model`` like any layer.
``parl_algorithms.paddle.nets`` has the same names on paddle.
"""

from __future__ import annotations

from collections.abc import Sequence

import torch
import torch.nn.functional as F
from torch import nn

from parl_algorithms._validation import mlp_activation, mlp_sizes

__all__ = ["MLP", "BatchedLinear", "BatchedMLP", "orthogonal_init_", "paddle_conv_init_"]

_ACTIVATIONS = {"relu": torch.relu, "tanh": torch.tanh}


class MLP(nn.Module):
    """``Linear -> act -> ... -> Linear`` (no activation after the last layer).

    Same parameters (``layers.<i>.weight`` / ``.bias``) and default initialisation as the equivalent
    ``nn.Sequential`` of ``nn.Linear`` layers; ``forward`` calls ``F.linear`` directly, which saves the
    module-call overhead (~10 us per layer per call on CPU).

    Args:
        sizes: ``[in_features, hidden..., out_features]``, at least two positive ints.
        activation: ``"relu"`` or ``"tanh"``.

    Raises:
        ValueError: bad ``sizes`` or an unknown ``activation``.
    """

    def __init__(self, sizes: Sequence[int], activation: str = "relu"):
        super().__init__()
        sizes = mlp_sizes(sizes, "MLP")
        self.act = _ACTIVATIONS[mlp_activation(activation)]
        self.layers = nn.ModuleList(nn.Linear(a, b) for a, b in zip(sizes[:-1], sizes[1:], strict=True))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """x: float32 ``[B, in_features]`` -> float32 ``[B, out_features]``."""
        layers = self.layers
        last = len(layers) - 1
        for i, layer in enumerate(layers):
            x = F.linear(x, layer.weight, layer.bias)
            if i < last:
                x = self.act(x)
        return x


class BatchedLinear(nn.Module):
    """``num`` linear layers of the same size, stacked: ``weight`` float32 ``[num, in, out]`` (member ``i``'s
    ``nn.Linear`` weight transposed: ``baddbmm`` reads it without a transposed view), ``bias`` ``[num, 1, out]``.
    Zero-initialised; :class:`BatchedMLP` fills it. ``forward``: ``[num, B, in]`` -> ``[num, B, out]``."""

    def __init__(self, num: int, in_features: int, out_features: int):
        super().__init__()
        self.weight = nn.Parameter(torch.zeros(num, in_features, out_features))
        self.bias = nn.Parameter(torch.zeros(num, 1, out_features))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.baddbmm(self.bias, x, self.weight)


class BatchedMLP(nn.Module):
    """``num`` MLPs of the same layer sizes evaluated together: layer ``j`` of every member is one
    ``torch.baddbmm`` over stacked weights, so ``num`` networks cost the ops (and autograd nodes) of one.
    Member ``i`` computes what an :class:`MLP` whose layer ``j`` has weight ``layers[j].weight[i].T`` and bias
    ``layers[j].bias[i, 0]`` computes (floating-point results may differ in the last bits).

    Build it from existing MLPs with :meth:`stack` (their initialisation, e.g. :func:`orthogonal_init_`, is
    kept); the plain constructor initialises each member as :class:`MLP` (``nn.Linear``'s default) would.

    Args:
        num: number of member networks, >= 1.
        sizes: ``[in_features, hidden..., out_features]``, at least two positive ints.
        activation: ``"relu"`` or ``"tanh"``.
        activate_output: also apply the activation after the last layer (for a body whose heads differ in
            size per member and are evaluated separately).

    Attributes:
        layers: ``nn.ModuleList`` of :class:`BatchedLinear`: per layer ``weight`` float32 ``[num, in, out]``
            and ``bias`` ``[num, 1, out]``.

    Raises:
        ValueError: ``num`` < 1, bad ``sizes`` or an unknown ``activation``.
    """

    def __init__(self, num: int, sizes: Sequence[int], activation: str = "relu", activate_output: bool = False):
        super().__init__()
        if not isinstance(num, int) or isinstance(num, bool) or num < 1:
            raise ValueError(f"BatchedMLP needs num >= 1 member networks, got {num!r}; e.g. BatchedMLP(2, [4, 64, 1])")
        sizes = mlp_sizes(sizes, "BatchedMLP")
        self.num = num
        self.act = _ACTIVATIONS[mlp_activation(activation)]
        self.activate_output = bool(activate_output)
        self.layers = nn.ModuleList(BatchedLinear(num, a, b) for a, b in zip(sizes[:-1], sizes[1:], strict=True))
        self._copy_from([MLP(sizes, activation) for _ in range(num)])  # nn.Linear's default init, member by member

    @torch.no_grad()
    def _copy_from(self, mlps: Sequence[MLP]) -> None:
        for j, layer in enumerate(self.layers):
            layer.weight.copy_(torch.stack([m.layers[j].weight.T for m in mlps]))
            layer.bias.copy_(torch.stack([m.layers[j].bias for m in mlps])[:, None])

    @classmethod
    def stack(cls, mlps: Sequence[MLP], num_layers: int | None = None, activate_output: bool = False) -> BatchedMLP:
        """A ``BatchedMLP`` whose member ``i`` is a copy of the first ``num_layers`` layers (default: all) of
        ``mlps[i]``; the MLPs must have the same activation and the same sizes up to that layer.

        Raises:
            ValueError: no MLPs, ``num_layers`` out of range, or layer sizes or activations that differ.
        """
        mlps = list(mlps)
        if not mlps or not all(isinstance(m, MLP) for m in mlps):
            raise ValueError("BatchedMLP.stack needs a non-empty list of nets.MLP, "
                             "e.g. BatchedMLP.stack([actor, critic])")
        depth = min(len(m.layers) for m in mlps)
        num_layers = depth if num_layers is None else num_layers
        if not 1 <= num_layers <= depth:
            raise ValueError(f"BatchedMLP.stack: num_layers must be in 1..{depth} (the shallowest MLP), "
                             f"got {num_layers}")
        shapes = {tuple(tuple(m.layers[j].weight.shape) for j in range(num_layers)) for m in mlps}
        if len(shapes) != 1 or len({m.act for m in mlps}) != 1:
            raise ValueError(f"BatchedMLP.stack: the MLPs' first {num_layers} layers must have the same sizes and "
                             f"activation, got weight shapes {sorted(shapes)}")
        first = mlps[0].layers
        sizes = [first[0].in_features] + [first[j].out_features for j in range(num_layers)]
        activation = next(name for name, fn in _ACTIVATIONS.items() if fn is mlps[0].act)
        with torch.random.fork_rng(devices=[]):  # the throw-away default init draws nothing from the caller's RNG
            net = cls(len(mlps), sizes, activation, activate_output)
        net._copy_from(mlps)
        return net

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """x: float32 ``[B, in_features]`` (the same input for every member) or ``[num, B, in_features]``
        -> float32 ``[num, B, out_features]``."""
        if x.ndim == 2:
            x = x.expand(self.num, *x.shape)  # a view: no copy
        layers = self.layers
        last = len(layers) - 1
        for j, layer in enumerate(layers):
            x = torch.baddbmm(layer.bias, x, layer.weight)
            if j < last or self.activate_output:
                x = self.act(x)
        return x


def orthogonal_init_(net: MLP, gain: float, out_gain: float) -> MLP:
    """Orthogonal weights (``gain`` for the hidden layers, ``out_gain`` for the last) and zero biases, in place,
    as Stable-Baselines3 initialises its policies (Saxe et al. 2014, "Exact solutions to the nonlinear dynamics
    of learning in deep linear neural networks"). Returns ``net``."""
    for layer in net.layers:
        nn.init.orthogonal_(layer.weight, gain=gain)
        nn.init.zeros_(layer.bias)
    nn.init.orthogonal_(net.layers[-1].weight, gain=out_gain)
    return net


def paddle_conv_init_(net: nn.Module) -> nn.Module:
    """PaddlePaddle's default initialisation of convolutions, in place, for every ``nn.Conv2d`` of ``net``: weights
    N(0, 2 / fan_in) (He et al. 2015, "Delving Deep into Rectifiers"), biases 0; what PARL's Atari models get.
    torch's default (uniform weights of variance 1 / (3 fan_in), uniform biases) makes the features of PARL's
    IMPALA torso about 10x smaller on Pong frames (mean 0.018 against 0.169, standard deviation over frames 0.0005
    against 0.0087). Returns ``net``."""
    for layer in net.modules():
        if isinstance(layer, nn.Conv2d):
            fan_in = layer.in_channels // layer.groups * layer.kernel_size[0] * layer.kernel_size[1]
            nn.init.normal_(layer.weight, 0.0, (2.0 / fan_in) ** 0.5)
            if layer.bias is not None:
                nn.init.zeros_(layer.bias)
    return net
