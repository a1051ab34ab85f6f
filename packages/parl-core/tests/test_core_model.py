"""parl_core.Model: weights round trip, set_weights errors, sync_weights_to, deepcopy."""

import copy

import numpy as np
import pytest
import torch
from torch import nn

import parl_core


class Net(parl_core.Model):
    def __init__(self, obs_dim=3, act_dim=2):
        super().__init__()
        self.fc = nn.Linear(obs_dim, 4)
        self.bn = nn.BatchNorm1d(4)
        self.out = nn.Linear(4, act_dim)

    def forward(self, obs):
        return self.out(torch.relu(self.bn(self.fc(obs))))


def test_get_weights_returns_numpy_copies_of_params_and_buffers():
    model = Net()
    weights = model.get_weights()
    assert list(weights) == list(model.state_dict())
    assert {"bn.running_mean", "bn.running_var", "bn.num_batches_tracked"} <= set(weights)
    assert all(isinstance(v, np.ndarray) for v in weights.values())
    assert weights["fc.weight"].dtype == np.float32 and weights["fc.weight"].shape == (4, 3)
    weights["fc.weight"][:] = 123.0  # a copy: the model is untouched
    assert not torch.any(model.fc.weight == 123.0)


def test_weights_round_trip_between_models():
    torch.manual_seed(0)
    src, dst = Net(), Net()
    src.bn.running_mean.fill_(0.5)
    dst.set_weights(src.get_weights())
    for (name, a), b in zip(src.state_dict().items(), dst.state_dict().values(), strict=True):
        assert torch.equal(a, b), name
    x = torch.randn(5, 3)
    src.eval()
    dst.eval()
    assert torch.equal(src(x), dst(x))


def test_set_weights_accepts_tensors_and_casts_dtype():
    model = Net()
    weights = {k: torch.as_tensor(v).double() if v.dtype == np.float32 else v for k, v in model.get_weights().items()}
    weights["out.bias"] = np.array([1.5, -2.0], dtype=np.float64)
    model.set_weights(weights)
    assert model.out.bias.dtype == torch.float32
    assert model.out.bias.tolist() == [1.5, -2.0]


def test_set_weights_names_missing_unexpected_and_shape_errors():
    model = Net()
    weights = model.get_weights()
    del weights["fc.bias"]
    weights["extra.weight"] = np.zeros(2)
    weights["out.weight"] = np.zeros((3, 3), dtype=np.float32)
    with pytest.raises(ValueError) as err:
        model.set_weights(weights)
    message = str(err.value)
    assert "missing keys ['fc.bias']" in message
    assert "unexpected keys ['extra.weight']" in message
    assert "out.weight: model (2, 4) vs given (3, 3)" in message
    assert "get_weights()" in message


def test_set_weights_rejects_non_dict():
    with pytest.raises(TypeError, match="dict name -> array"):
        Net().set_weights([np.zeros(3)])


def test_sync_weights_to_decay_formula_hand_computed():
    src, dst = Net(obs_dim=1, act_dim=1), Net(obs_dim=1, act_dim=1)
    with torch.no_grad():
        for p in src.parameters():
            p.fill_(2.0)
        for p in dst.parameters():
            p.fill_(10.0)
        src.bn.running_mean.fill_(7.0)
    src.sync_weights_to(dst, decay=0.75)
    # target = 0.75 * 10 + 0.25 * 2 = 8.0
    for name, p in dst.named_parameters():
        assert torch.allclose(p, torch.full_like(p, 8.0)), name
    assert torch.equal(dst.bn.running_mean, torch.full((4,), 7.0))  # buffers copied
    for p in src.parameters():  # the source is untouched
        assert torch.all(p == 2.0)
    src.sync_weights_to(dst)  # decay 0: a copy
    for p in dst.parameters():
        assert torch.all(p == 2.0)


def test_sync_weights_to_errors():
    model = Net()
    with pytest.raises(ValueError, match="deepcopy"):
        model.sync_weights_to(model)
    with pytest.raises(ValueError, match=r"decay must be in \[0, 1\]"):
        model.sync_weights_to(Net(), decay=1.5)
    with pytest.raises(TypeError, match="parl Model"):
        model.sync_weights_to(nn.Linear(2, 2))
    with pytest.raises(ValueError, match="shape of fc.weight"):
        model.sync_weights_to(Net(obs_dim=5))


def test_deepcopy_gives_an_independent_equal_model():
    model = Net()
    target = copy.deepcopy(model)
    assert isinstance(target, Net)
    for a, b in zip(model.get_weights().values(), target.get_weights().values(), strict=True):
        np.testing.assert_array_equal(a, b)
    with torch.no_grad():
        model.fc.weight.add_(1.0)
    assert not torch.equal(model.fc.weight, target.fc.weight)
