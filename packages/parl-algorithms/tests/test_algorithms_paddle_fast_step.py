"""The paddle fast paths compute exactly what paddle's own calls do: ``step`` (``fast_adam_step``) what
``paddle.optimizer.Adam.step`` does, ``nets.MLP``'s direct ``_C_ops.addmm`` / ``_C_ops.linear`` what
``F.linear`` does, ``host_float`` what ``float(tensor)`` does, the off-policy algorithms' cached ``sync_target``
what ``Model.sync_weights_to`` does."""

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


def _mlp_run(monkeypatch, cpu_only: bool, x: np.ndarray, sizes=(4, 16, 16, 3), activation="tanh"):
    monkeypatch.setattr(nets, "_cpu_only_build", lambda: cpu_only)
    paddle.seed(5)
    net = nets.MLP(list(sizes), activation=activation)
    out = net(paddle.to_tensor(x))
    (out ** 2).sum().backward()
    return [out.numpy()] + [p.grad.numpy() for p in net.parameters()]


@pytest.mark.parametrize("shape", [(7, 4), (256, 4), (64, 4), (2, 3, 4)])
def test_mlp_fast_path_is_bit_identical_to_f_linear(monkeypatch, shape):
    """The MLP's fast path on a CPU-only paddle in dygraph (``_C_ops.addmm`` for a 2-D batch, ``_C_ops.linear``
    otherwise) against ``F.linear`` (the path of a CUDA build): same outputs and gradients, bit for bit."""
    x = np.random.default_rng(0).normal(size=shape).astype(np.float32)
    fast, slow = _mlp_run(monkeypatch, True, x), _mlp_run(monkeypatch, False, x)
    for a, b in zip(fast, slow, strict=True):
        np.testing.assert_array_equal(a, b)
    monkeypatch.undo()
    assert nets._cpu_only_build() is (not paddle.is_compiled_with_cuda())


def test_mlp_fast_path_batch_of_one_is_close_and_grads_equal(monkeypatch):
    """A batch of one: ``linear`` uses another kernel, so the outputs agree to rounding (not to the bit)."""
    x = np.random.default_rng(1).normal(size=(1, 64)).astype(np.float32)
    fast, slow = (_mlp_run(monkeypatch, c, x, sizes=(64, 64, 64, 2), activation="relu") for c in (True, False))
    for a, b in zip(fast, slow, strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-5)


def test_host_float_equals_float():
    loss = (paddle.to_tensor(np.array([0.1, 0.7, 0.3], np.float32)) ** 2).mean()
    assert host_float(loss) == float(loss) and isinstance(host_float(loss), float)
    assert host_float(paddle.to_tensor(3)) == 3.0 and isinstance(host_float(paddle.to_tensor(3)), float)
    assert host_float(2) == 2.0
    with pytest.raises(ValueError, match="one element"):
        host_float(paddle.to_tensor([1.0, 2.0]))


@pytest.mark.parametrize("frozen", ["none", "all", "biases", "weights"])
def test_mlp_fast_path_with_frozen_parameters(monkeypatch, frozen):
    """Parameters without gradient and an input that needs one (SAC's actor loss through its frozen critic):
    paddle's ``addmm`` backward crashes when only its bias takes no gradient, so the fast path must not use it
    there. Runs the backward, and gives the input's and the trainable parameters' gradients of ``F.linear``."""
    x_np = np.random.default_rng(2).normal(size=(32, 4)).astype(np.float32)
    runs = []
    for cpu_only in (True, False):
        monkeypatch.setattr(nets, "_cpu_only_build", lambda cpu_only=cpu_only: cpu_only)
        paddle.seed(5)
        net = nets.MLP([4, 16, 2])
        for name, p in net.named_parameters():
            p.stop_gradient = frozen == "all" or (frozen == "biases") == name.endswith("bias") and frozen != "none"
        x = paddle.to_tensor(x_np, stop_gradient=False)
        out = net(x)
        (out ** 2).sum().backward()
        runs.append([out.numpy(), x.grad.numpy()] + [p.grad.numpy() for p in net.parameters() if not p.stop_gradient])
    assert len(runs[0]) == len(runs[1]) == 2 + {"none": 4, "all": 0, "biases": 2, "weights": 2}[frozen]
    for a, b in zip(*runs, strict=True):
        np.testing.assert_array_equal(a, b)


