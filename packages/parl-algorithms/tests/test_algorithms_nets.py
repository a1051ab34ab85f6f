"""MLP: the same function, parameters and initialisation as the equivalent nn.Sequential, on both backends;
orthogonal_init_ and the training-loop ops (parl_algorithms.<backend>.ops) agree across backends."""

from __future__ import annotations

import importlib
import importlib.util

import numpy as np
import pytest

BACKENDS = ("torch", "paddle")


def _backend(name):
    """(framework module, its nn, our nets, our ops) for ``name``; skips when the framework is missing."""
    if importlib.util.find_spec(name) is None:
        pytest.skip(f"{name} is not installed (pip install 'parl-algorithms[{name}]')")
    fw = importlib.import_module(name)
    return (fw, importlib.import_module(f"{name}.nn"), importlib.import_module(f"parl_algorithms.{name}.nets"),
            importlib.import_module(f"parl_algorithms.{name}.ops"))


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("activation, act_cls", [("relu", "ReLU"), ("tanh", "Tanh")])
def test_mlp_matches_sequential(backend, activation, act_cls):
    fw, nn, nets, ops = _backend(backend)
    act = getattr(nn, act_cls)
    ops.seed(3)
    mlp = nets.MLP([4, 8, 8, 2], activation=activation)
    ops.seed(3)
    seq = nn.Sequential(nn.Linear(4, 8), act(), nn.Linear(8, 8), act(), nn.Linear(8, 2))
    for a, b in zip(mlp.parameters(), seq.parameters(), strict=True):
        np.testing.assert_array_equal(ops.to_numpy(a), ops.to_numpy(b))  # same draws: same default init
    x = ops.tensor(np.random.default_rng(0).normal(size=(5, 4)), "float32")
    out = mlp(x)
    assert tuple(out.shape) == (5, 2)
    np.testing.assert_allclose(ops.to_numpy(out), ops.to_numpy(seq(x)), rtol=1e-6, atol=1e-6)
    out.sum().backward()
    assert float(np.abs(ops.to_numpy(mlp.layers[0].weight.grad)).sum()) > 0


@pytest.mark.parametrize("backend", BACKENDS)
def test_mlp_bad_arguments(backend):
    nets = _backend(backend)[2]
    with pytest.raises(ValueError, match="sizes"):
        nets.MLP([4])
    with pytest.raises(ValueError, match="activation"):
        nets.MLP([4, 2], activation="gelu")


@pytest.mark.parametrize("backend", BACKENDS)
def test_orthogonal_init_and_zeros_parameter(backend):
    fw, nn, nets, ops = _backend(backend)
    net = nets.orthogonal_init_(nets.MLP([4, 16, 16, 3], activation="tanh"), np.sqrt(2), 0.01)
    for layer, gain in zip(net.layers, (np.sqrt(2), np.sqrt(2), 0.01), strict=True):
        w = ops.to_numpy(layer.weight).astype(np.float64)
        w = w if w.shape[0] >= w.shape[1] else w.T  # torch [out, in], paddle [in, out]: columns orthogonal
        np.testing.assert_allclose(w.T @ w, gain**2 * np.eye(w.shape[1]), atol=1e-5)
        assert not ops.to_numpy(layer.bias).any()

    class WithLogStd(nn.Module if backend == "torch" else nn.Layer):
        def __init__(self):
            super().__init__()
            self.log_std = ops.zeros_parameter(self, [3])

    params = list(WithLogStd().parameters())
    assert len(params) == 1 and tuple(params[0].shape) == (3,) and not ops.to_numpy(params[0]).any()


@pytest.mark.parametrize("backend", BACKENDS)
def test_ops_round_trip_concat_and_randperm(backend):
    fw, nn, nets, ops = _backend(backend)
    a = np.arange(6, dtype=np.float64).reshape(2, 3)
    t = ops.tensor(a, "float32")
    assert ops.to_numpy(t).dtype == np.float32 and np.array_equal(ops.to_numpy(t), a)
    assert ops.to_numpy(ops.tensor(np.array([1, 2]))).dtype == np.int64
    np.testing.assert_array_equal(ops.to_numpy(ops.concat([t, t])), np.concatenate([a, a], -1))
    with ops.no_grad():
        assert ops.to_numpy(t * 2).sum() == 30
    ops.seed(5)
    first = ops.to_numpy(ops.randperm(10))
    ops.seed(5)
    assert sorted(first.tolist()) == list(range(10)) and np.array_equal(ops.to_numpy(ops.randperm(10)), first)


def _member_weight(ops, layer, i):
    """Member ``i``'s weight of a BatchedLinear in nn.Linear's layout (torch [out, in], paddle [in, out])."""
    w = ops.to_numpy(layer.weight)[i]
    return w.T if ops.__name__.startswith("parl_algorithms.torch") else w


