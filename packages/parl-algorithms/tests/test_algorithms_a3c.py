"""A3C (the loss of A2C / GA3C) on both backends (backend a pytest parameter): a hand-computed loss and Adam
step, agreement with A2C, a smoke test on random data of the documented shapes (vector and image
observations), weights round trip, save / restore, and bad input. The paddle-vs-torch update (clipping
included) is in test_algorithms_equivalence.py."""

import math

import numpy as np
import pytest
from algo_models import NUM_ACTIONS, OBS_DIM, a2c


def _linear_ac(M):
    """logits = obs @ W, value = obs @ v (no biases): every quantity of the loss can be computed by hand."""

    def parameter(layer, values):
        values = np.asarray(values, dtype=np.float32)
        if M.ops.name == "torch":
            import torch

            return torch.nn.Parameter(torch.as_tensor(values))
        return layer.create_parameter(list(values.shape), default_initializer=M.ops.nn.initializer.Assign(values))

    class LinearAC(M.ops.Model):
        def __init__(self):
            super().__init__()
            self.W = parameter(self, [[0.0, math.log(3.0)], [0.0, 0.0]])
            self.v = parameter(self, [1.0, 2.0])

        def policy(self, obs):
            return obs @ self.W

        def value(self, obs):
            return obs @ self.v

    return LinearAC()


# obs e_0 gives logits [0, ln 3] (probs 1/4, 3/4), obs e_1 gives [0, 0] (probs 1/2, 1/2); V = [1, 2]
HAND_BATCH = dict(obs=np.eye(2, dtype=np.float32), actions=np.array([1, 0]),
                  advantages=np.array([2.0, -1.0], np.float32), target_values=np.array([0.0, 4.0], np.float32))
PI_LOSS = -(2.0 * math.log(0.75) - 1.0 * math.log(0.5))
VF_LOSS = 0.5 * ((1.0 - 0.0) ** 2 + (2.0 - 4.0) ** 2)
ENTROPY = -(0.25 * math.log(0.25) + 0.75 * math.log(0.75)) + math.log(2.0)


def test_loss_on_a_hand_computed_case(M):
    alg = M.algs.A3C(_linear_ac(M), vf_loss_coeff=0.5)
    total, pi_loss, vf_loss, entropy = alg.learn(**HAND_BATCH, learning_rate=0.1, entropy_coeff=-0.01)
    assert float(pi_loss) == pytest.approx(PI_LOSS, abs=1e-6)
    assert float(vf_loss) == pytest.approx(VF_LOSS, abs=1e-6)
    assert float(entropy) == pytest.approx(ENTROPY, abs=1e-6)
    assert float(total) == pytest.approx(PI_LOSS + 0.5 * VF_LOSS - 0.01 * ENTROPY, abs=1e-6)
    info = alg.get_info()
    assert info["train/pi_loss"] == pytest.approx(PI_LOSS, abs=1e-6)
    # d total / d v = vf_loss_coeff * sum_i (V_i - target_i) obs_i = 0.5 * [1, -2]
    # d total / d W[1] = -adv_1 * (onehot(0) - [1/2, 1/2]) = [1/2, -1/2] (no entropy gradient at uniform probs)
    # d total / d W[0] = -adv_0 * (onehot(1) - [1/4, 3/4]) + entropy term = [0.498, -0.498]
    assert info["train/grad_norm"] == pytest.approx(math.sqrt(0.25 + 1.0 + 0.5 + 2 * 0.497937 ** 2), abs=1e-4)
    # Adam's first step moves every parameter by lr * sign(gradient)
    np.testing.assert_allclose(M.ops.numpy(alg.model.v), [0.9, 2.1], atol=1e-5)
    np.testing.assert_allclose(M.ops.numpy(alg.model.W), [[-0.1, math.log(3.0) + 0.1], [-0.1, 0.1]], atol=1e-5)


def test_mean_reduction_and_the_entropy_sign(M):
    alg = M.algs.A3C(_linear_ac(M), vf_loss_coeff=2.0, reduction="mean")
    total, pi_loss, vf_loss, entropy = alg.learn(**HAND_BATCH, learning_rate=0.1, entropy_coeff=0.5)
    assert float(pi_loss) == pytest.approx(PI_LOSS / 2, abs=1e-6)
    assert float(vf_loss) == pytest.approx(VF_LOSS / 2, abs=1e-6)
    assert float(entropy) == pytest.approx(ENTROPY / 2, abs=1e-6)
    assert float(total) == pytest.approx((PI_LOSS + 2.0 * VF_LOSS + 0.5 * ENTROPY) / 2, abs=1e-6)


