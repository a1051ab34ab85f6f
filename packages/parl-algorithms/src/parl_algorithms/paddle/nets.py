"""Small fully connected networks for writing paddle Models: the paddle twin of ``parl_algorithms.torch.nets``.

Same names and arguments as the torch module, so an example defines its networks once for both backends.
:class:`MLP` is ``nn.Sequential(Linear, act, ..., Linear)`` without the per-layer module calls (same
parameters, same default initialisation, same outputs). :class:`BatchedMLP` evaluates several MLPs of the
same layer sizes together (one batched matmul per layer).
"""

from __future__ import annotations

import functools
from collections.abc import Sequence

import paddle
import paddle.nn.functional as F
from paddle import _C_ops, nn
from paddle.framework import in_dynamic_mode

from parl_algorithms._validation import mlp_activation, mlp_sizes

__all__ = ["MLP", "BatchedLinear", "BatchedMLP", "orthogonal_init_", "paddle_conv_init_"]

_ACTIVATIONS = {"relu": F.relu, "tanh": paddle.tanh}


@functools.cache
def _cpu_only_build() -> bool:
    """Whether this paddle was built without CUDA: then ``F.linear`` in dygraph is always ``_C_ops.linear``
    (paddle 2.6 and 3.x), reached in paddle 3 only after a ``paddle.get_flags`` read per call (~15 us,
    as long as the kernel of a small layer)."""
    return not paddle.is_compiled_with_cuda()