@pytest.mark.parametrize("backend", BACKENDS)
def test_batched_mlp_stack_computes_each_member(backend):
    fw, nn, nets, ops = _backend(backend)
    ops.seed(1)
    actor = nets.orthogonal_init_(nets.MLP([4, 8, 8, 2], activation="tanh"), np.sqrt(2), 0.01)
    critic = nets.orthogonal_init_(nets.MLP([4, 8, 8, 1], activation="tanh"), np.sqrt(2), 1.0)
    after_init = ops.to_numpy(ops.randperm(50))
    ops.seed(1)
    nets.orthogonal_init_(nets.MLP([4, 8, 8, 2], activation="tanh"), np.sqrt(2), 0.01)
    nets.orthogonal_init_(nets.MLP([4, 8, 8, 1], activation="tanh"), np.sqrt(2), 1.0)
    body = nets.BatchedMLP.stack([actor, critic], num_layers=2, activate_output=True)
    np.testing.assert_array_equal(ops.to_numpy(ops.randperm(50)), after_init)  # stack draws nothing from the RNG
    for j in range(2):  # copies of the members' layers
        for i, net in enumerate((actor, critic)):
            np.testing.assert_array_equal(_member_weight(ops, body.layers[j], i), ops.to_numpy(net.layers[j].weight))
    x = ops.tensor(np.random.default_rng(0).normal(size=(5, 4)), "float32")
    out = body(x)
    assert tuple(out.shape) == (2, 5, 8)
    for i, net in enumerate((actor, critic)):
        hidden = fw.tanh(net.layers[1](fw.tanh(net.layers[0](x))))
        np.testing.assert_allclose(ops.to_numpy(out[i]), ops.to_numpy(hidden), rtol=1e-6, atol=1e-6)
    whole = nets.BatchedMLP.stack([actor, actor])  # all layers, no activation after the last: MLP's function
    np.testing.assert_allclose(ops.to_numpy(whole(x)[1]), ops.to_numpy(actor(x)), rtol=1e-6, atol=1e-6)
    out.sum().backward()
    grad = ops.to_numpy(body.layers[0].weight.grad)
    assert np.abs(grad[0]).sum() > 0 and np.abs(grad[1]).sum() > 0


@pytest.mark.parametrize("backend", BACKENDS)
def test_batched_mlp_default_init_and_bad_arguments(backend):
    fw, nn, nets, ops = _backend(backend)
    ops.seed(2)
    members = [nets.MLP([3, 6, 2]) for _ in range(3)]
    ops.seed(2)
    net = nets.BatchedMLP(3, [3, 6, 2])
    for i, m in enumerate(members):  # the draws of three MLPs made one after the other
        np.testing.assert_array_equal(_member_weight(ops, net.layers[1], i), ops.to_numpy(m.layers[1].weight))
        np.testing.assert_array_equal(ops.to_numpy(net.layers[1].bias)[i, 0], ops.to_numpy(m.layers[1].bias))
    x = ops.tensor(np.random.default_rng(0).normal(size=(3, 4, 3)), "float32")  # a separate input per member
    assert tuple(net(x).shape) == (3, 4, 2)
    with pytest.raises(ValueError, match="num >= 1"):
        nets.BatchedMLP(0, [3, 2])
    with pytest.raises(ValueError, match="sizes"):
        nets.BatchedMLP(2, [3])
    with pytest.raises(ValueError, match="same sizes"):
        nets.BatchedMLP.stack([nets.MLP([3, 6, 2]), nets.MLP([3, 5, 2])])
    with pytest.raises(ValueError, match="num_layers"):
        nets.BatchedMLP.stack([nets.MLP([3, 6, 2])], num_layers=3)


@pytest.mark.parametrize("backend", BACKENDS)
def test_paddle_conv_init_draws_he_normal_weights_and_zero_biases(backend):
    fw, nn, nets, ops = _backend(backend)
    ops.seed(0)
    conv = nn.Conv2d if backend == "torch" else nn.Conv2D
    net = nets.paddle_conv_init_(nn.Sequential(conv(4, 64, 8, stride=4), nn.ReLU(), conv(64, 256, 11)))
    for layer, fan_in in ((net[0], 4 * 8 * 8), (net[2], 64 * 11 * 11)):
        w = ops.to_numpy(layer.weight)
        assert abs(w.mean()) < 0.05 * w.std() and w.std() == pytest.approx((2.0 / fan_in) ** 0.5, rel=0.05)
        assert not ops.to_numpy(layer.bias).any()


def test_paddle_conv_init_gives_impalas_torso_features_that_depend_on_the_frame():
    """With torch's default initialisation, PARL's IMPALA torso's features are about 10x smaller and differ between
    two Pong-like frames by much less than with paddle's (what PARL's model gets)."""
    torch = pytest.importorskip("torch")
    from torch import nn

    from parl_algorithms.torch.nets import paddle_conv_init_

    def torso():
        return nn.Sequential(nn.Conv2d(4, 16, 4, stride=2, padding=1), nn.ReLU(),
                             nn.Conv2d(16, 32, 4, stride=2, padding=2), nn.ReLU(), nn.Conv2d(32, 256, 11), nn.ReLU(),
                             nn.Flatten())

    frames = torch.full((2, 4, 42, 42), 87.0)
    frames[0, :, 20, 10], frames[1, :, 20, 30] = 236.0, 236.0  # a ball in two places
    frames[:, :, 5:8, 38] = 147.0  # a paddle
    spread = {}
    for name, init in (("torch", lambda net: net), ("paddle", paddle_conv_init_)):
        torch.manual_seed(0)
        net = init(torso())
        with torch.no_grad():
            h = net(frames / 255.0)
        spread[name] = (float((h[0] - h[1]).abs().mean()), float(h.mean()))
    assert spread["paddle"][0] > 3 * spread["torch"][0] and spread["paddle"][1] > 3 * spread["torch"][1], spread