def test_gradient_clipping_to_the_global_norm(M):
    clipped = M.algs.A3C(_linear_ac(M), vf_loss_coeff=1000.0, max_grad_norm=1.0)
    clipped.learn(**HAND_BATCH, learning_rate=1e-3, entropy_coeff=0.0)
    assert clipped.get_info()["train/grad_norm"] > 1000.0  # measured before clipping
    if M.ops.name == "torch":  # torch clips .grad in place; paddle's optimizer clips a copy (its grad_clip)
        grads = np.concatenate([M.ops.numpy(p.grad).ravel() for p in clipped.model.parameters()])
        assert float(np.linalg.norm(grads)) == pytest.approx(1.0, rel=1e-4)
    else:
        clip = clipped.optimizer._grad_clip
        assert type(clip).__name__ == "ClipGradByGlobalNorm" and clip.clip_norm == 1.0


def test_same_loss_and_update_as_a2c(M):
    M.ops.seed(0)
    a3c_model = M.DiscreteACModel()
    a2c_model = M.DiscreteACModel()
    a2c_model.set_weights(a3c_model.get_weights())
    a3c = M.algs.A3C(a3c_model, vf_loss_coeff=0.5)
    a2c_alg = a2c(M, a2c_model, lr=3e-3)
    rng = np.random.default_rng(0)
    for _ in range(3):
        batch = (rng.normal(size=(16, OBS_DIM)).astype(np.float32), rng.integers(0, NUM_ACTIONS, 16),
                 rng.normal(size=16).astype(np.float32), rng.normal(size=16).astype(np.float32))
        got = [float(M.ops.numpy(x)) for x in a3c.learn(*batch, 3e-3, -0.01)]
        expected = [float(M.ops.numpy(x)) for x in a2c_alg.learn(*batch, 3e-3, -0.01)]
        np.testing.assert_allclose(got, expected, rtol=1e-5)
    for name, value in a3c_model.get_weights().items():
        np.testing.assert_allclose(value, a2c_model.get_weights()[name], rtol=1e-5, atol=1e-6)


def _conv_ac(M):
    """Stacked frames [B, 4, 16, 16] -> shared torso -> (logits, value) via policy_and_value."""
    nn = M.ops.nn
    conv2d = getattr(nn, "Conv2d", None) or nn.Conv2D

    class ConvAC(M.ops.Model):
        def __init__(self):
            super().__init__()
            self.torso = nn.Sequential(conv2d(4, 8, 4, stride=2), nn.ReLU(), nn.Flatten(), nn.Linear(8 * 7 * 7, 32),
                                       nn.ReLU())
            self.pi = nn.Linear(32, NUM_ACTIONS)
            self.v = nn.Linear(32, 1)
            self.fused_calls = 0

        def policy_and_value(self, obs):
            self.fused_calls += 1
            h = self.torso(obs / 255.0)
            return self.pi(h), self.v(h)

        def policy(self, obs):
            return self.pi(self.torso(obs / 255.0))

        def value(self, obs):
            return self.v(self.torso(obs / 255.0))

    return ConvAC()


def _batch(rng, obs_shape, b=32):
    obs = rng.integers(0, 256, size=(b, *obs_shape)).astype(np.float32) if len(obs_shape) == 3 else \
        rng.normal(size=(b, *obs_shape)).astype(np.float32)
    return (obs, rng.integers(0, NUM_ACTIONS, size=b).astype(np.int64), rng.normal(size=b).astype(np.float32),
            rng.normal(size=b).astype(np.float32))


@pytest.mark.parametrize("conv, obs_shape", [(False, (OBS_DIM,)), (True, (4, 16, 16))])
def test_learn_on_random_data_and_weights_round_trip(conv, obs_shape, M):
    M.ops.seed(0)
    rng = np.random.default_rng(0)
    agent = M.Agent(M.algs.A3C(_conv_ac(M) if conv else M.DiscreteACModel(), vf_loss_coeff=0.5))
    obs = _batch(rng, obs_shape)[0]
    before = agent.get_weights()
    greedy, values = agent.predict(obs), M.ops.numpy(agent.alg.value(obs))
    assert greedy.shape == (32,) and greedy.dtype == np.int64 and values.shape == (32,)
    actions, sampled_values = agent.sample(obs)
    assert actions.shape == (32,) and actions.dtype == np.int64 and set(actions.tolist()) <= set(range(NUM_ACTIONS))
    np.testing.assert_allclose(sampled_values, values, rtol=1e-6)
    for _ in range(3):
        losses = agent.learn(*_batch(rng, obs_shape), 1e-2, -0.01)
        assert len(losses) == 4 and all(math.isfinite(x) for x in losses), losses
    after = agent.alg.model.get_weights()
    assert any(not np.array_equal(after[k], before[k]) for k in after), "learn() did not change the model"
    if conv:
        assert agent.alg.model.fused_calls >= 4  # sample + 3 learns used the one-pass policy_and_value
    agent.set_weights(before)
    np.testing.assert_array_equal(agent.predict(obs), greedy)


