"""parl_core Model (torch and paddle): weights round trip, set_weights errors, sync_weights_to, deepcopy."""

import copy

import numpy as np
import pytest


def make_net(B, obs_dim=3, act_dim=2):
    class Net(B.core.Model):
        def __init__(self):
            super().__init__()
            self.fc = B.Linear(obs_dim, 4)
            self.bn = B.BatchNorm1d(4)
            self.out = B.Linear(4, act_dim)

        def forward(self, obs):
            return self.out(B.relu(self.bn(self.fc(obs))))

    return Net()


def test_get_weights_returns_numpy_copies_of_params_and_buffers(backend):
    model = make_net(backend)
    weights = model.get_weights()
    assert list(weights) == list(model.state_dict())
    assert {f"bn.{b}" for b in backend.bn_buffers} <= set(weights)
    assert all(isinstance(v, np.ndarray) for v in weights.values())
    assert weights["fc.weight"].dtype == np.float32 and weights["fc.weight"].shape == backend.linear_weight_shape(3, 4)
    weights["fc.weight"][:] = 123.0  # a copy: the model is untouched
    assert not np.any(backend.numpy(model.fc.weight) == 123.0)


def test_weights_round_trip_between_models(backend):
    backend.seed(0)
    src, dst = make_net(backend), make_net(backend)
    backend.fill_(getattr(src.bn, backend.bn_buffers[0]), 0.5)
    dst.set_weights(src.get_weights())
    for (name, a), b in zip(src.state_dict().items(), dst.state_dict().values(), strict=True):
        np.testing.assert_array_equal(backend.numpy(a), backend.numpy(b), err_msg=name)
    x = backend.randn(5, 3)
    src.eval()
    dst.eval()
    np.testing.assert_array_equal(backend.numpy(src(x)), backend.numpy(dst(x)))


def test_set_weights_accepts_tensors_and_casts_dtype(backend):
    model = make_net(backend)
    weights = {k: v.astype(np.float64) if v.dtype == np.float32 else v for k, v in model.get_weights().items()}
    weights["fc.weight"] = copy.deepcopy(model.fc.weight)  # a framework tensor is accepted too
    weights["out.bias"] = np.array([1.5, -2.0], dtype=np.float64)
    model.set_weights(weights)
    assert backend.dtype_name(model.out.bias) == "float32"
    assert backend.numpy(model.out.bias).tolist() == [1.5, -2.0]


def test_set_weights_names_missing_unexpected_and_shape_errors(backend):
    model = make_net(backend)
    weights = model.get_weights()
    del weights["fc.bias"]
    weights["extra.weight"] = np.zeros(2)
    weights["out.weight"] = np.zeros((3, 3), dtype=np.float32)
    with pytest.raises(ValueError) as err:
        model.set_weights(weights)
    message = str(err.value)
    assert "missing keys ['fc.bias']" in message
    assert "unexpected keys ['extra.weight']" in message
    assert f"out.weight: model {backend.linear_weight_shape(4, 2)} vs given (3, 3)" in message
    assert "get_weights()" in message


def test_set_weights_rejects_non_dict(backend):
    with pytest.raises(TypeError, match="dict name -> array"):
        make_net(backend).set_weights([np.zeros(3)])


def test_sync_weights_to_decay_formula_hand_computed(backend):
    src, dst = make_net(backend, obs_dim=1, act_dim=1), make_net(backend, obs_dim=1, act_dim=1)
    for _, p in backend.trainable(src):
        backend.fill_(p, 2.0)
    for _, p in backend.trainable(dst):
        backend.fill_(p, 10.0)
    backend.fill_(getattr(src.bn, backend.bn_buffers[0]), 7.0)
    src.sync_weights_to(dst, decay=0.75)
    # target = 0.75 * 10 + 0.25 * 2 = 8.0
    for name, p in backend.trainable(dst):
        np.testing.assert_allclose(backend.numpy(p), 8.0, err_msg=name)
    np.testing.assert_array_equal(backend.numpy(getattr(dst.bn, backend.bn_buffers[0])), np.full(4, 7.0))  # copied
    for _, p in backend.trainable(src):  # the source is untouched
        assert np.all(backend.numpy(p) == 2.0)
    src.sync_weights_to(dst)  # decay 0: a copy
    for _, p in backend.trainable(dst):
        assert np.all(backend.numpy(p) == 2.0)


def test_sync_weights_to_errors(backend):
    model = make_net(backend)
    with pytest.raises(ValueError, match="deepcopy"):
        model.sync_weights_to(model)
    with pytest.raises(ValueError, match=r"decay must be in \[0, 1\]"):
        model.sync_weights_to(make_net(backend), decay=1.5)
    with pytest.raises(TypeError, match="parl Model"):
        model.sync_weights_to(backend.Linear(2, 2))
    with pytest.raises(ValueError, match="shape of fc.weight"):
        model.sync_weights_to(make_net(backend, obs_dim=5))


def test_deepcopy_gives_an_independent_equal_model(backend):
    model = make_net(backend)
    target = copy.deepcopy(model)
    assert type(target) is type(model)
    for a, b in zip(model.get_weights().values(), target.get_weights().values(), strict=True):
        np.testing.assert_array_equal(a, b)
    backend.add_(model.fc.weight, 1.0)
    assert not np.array_equal(backend.numpy(model.fc.weight), backend.numpy(target.fc.weight))
