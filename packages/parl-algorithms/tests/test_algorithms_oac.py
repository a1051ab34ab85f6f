"""OAC (Ciosek et al. 2019) on both backends (backend a pytest parameter): the optimistic exploration shift
against the paper's eq. 12 by hand, SAC's learning through PARL's API, one unbatched observation, bad
hyperparameters; the example (torch) at a tiny budget. The paddle-vs-torch update and exploration action are
in test_algorithms_equivalence.py."""

import math

import numpy as np
import pytest
from algo_models import OBS_DIM as SAC_OBS_DIM
from test_algorithms_examples import check_summary, run_example

OBS_DIM, ACT_DIM = 3, 2


def _framework(M):
    return __import__(M.ops.name)


def _linear_q_model(M, mean, log_std, w1, w2):
    """Fixed policy (mean, log_std) and critics linear in the action: Q1 = w1 . a, Q2 = w2 . a."""
    fw = _framework(M)

    def parameter(layer, values):
        values = np.asarray(values, dtype=np.float32)
        if M.ops.name == "torch":
            return fw.nn.Parameter(fw.as_tensor(values))
        return layer.create_parameter(list(values.shape), default_initializer=fw.nn.initializer.Assign(values))

    class LinearQModel(M.ops.Model):
        def __init__(self):
            super().__init__()
            self.mean, self.log_std = parameter(self, mean), parameter(self, log_std)
            self.w1, self.w2 = parameter(self, w1), parameter(self, w2)

        def policy(self, obs):
            batch = obs.shape[0]
            return self.mean.unsqueeze(0).expand([batch, ACT_DIM]), self.log_std.unsqueeze(0).expand([batch, ACT_DIM])

        def value(self, obs, action):
            return (action * self.w1).sum(-1, keepdim=True), (action * self.w2).sum(-1, keepdim=True)

        def get_actor_params(self):
            return [self.mean, self.log_std]

        def get_critic_params(self):
            return [self.w1, self.w2]

    return LinearQModel()


def make(M, model, beta=2.0, delta=0.5):
    return M.algs.OAC(model, gamma=0.99, tau=0.005, alpha=0.2, beta=beta, delta=delta, actor_lr=1e-3,
                      critic_lr=1e-3)


def _seeded_normal(M, shape):
    """The standard normal draw the framework's generator gives right after ``M.ops.seed(0)``."""
    fw = _framework(M)
    M.ops.seed(0)
    return M.ops.numpy(fw.randn(*shape) if M.ops.name == "torch" else fw.randn(list(shape))).astype(np.float64)


def test_exploration_shift_is_eq_12_of_the_paper(M):
    mean, log_std = np.array([0.3, -0.2]), np.log(np.array([0.5, 0.2]))
    w1, w2, beta, delta = np.array([1.0, -2.0]), np.array([3.0, 0.5]), 2.0, 0.5
    alg = make(M, _linear_q_model(M, mean, log_std, w1, w2), beta, delta)
    M.ops.seed(0)
    action = M.ops.numpy(alg.get_optimistic_exploration_action(np.zeros((4, OBS_DIM), np.float32)))
    noise = _seeded_normal(M, (4, ACT_DIM))
    # by hand: a = tanh(mu); Q_UB = (Q1 + Q2) / 2 + beta |Q1 - Q2| / 2; gradient w.r.t. the pre-tanh mu
    a = np.tanh(mean)
    sign = np.sign((w1 - w2) @ a)
    grad = ((w1 + w2) / 2 + beta * sign * (w1 - w2) / 2) * (1 - a ** 2)
    variance = np.exp(2 * log_std)
    mu_e = mean + np.sqrt(2 * delta) * variance * grad / np.sqrt(np.sum(grad ** 2 * variance))
    expected = np.tanh(mu_e + np.exp(log_std) * noise)
    np.testing.assert_allclose(action, expected, rtol=1e-5, atol=1e-6)
    # the shift has KL size delta: (mu_e - mu)^T Sigma^-1 (mu_e - mu) / 2 == delta
    assert math.isclose(float(np.sum((mu_e - mean) ** 2 / variance) / 2), delta, rel_tol=1e-6)
    grads = [p.grad for p in alg.model.parameters()]
    assert not any(g is not None and float(np.abs(M.ops.numpy(g)).sum()) > 0 for g in grads)


def test_learn_predict_and_one_unbatched_obs(M):
    M.ops.seed(0)
    alg = make(M, M.SACModel())
    rng = np.random.default_rng(0)
    obs_dim = SAC_OBS_DIM
    batch = (rng.normal(size=(8, obs_dim)).astype(np.float32), rng.uniform(-1, 1, (8, ACT_DIM)).astype(np.float32),
             rng.normal(size=(8, 1)).astype(np.float32), rng.normal(size=(8, obs_dim)).astype(np.float32),
             np.zeros((8, 1), np.float32))
    before = alg.model.get_weights()
    critic_loss, actor_loss = alg.learn(*batch)
    assert math.isfinite(float(M.ops.numpy(critic_loss))) and math.isfinite(float(M.ops.numpy(actor_loss)))
    assert any(not np.array_equal(before[k], v) for k, v in alg.model.get_weights().items())
    assert tuple(alg.predict(np.zeros(obs_dim, np.float32)).shape) == (ACT_DIM,)
    explore = M.ops.numpy(alg.get_optimistic_exploration_action(np.zeros(obs_dim, np.float32)))
    assert explore.shape == (ACT_DIM,) and bool((np.abs(explore) <= 1).all())
    batched = M.ops.numpy(alg.get_optimistic_exploration_action(np.zeros((5, obs_dim), np.float32)))
    assert batched.shape == (5, ACT_DIM)


@pytest.mark.parametrize("kwargs, name", [({"beta": -1.0}, "beta"), ({"beta": None}, "beta"),
                                          ({"delta": 0.0}, "delta"), ({"delta": None}, "delta")])
def test_bad_hyperparameters(kwargs, name, M):
    model = _linear_q_model(M, [0.0, 0.0], [0.0, 0.0], [1.0, 1.0], [1.0, 1.0])
    args = {"beta": 1.0, "delta": 1.0, **kwargs}
    with pytest.raises(ValueError, match=f"OAC needs {name} .*e.g. OAC"):
        M.algs.OAC(model, gamma=0.99, tau=0.005, alpha=0.2, actor_lr=1e-3, critic_lr=1e-3, **args)


def test_example_tiny_budget(tmp_path):
    result = run_example("oac", tmp_path, "--total-steps", "300",
                         "--learning-starts", "200",
                         "--eval-every", "100",
                         "--target-return", "1e9")
    check_summary(result, 300)
    assert result["reached"] is False and -2000.0 <= result["eval_return_mean"] <= 0.0
    assert [step for step, _ in result["evals"]] == [100, 200, 300]
    assert any(p.name.startswith("events.out.tfevents") for p in tmp_path.iterdir())
