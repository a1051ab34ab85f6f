"""OAC (Ciosek et al. 2019): the optimistic exploration shift against the paper's eq. 12 by hand, SAC's
learning through PARL's API, bad hyperparameters, and the example at a tiny budget."""

import math

import numpy as np
import pytest
import torch
import torch.nn as nn
from test_algorithms_examples import check_summary, run_example

from parl_algorithms.torch import OAC
from parl_core.torch import Model

OBS_DIM, ACT_DIM = 3, 2


class LinearQModel(Model):
    """Fixed policy (mean, log_std) and critics linear in the action: Q1 = w1 . a, Q2 = w2 . a."""

    def __init__(self, mean, log_std, w1, w2):
        super().__init__()
        self.mean = nn.Parameter(torch.tensor(mean))
        self.log_std = nn.Parameter(torch.tensor(log_std))
        self.w1, self.w2 = nn.Parameter(torch.tensor(w1)), nn.Parameter(torch.tensor(w2))

    def policy(self, obs):
        batch = obs.shape[0]
        return self.mean.expand(batch, -1), self.log_std.expand(batch, -1)

    def value(self, obs, action):
        return (action * self.w1).sum(-1, keepdim=True), (action * self.w2).sum(-1, keepdim=True)

    def get_actor_params(self):
        return [self.mean, self.log_std]

    def get_critic_params(self):
        return [self.w1, self.w2]


def make(model, beta=2.0, delta=0.5):
    return OAC(model, gamma=0.99, tau=0.005, alpha=0.2, beta=beta, delta=delta, actor_lr=1e-3, critic_lr=1e-3)


def test_exploration_shift_is_eq_12_of_the_paper():
    mean, log_std = np.array([0.3, -0.2]), np.log(np.array([0.5, 0.2]))
    w1, w2, beta, delta = np.array([1.0, -2.0]), np.array([3.0, 0.5]), 2.0, 0.5
    alg = make(LinearQModel(mean.tolist(), log_std.tolist(), w1.tolist(), w2.tolist()), beta, delta)
    torch.manual_seed(0)
    action = alg.get_optimistic_exploration_action(torch.zeros(4, OBS_DIM)).numpy()
    torch.manual_seed(0)
    noise = torch.randn(4, ACT_DIM).double().numpy()
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
    assert not any(p.grad is not None and p.grad.abs().sum() > 0 for p in alg.model.parameters())


def test_learn_predict_and_one_unbatched_obs():
    torch.manual_seed(0)

    class Net(Model):
        def __init__(self):
            super().__init__()
            self.actor = nn.Linear(OBS_DIM, 2 * ACT_DIM)
            self.q1, self.q2 = nn.Linear(OBS_DIM + ACT_DIM, 1), nn.Linear(OBS_DIM + ACT_DIM, 1)

        def policy(self, obs):
            mean, log_std = self.actor(obs).chunk(2, -1)
            return mean, log_std.clamp(-5, 2)

        def value(self, obs, action):
            x = torch.cat([obs, action], -1)
            return self.q1(x), self.q2(x)

        def get_actor_params(self):
            return list(self.actor.parameters())

        def get_critic_params(self):
            return list(self.q1.parameters()) + list(self.q2.parameters())

    alg = make(Net())
    batch = (torch.randn(8, OBS_DIM), torch.rand(8, ACT_DIM) * 2 - 1, torch.randn(8, 1), torch.randn(8, OBS_DIM),
             torch.zeros(8, 1))
    before = alg.model.get_weights()
    critic_loss, actor_loss = alg.learn(*batch)
    assert math.isfinite(critic_loss.item()) and math.isfinite(actor_loss.item())
    assert any(not np.array_equal(before[k], v) for k, v in alg.model.get_weights().items())
    assert alg.predict(torch.zeros(OBS_DIM)).shape == (ACT_DIM,)
    explore = alg.get_optimistic_exploration_action(torch.zeros(OBS_DIM))
    assert explore.shape == (ACT_DIM,) and bool((explore.abs() <= 1).all())


@pytest.mark.parametrize("kwargs, name", [({"beta": -1.0}, "beta"), ({"beta": None}, "beta"),
                                          ({"delta": 0.0}, "delta"), ({"delta": None}, "delta")])
def test_bad_hyperparameters(kwargs, name):
    model = LinearQModel([0.0, 0.0], [0.0, 0.0], [1.0, 1.0], [1.0, 1.0])
    args = {"beta": 1.0, "delta": 1.0, **kwargs}
    with pytest.raises(ValueError, match=name):
        OAC(model, gamma=0.99, tau=0.005, alpha=0.2, actor_lr=1e-3, critic_lr=1e-3, **args)


def test_example_tiny_budget(tmp_path):
    result = run_example("oac", tmp_path, "--total-steps", "300",
                         "--learning-starts", "200",
                         "--eval-every", "100",
                         "--target-return", "1e9")
    check_summary(result, 300)
    assert result["reached"] is False and -2000.0 <= result["eval_return_mean"] <= 0.0
    assert [step for step, _ in result["evals"]] == [100, 200, 300]
    assert any(p.name.startswith("events.out.tfevents") for p in tmp_path.iterdir())
