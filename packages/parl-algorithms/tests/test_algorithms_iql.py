"""IQL (Kostrikov et al. 2021): the expectile loss by hand, V converging to the tau-expectile of the
dataset's Q values, PARL's model style (a Distribution policy) and ours, bad input, the example."""

import numpy as np
import pytest
import torch
import torch.nn as nn
from test_algorithms_examples import check_summary, run_example

from parl_algorithms.torch import IQL
from parl_algorithms.torch.iql import expectile_loss
from parl_core.torch import Model


def test_expectile_loss_by_hand():
    diff = torch.tensor([2.0, -1.0])
    # |0.7 - 0| * 4 and |0.7 - 1| * 1, averaged
    assert expectile_loss(diff, 0.7).item() == pytest.approx((0.7 * 4 + 0.3 * 1) / 2)
    assert expectile_loss(diff, 0.5).item() == pytest.approx(0.5 * (4 + 1) / 2)


class FixedQModel(Model):
    """Q(s, a) = a (fixed), V(s) = one parameter, a Gaussian policy with a learned mean."""

    def __init__(self):
        super().__init__()
        self.v = nn.Parameter(torch.zeros(1))
        self.mu = nn.Parameter(torch.zeros(1))
        self.unused = nn.Parameter(torch.zeros(1))

    def policy(self, obs):
        return self.mu.expand(obs.shape[0], 1), torch.zeros(obs.shape[0], 1)

    def qvalue(self, obs, action):
        return action + 0 * self.unused, action + 0 * self.unused

    def value(self, obs):
        return self.v.expand(obs.shape[0], 1)

    def get_actor_params(self):
        return [self.mu]

    def get_critic_params(self):
        return [self.unused]

    def get_value_params(self):
        return [self.v]


def test_value_converges_to_the_expectile_and_the_policy_to_the_best_actions():
    torch.manual_seed(0)
    iql = IQL(FixedQModel(), max_steps=10_000, lr=0.02, tau=0.7, beta=3.0, discount=0.99)
    actions = torch.tensor([[-1.0], [0.0], [1.0]]).repeat(20, 1)
    obs, zeros = torch.zeros(60, 2), torch.zeros(60)
    for _ in range(1500):
        iql.learn(obs, actions, zeros, obs, zeros)
    # the 0.7-expectile v of {-1, 0, 1}: 0.7 (1 - v) = 0.3 ((v + 1) + v)  =>  v = 0.4 / 1.3
    assert iql.model.v.item() == pytest.approx(0.4 / 1.3, abs=2e-3)
    # advantage weighting moves the policy mean towards the high-Q action (plain BC would stay at 0)
    assert iql.model.mu.item() > 0.3


class ParlStyleModel(Model):
    """PARL's IQL model style: policy(obs) returns a torch Distribution."""

    def __init__(self, obs_dim=3, act_dim=2):
        super().__init__()
        self.actor = nn.Linear(obs_dim, act_dim)
        self.critic1, self.critic2 = nn.Linear(obs_dim + act_dim, 1), nn.Linear(obs_dim + act_dim, 1)
        self.v = nn.Linear(obs_dim, 1)

    def policy(self, obs):
        return torch.distributions.MultivariateNormal(torch.tanh(self.actor(obs)), scale_tril=torch.eye(2) * 0.5)

    def qvalue(self, obs, action):
        x = torch.cat([obs, action], 1)
        return self.critic1(x), self.critic2(x)

    def value(self, obs):
        return self.v(obs)

    def get_actor_params(self):
        return self.actor.parameters()

    def get_critic_params(self):
        return list(self.critic1.parameters()) + list(self.critic2.parameters())

    def get_value_params(self):
        return self.v.parameters()


def test_parl_style_model_update_and_predict():
    torch.manual_seed(0)
    iql = IQL(ParlStyleModel(), max_steps=4)
    batch = (torch.randn(8, 3), torch.rand(8, 2) * 2 - 1, torch.randn(8, 1), torch.randn(8, 3), torch.zeros(8, 1))
    target_before = [p.clone() for p in iql.q_target.parameters()]
    for _ in range(4):
        q_loss, v_loss, policy_loss = iql.update(*batch)  # PARL's method name
    assert all(not t.requires_grad and torch.isfinite(t) for t in (q_loss, v_loss, policy_loss))
    assert any(not torch.equal(a, b) for a, b in zip(target_before, iql.q_target.parameters(), strict=True))
    assert iql.policy_optimizer.param_groups[0]["lr"] == pytest.approx(0.0, abs=1e-12)  # cosine-annealed
    assert iql.predict(torch.zeros(3)).shape == (2,)
    assert set(iql.last_info) == {"train/q_loss", "train/v_loss", "train/policy_loss", "train/adv_mean"}


@pytest.mark.parametrize("kwargs, name", [({"max_steps": None}, "max_steps"), ({"tau": 1.0}, "tau"),
                                          ({"beta": -1.0}, "beta"), ({"lr": 0.0}, "lr"),
                                          ({"discount": 1.5}, "discount")])
def test_bad_hyperparameters(kwargs, name):
    with pytest.raises(ValueError, match=name):
        IQL(ParlStyleModel(), **{"max_steps": 10, **kwargs})


def test_example_tiny_budget(tmp_path):
    result = run_example("iql", tmp_path, "--collect-steps", "300",
                         "--learning-starts", "200",
                         "--gradient-steps", "200",
                         "--eval-every", "100",
                         "--target-return", "1e9")
    check_summary(result, 300)
    assert result["gradient_steps"] == 200 and result["dataset_size"] == 300 and result["reached"] is False
    assert -2000.0 <= result["eval_return_mean"] <= 0.0 and np.isfinite(result["dataset_return_mean"])
    assert (tmp_path / "dataset.npz").is_file()
    assert any(p.name.startswith("events.out.tfevents") for p in tmp_path.iterdir())