def _learn(alg, **changes):
    rng = np.random.default_rng(0)
    obs, actions, adv, target = _batch(rng, (OBS_DIM,), b=8)
    args = dict(obs=obs, actions=actions, advantages=adv, target_values=target, learning_rate=1e-3,
                entropy_coeff=-0.01)
    args.update(changes)
    return alg.learn(**args)


def _no_value(M):
    class NoValue(M.ops.Model):
        def __init__(self):
            super().__init__()
            self.pi = M.ops.nn.Linear(OBS_DIM, NUM_ACTIONS)

        def policy(self, obs):
            return self.pi(obs)

    return NoValue()


@pytest.mark.parametrize("build, error, fix", [
    (lambda M: M.algs.A3C(M.QModel(), vf_loss_coeff=0.5), ValueError, "def policy"),
    (lambda M: M.algs.A3C(_no_value(M), vf_loss_coeff=0.5), ValueError, "def value"),
    (lambda M: M.algs.A3C(M.DiscreteACModel()), ValueError, "A3C(model, vf_loss_coeff=0.5)"),
    (lambda M: M.algs.A3C(M.DiscreteACModel(), vf_loss_coeff=-1.0), ValueError, "vf_loss_coeff=0.5"),
    (lambda M: M.algs.A3C(M.DiscreteACModel(), vf_loss_coeff=0.5, reduction="max"), ValueError, "'sum'"),
    (lambda M: M.algs.A3C(M.DiscreteACModel(), vf_loss_coeff=0.5, max_grad_norm=0), ValueError, "max_grad_norm=40"),
    (lambda M: M.algs.A3C(M.ops.nn.Linear(2, 2), vf_loss_coeff=0.5), TypeError, "class MyModel(parl.Model)"),
])
def test_bad_construction_names_the_fix(build, error, fix, M):
    with pytest.raises(error, match="A3C|parl.Model") as info:
        build(M)
    assert fix in str(info.value)


@pytest.mark.parametrize("changes, error, fix", [
    (dict(obs=np.zeros(OBS_DIM, np.float32)), ValueError, "obs[None]"),
    (dict(obs=np.zeros((8, OBS_DIM + 1), np.float32)), ValueError, "obs as [B, *obs_shape]"),
    (dict(obs=np.array([["a"] * OBS_DIM] * 8)), TypeError, "np.asarray(x, dtype=np.float32)"),
    (dict(advantages=np.zeros(7, np.float32)), ValueError, "advantages must have shape [B] or [B, 1] with B=8"),
    (dict(target_values=np.zeros((8, 2), np.float32)), ValueError, "target_values must have shape [B]"),
    (dict(actions=np.full(8, 0.5, np.float32)), ValueError, "for a continuous (Box) action space use"),
    (dict(actions=np.zeros((8, 2), np.float32)), ValueError, "for a continuous (Box) action space use"),
    (dict(actions=np.full(8, NUM_ACTIONS)), ValueError, f"must lie in [0, {NUM_ACTIONS})"),
    (dict(learning_rate=None), TypeError, "learning_rate=1e-3"),
    (dict(learning_rate=-1.0), ValueError, "learning_rate=1e-3"),
    (dict(learning_rate=np.array([1e-3, 1e-3])), TypeError, "learning_rate=1e-3"),
    (dict(entropy_coeff="high"), TypeError, "entropy_coeff=-0.01"),
])
def test_bad_learn_input_names_the_fix(changes, error, fix, M):
    alg = M.algs.A3C(M.DiscreteACModel(), vf_loss_coeff=0.5)
    before = alg.model.get_weights()
    with pytest.raises(error) as info:
        _learn(alg, **changes)
    assert fix in str(info.value)
    after = alg.model.get_weights()
    assert all(np.array_equal(before[k], after[k]) for k in before)  # nothing was learned


def test_a_continuous_policy_model_is_refused_with_the_algorithms_to_use(M):
    alg = M.algs.A3C(M.GaussianACModel(), vf_loss_coeff=0.5)
    obs = np.zeros((2, OBS_DIM), np.float32)
    for call in (lambda: _learn(alg), lambda: alg.sample(obs), lambda: alg.predict(obs)):
        with pytest.raises(ValueError, match=r"Discrete action spaces .*PPO\(continuous_action=True\)"):
            call()
