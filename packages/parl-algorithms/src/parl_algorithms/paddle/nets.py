"""Small fully connected networks for writing paddle Models: the paddle twin of ``parl_algorithms.torch.nets``.

Same names and arguments as the torch module, so an example defines its networks once for both backends.
:class:`MLP` is ``nn.Sequential(Linear, act, ..., Linear)`` without the per-layer module calls (same
parameters, same default initialisation, same outputs).
"""

from __future__ import annotations

import functools
from collections.abc import Sequence

import paddle
import paddle.nn.functional as F
from paddle import _C_ops, nn
from paddle.framework import in_dynamic_mode

from parl_algorithms._validation import mlp_activation, mlp_sizes

__all__ = ["MLP", "orthogonal_init_"]

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
    ``nn.Linear`` layers; ``forward`` calls ``F.linear`` directly (on a CPU-only paddle in dygraph mode the
    kernel ``F.linear`` itself dispatches to, ``_C_ops.linear``, without its per-call flag read).

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
        linear = _C_ops.linear if _cpu_only_build() and in_dynamic_mode() else F.linear
        for i, layer in enumerate(layers):
            x = linear(x, layer.weight, layer.bias)
            if i < last:
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