class _BNModel(__import__("parl_core.paddle", fromlist=["Model"]).Model):
    """Actor and critic with a BatchNorm layer (running statistics are copied, not averaged)."""

    def __init__(self):
        super().__init__()
        self.actor = nets.MLP([3, 8, 1])
        self.norm = paddle.nn.BatchNorm1D(4)
        self.critic = nets.MLP([4, 8, 1])

    def policy(self, obs):
        return paddle.tanh(self.actor(obs))

    def value(self, obs, action):
        return self.critic(self.norm(paddle.concat([obs, action], axis=-1)))

    def get_actor_params(self):
        return self.actor.parameters()

    def get_critic_params(self):
        return list(self.norm.parameters()) + list(self.critic.parameters())


def test_cached_sync_target_equals_sync_weights_to():
    """``sync_target`` (cached parameter lists, one ``lerp_`` each) against ``Model.sync_weights_to``, bit for bit,
    over repeated calls and decays (0 copies); running statistics are copied; a target whose structure differs
    falls back to ``sync_weights_to`` and its error."""
    from parl_algorithms.paddle import DDPG

    paddle.seed(0)
    algs = [DDPG(_BNModel(), gamma=0.99, tau=0.2, actor_lr=1e-3, critic_lr=1e-3) for _ in range(2)]
    algs[1].model.set_weights(algs[0].model.get_weights())
    algs[1].target_model.set_weights(algs[0].target_model.get_weights())
    rng = np.random.default_rng(0)
    for decay in (None, 0.5, None, 0.0, None):
        changed = {k: v + rng.normal(size=v.shape).astype(v.dtype) for k, v in algs[0].model.get_weights().items()}
        for alg in algs:  # the same change of the source on both
            alg.model.set_weights(changed)
        algs[0].sync_target(decay)
        algs[1].model.sync_weights_to(algs[1].target_model, 1.0 - algs[1].tau if decay is None else decay)
    assert algs[0]._sync_cache[1] is not None
    ref, got = algs[1].target_model.get_weights(), algs[0].target_model.get_weights()
    assert ref.keys() == got.keys() and any("_mean" in k for k in got)
    for k in ref:
        np.testing.assert_array_equal(got[k], ref[k], err_msg=k)
    algs[0].target_model = _BNModel()
    algs[0].target_model.critic = nets.MLP([4, 9, 1])
    with pytest.raises(ValueError, match="different parameters|shape"):
        algs[0].sync_target()


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("log_std_trained", [True, False])
def test_tanh_gaussian_sample_node_equals_autograd(dtype, log_std_trained):
    """SAC's one-node sample (``paddle.autograd.PyLayer``): the values of the autograd formula to the bit, and its
    gradients (float64: to 1e-10; float32: to rounding), also when log_std takes no gradient or only the
    action or only the log-prob is used."""
    from parl_algorithms.paddle import functional
    from parl_algorithms.paddle.sac import _TanhGaussianSample

    rng = np.random.default_rng(3)
    arrays = [rng.normal(size=(64, 3)).astype(dtype), np.clip(rng.normal(size=(64, 3)), -3, 1).astype(dtype),
              rng.normal(size=(64, 3)).astype(dtype)]
    tol = {"float32": 1e-5, "float64": 1e-10}[dtype]
    for use in ("both", "action", "log_prob"):
        runs = []
        for node in (True, False):
            mean, log_std, noise = (paddle.to_tensor(a) for a in arrays)
            mean.stop_gradient, log_std.stop_gradient = False, not log_std_trained
            if node:
                action, log_prob = _TanhGaussianSample.apply(mean, log_std, noise, 1e-6)
            else:
                pre = mean + log_std.exp() * noise
                action, log_prob = paddle.tanh(pre), functional.tanh_gaussian_log_prob(pre, mean, log_std)
            loss = {"both": (action ** 2).sum() + (log_prob * 0.3).sum(), "action": (action ** 2).sum(),
                    "log_prob": (log_prob * 0.3).sum()}[use]
            loss.backward()
            runs.append((action.numpy(), log_prob.numpy(), mean.grad.numpy(),
                         log_std.grad.numpy() if log_std_trained else None))
        (a1, l1, gm1, gs1), (a2, l2, gm2, gs2) = runs
        np.testing.assert_array_equal(a1, a2)
        np.testing.assert_array_equal(l1, l2)
        np.testing.assert_allclose(gm1, gm2, rtol=tol, atol=tol)
        assert np.abs(gm1).max() > 0
        if log_std_trained:
            np.testing.assert_allclose(gs1, gs2, rtol=tol, atol=tol)
