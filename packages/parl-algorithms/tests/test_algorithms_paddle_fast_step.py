"""The paddle fast paths compute exactly what paddle's own calls do: ``step`` (``fast_adam_step``) what
``paddle.optimizer.Adam.step`` does, ``nets.MLP``'s direct ``_C_ops.linear`` what ``F.linear`` does,
``host_float`` what ``float(tensor)`` does."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

with warnings.catch_warnings():
    warnings.simplefilter("ignore")
    paddle = pytest.importorskip("paddle")

from parl_algorithms.paddle import nets  # noqa: E402
from parl_algorithms.paddle._common import adam, discrete_actions, fast_adam_step, host_float  # noqa: E402


def _net() -> paddle.nn.Layer:
    paddle.seed(0)
    return paddle.nn.Sequential(paddle.nn.Linear(4, 16), paddle.nn.Tanh(), paddle.nn.Linear(16, 2))


def _train(fast: bool, max_grad_norm: float | None, global_norm: bool) -> tuple[list[np.ndarray], int]:
    net = _net()
    opt = adam(net.parameters(), lr=1e-3, max_grad_norm=max_grad_norm, global_norm=global_norm)
    rng = np.random.default_rng(1)
    fast_steps = 0
    for i in range(12):
        opt.clear_grad()
        (net(paddle.to_tensor(rng.normal(size=(32, 4)).astype(np.float32))) ** 2).mean().backward()
        if fast and fast_adam_step(opt):
            fast_steps += 1
        else:
            opt.step()
        if i == 5:
            opt.set_lr(5e-4)
    state = [v.numpy() for v in opt.state_dict().values() if isinstance(v, paddle.Tensor)]
    return [p.numpy() for p in net.parameters()] + state, fast_steps


@pytest.mark.parametrize(("max_grad_norm", "global_norm"), [(None, True), (0.05, True), (0.05, False)])
def test_fast_adam_step_is_bit_identical_to_adam_step(max_grad_norm, global_norm):
    reference, _ = _train(False, max_grad_norm, global_norm)
    fast, fast_steps = _train(True, max_grad_norm, global_norm)
    assert fast_steps == 11  # the first step creates the moments through optimizer.step()
    assert len(fast) == len(reference) == 4 + 4 * 4  # params, and 4 accumulators each
    for a, b in zip(fast, reference, strict=True):
        np.testing.assert_array_equal(a, b)


def test_fast_adam_step_declines_other_optimizers():
    net = _net()
    opt = paddle.optimizer.Adam(learning_rate=1e-3, parameters=net.parameters(), use_multi_tensor=True)
    (net(paddle.ones([2, 4])) ** 2).mean().backward()
    opt.step()
    assert fast_adam_step(opt) is False
    sgd = paddle.optimizer.SGD(learning_rate=1e-3, parameters=net.parameters())
    assert fast_adam_step(sgd) is False


def test_discrete_actions_checks_with_one_read():
    out = discrete_actions(paddle.to_tensor([[0.0], [2.0]]), 2, 3, "DQN")
    assert out.dtype == paddle.int64 and out.numpy().tolist() == [0, 2]
    with pytest.raises(ValueError, match="fractional"):
        discrete_actions(paddle.to_tensor([0.5, 1.0]), 2, 3, "DQN")
    with pytest.raises(ValueError, match=r"got range \[0, 3\]"):
        discrete_actions(np.array([0, 3]), 2, 3, "DQN")
    with pytest.raises(ValueError, match="shape"):
        discrete_actions(np.array([0, 1, 2]), 2, 3, "DQN")


def test_mlp_direct_linear_is_bit_identical_to_f_linear(monkeypatch):
    """The MLP's ``_C_ops.linear`` fast path (CPU-only paddle, dygraph) against ``F.linear``: same outputs and
    gradients, bit for bit; on a CUDA build the fast path is off and ``F.linear`` runs."""
    x = paddle.to_tensor(np.random.default_rng(0).normal(size=(7, 4)).astype(np.float32))
    runs = []
    for cpu_only in (True, False):
        monkeypatch.setattr(nets, "_cpu_only_build", lambda cpu_only=cpu_only: cpu_only)
        paddle.seed(5)
        net = nets.MLP([4, 16, 16, 3], activation="tanh")
        out = net(x)
        (out ** 2).sum().backward()
        runs.append([out.numpy()] + [p.grad.numpy() for p in net.parameters()])
    for fast, slow in zip(*runs, strict=True):
        np.testing.assert_array_equal(fast, slow)
    monkeypatch.undo()
    assert nets._cpu_only_build() is (not paddle.is_compiled_with_cuda())


def test_host_float_equals_float():
    loss = (paddle.to_tensor(np.array([0.1, 0.7, 0.3], np.float32)) ** 2).mean()
    assert host_float(loss) == float(loss) and isinstance(host_float(loss), float)
    assert host_float(paddle.to_tensor(3)) == 3.0 and isinstance(host_float(paddle.to_tensor(3)), float)
    assert host_float(2) == 2.0
    with pytest.raises(ValueError, match="one element"):
        host_float(paddle.to_tensor([1.0, 2.0]))