class MLP(nn.Layer):
    """``Linear -> act -> ... -> Linear`` (no activation after the last layer).

    Same parameters (``layers.<i>.weight`` float32 ``[in, out]`` / ``.bias`` ``[out]``) and default
    initialisation (paddle's: Xavier-uniform weights, zero biases) as the equivalent ``nn.Sequential`` of
    ``nn.Linear`` layers; ``forward`` calls ``F.linear`` directly. On a CPU-only paddle in dygraph mode a 2-D
    input goes through ``_C_ops.addmm(bias, x, weight)`` instead: paddle's CPU ``linear`` kernel adds the bias
    as a separate broadcast add, slower than the GEMM itself on small layers, while ``addmm`` lets the GEMM add
    it; same values as ``F.linear`` to the bit for a batch above 1 (a batch of 1 differs in the last bits,
    where ``linear`` uses another kernel), same gradients; 15-25 % less time per layer forward and backward
    (benchmarks/README.md, P2 fourth pass). A frozen layer (bias without gradient while its input or weight
    needs one: paddle's ``addmm`` backward crashes there) and other inputs call ``_C_ops.linear`` (without
    ``F.linear``'s per-call flag read in paddle 3).

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
        self.layers = nn.LayerList([nn.Linear(a, b) for a, b in zip(sizes[:-1], sizes[1:], strict=True)])

    def forward(self, x: paddle.Tensor) -> paddle.Tensor:
        """x: float32 ``[B, in_features]`` -> float32 ``[B, out_features]``."""
        layers = self.layers
        last = len(layers) - 1
        fast = _cpu_only_build() and in_dynamic_mode()
        linear = _C_ops.linear if fast else F.linear
        use_addmm = fast and x.ndim == 2
        for i, layer in enumerate(layers):
            weight, bias = layer.weight, layer.bias
            # paddle's addmm backward (2.6 and 3.x) crashes the process when its input (the bias) takes no
            # gradient and x or the weight does: a frozen layer (SAC's actor loss through the critic) takes linear
            if use_addmm and (not bias.stop_gradient or (x.stop_gradient and weight.stop_gradient)):
                x = _C_ops.addmm(bias, x, weight, 1.0, 1.0)
            else:
                x = linear(x, weight, bias)
            if i < last:
                x = self.act(x)
        return x


class BatchedLinear(nn.Layer):
    """``num`` linear layers of the same size, stacked: ``weight`` float32 ``[num, in, out]`` (member ``i``'s
    paddle ``nn.Linear`` weight), ``bias`` ``[num, 1, out]``. Zero-initialised; :class:`BatchedMLP` fills it.
    ``forward``: ``[num, B, in]`` -> ``[num, B, out]``."""

    def __init__(self, num: int, in_features: int, out_features: int):
        super().__init__()
        zeros = nn.initializer.Constant(0.0)
        self.weight = self.create_parameter([num, in_features, out_features], default_initializer=zeros)
        self.bias = self.create_parameter([num, 1, out_features], default_initializer=zeros)

    def forward(self, x: paddle.Tensor) -> paddle.Tensor:
        return paddle.bmm(x, self.weight) + self.bias


class BatchedMLP(nn.Layer):
    """``num`` MLPs of the same layer sizes evaluated together: layer ``j`` of every member is one ``paddle.bmm``
    over stacked weights (the torch twin's docstring has the details). Member ``i`` computes what an
    :class:`MLP` whose layer ``j`` has weight ``layers[j].weight[i]`` and bias ``layers[j].bias[i, 0]`` computes.

    The same API as the torch twin, not its speed: on paddle 3.3.1's CPU build ``bmm``'s backward is slower
    than two linear layers' (forward and backward of two 4-64-64-1 MLPs at batch 256: 2.4 ms batched, 1.5 ms
    as two :class:`MLP`), so the examples keep separate MLPs on paddle.

    Args:
        num: number of member networks, >= 1.
        sizes: ``[in_features, hidden..., out_features]``, at least two positive ints.
        activation: ``"relu"`` or ``"tanh"``.
        activate_output: also apply the activation after the last layer.

    Attributes:
        layers: ``nn.LayerList`` of :class:`BatchedLinear`: per layer ``weight`` float32 ``[num, in, out]``
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
        self.layers = nn.LayerList([BatchedLinear(num, a, b) for a, b in zip(sizes[:-1], sizes[1:], strict=True)])
        self._copy_from([MLP(sizes, activation) for _ in range(num)])  # paddle's default init, member by member

    def _copy_from(self, mlps: Sequence[MLP]) -> None:
        for j, layer in enumerate(self.layers):
            layer.weight.set_value(paddle.stack([m.layers[j].weight for m in mlps]))
            layer.bias.set_value(paddle.stack([m.layers[j].bias for m in mlps]).unsqueeze(1))

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
        sizes = [first[0].weight.shape[0]] + [first[j].weight.shape[1] for j in range(num_layers)]
        activation = next(name for name, fn in _ACTIVATIONS.items() if fn is mlps[0].act)
        state = paddle.get_rng_state()
        net = cls(len(mlps), sizes, activation, activate_output)
        paddle.set_rng_state(state)  # the throw-away default init draws nothing from the caller's RNG
        net._copy_from(mlps)
        return net

    def forward(self, x: paddle.Tensor) -> paddle.Tensor:
        """x: float32 ``[B, in_features]`` (the same input for every member) or ``[num, B, in_features]``
        -> float32 ``[num, B, out_features]``."""
        if x.ndim == 2:
            x = x.unsqueeze(0).expand([self.num, *x.shape])
        layers = self.layers
        last = len(layers) - 1
        for j, layer in enumerate(layers):
            x = layer(x)
            if j < last or self.activate_output:
                x = self.act(x)
        return x


def orthogonal_init_(net: MLP, gain: float, out_gain: float) -> MLP:
    """Orthogonal weights (``gain`` for the hidden layers, ``out_gain`` for the last) and zero biases, in place
    (Saxe et al. 2014; Stable-Baselines3's policy initialisation). Returns ``net``."""
    zeros = nn.initializer.Constant(0.0)
    for layer in net.layers:
        nn.initializer.Orthogonal(gain=gain)(layer.weight)
        zeros(layer.bias)
    nn.initializer.Orthogonal(gain=out_gain)(net.layers[-1].weight)
    return net


def paddle_conv_init_(net: nn.Layer) -> nn.Layer:
    """Paddle's default initialisation of convolutions, applied again in place to every ``nn.Conv2D`` of ``net``:
    weights N(0, 2 / fan_in) (He et al. 2015), biases 0 (the torch twin gives torch models the same). Returns
    ``net``."""
    zeros = nn.initializer.Constant(0.0)
    for layer in net.sublayers(include_self=True):
        if isinstance(layer, nn.Conv2D):
            kernel = layer.weight.shape  # [out, in / groups, kh, kw]
            nn.initializer.Normal(0.0, (2.0 / (kernel[1] * kernel[2] * kernel[3])) ** 0.5)(layer.weight)
            if layer.bias is not None:
                zeros(layer.bias)
    return net
