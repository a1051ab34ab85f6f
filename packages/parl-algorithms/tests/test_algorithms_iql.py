"""IQL (Kostrikov et al. 2021) on both backends (backend a pytest parameter): the expectile loss by hand, V
converging to the tau-expectile of the dataset's Q values, PARL's model style (a Distribution policy) and ours,
bad input; the example (torch). The paddle-vs-torch update is in test_algorithms_equivalence.py."""

import importlib

import numpy as np
import pytest
from test_algorithms_examples import check_summary, run_example


def _fw(M):
    return importlib.import_module(M.ops.name)


def _tensor(M, values):
    values = np.asarray(values, dtype=np.float32)
    return _fw(M).as_tensor(values) if M.ops.name == "torch" else _fw(M).to_tensor(values)


def _parameter(M, layer, values):
    values = np.asarray(values, dtype=np.float32)
    if M.ops.name == "torch":
        return _fw(M).nn.Parameter(_fw(M).as_tensor(values))
    return layer.create_parameter(list(values.shape), default_initializer=_fw(M).nn.initializer.Assign(values))


def test_expectile_loss_by_hand(M):
    expectile_loss = importlib.import_module(f"parl_algorithms.{M.ops.name}.iql").expectile_loss
    diff = _tensor(M, [2.0, -1.0])
    # |0.7 - 0| * 4 and |0.7 - 1| * 1, averaged
    assert float(expectile_loss(diff, 0.7)) == pytest.approx((0.7 * 4 + 0.3 * 1) / 2)
    assert float(expectile_loss(diff, 0.5)) == pytest.approx(0.5 * (4 + 1) / 2)


def _fixed_q_model(M):
    """Q(s, a) = a (fixed), V(s) = one parameter, a Gaussian policy with a learned mean."""

    class FixedQModel(M.ops.Model):
        def __init__(self):
            super().__init__()
            self.v = _parameter(M, self, [0.0])
            self.mu = _parameter(M, self, [0.0])
            self.unused = _parameter(M, self, [0.0])

        def policy(self, obs):
            batch = obs.shape[0]
            return self.mu.unsqueeze(0).expand([batch, 1]), obs[:, :1] * 0.0

        def qvalue(self, obs, action):
            return action + 0 * self.unused, action + 0 * self.unused

        def value(self, obs):
            return self.v.unsqueeze(0).expand([obs.shape[0], 1])

        def get_actor_params(self):
            return [self.mu]

        def get_critic_params(self):
            return [self.unused]

        def get_value_params(self):
            return [self.v]

    return FixedQModel()


def test_value_converges_to_the_expectile_and_the_policy_to_the_best_actions(M):
    M.ops.seed(0)
    iql = M.algs.IQL(_fixed_q_model(M), max_steps=10_000, lr=0.02, tau=0.7, beta=3.0, discount=0.99)
    actions = _tensor(M, np.tile([[-1.0], [0.0], [1.0]], (20, 1)))
    obs, zeros = _tensor(M, np.zeros((60, 2))), _tensor(M, np.zeros(60))
    for _ in range(1500):
        iql.learn(obs, actions, zeros, obs, zeros)
    # the 0.7-expectile v of {-1, 0, 1}: 0.7 (1 - v) = 0.3 ((v + 1) + v)  =>  v = 0.4 / 1.3
    assert float(M.ops.numpy(iql.model.v)[0]) == pytest.approx(0.4 / 1.3, abs=2e-3)
    # advantage weighting moves the policy mean towards the high-Q action (plain BC would stay at 0)
    assert float(M.ops.numpy(iql.model.mu)[0]) > 0.3


def _parl_style_model(M, obs_dim=3, act_dim=2):
    """PARL's IQL model style: policy(obs) returns a distribution of the framework (MultivariateNormal)."""
    fw, nn = _fw(M), M.ops.nn

    class ParlStyleModel(M.ops.Model):
        def __init__(self):
            super().__init__()
            self.actor = nn.Linear(obs_dim, act_dim)
            self.critic1, self.critic2 = nn.Linear(obs_dim + act_dim, 1), nn.Linear(obs_dim + act_dim, 1)
            self.v = nn.Linear(obs_dim, 1)

        def policy(self, obs):
            dists = fw.distributions if M.ops.name == "torch" else fw.distribution
            return dists.MultivariateNormal(M.ops.tanh(self.actor(obs)), scale_tril=fw.eye(2) * 0.5)

        def qvalue(self, obs, action):
            x = M.ops.cat([obs, action])
            return self.critic1(x), self.critic2(x)

        def value(self, obs):
            return self.v(obs)

        def get_actor_params(self):
            return self.actor.parameters()

        def get_critic_params(self):
            return list(self.critic1.parameters()) + list(self.critic2.parameters())

        def get_value_params(self):
            return self.v.parameters()

    return ParlStyleModel()


def _current_lr(M, optimizer):
    return optimizer.param_groups[0]["lr"] if M.ops.name == "torch" else optimizer.get_lr()


def test_parl_style_model_update_and_predict(M):
    M.ops.seed(0)
    iql = M.algs.IQL(_parl_style_model(M), max_steps=4)
    rng = np.random.default_rng(0)
    batch = [_tensor(M, x) for x in (rng.normal(size=(8, 3)), rng.uniform(-1, 1, (8, 2)), rng.normal(size=(8, 1)),
                                     rng.normal(size=(8, 3)), np.zeros((8, 1)))]
    target_before = [M.ops.numpy(p).copy() for p in iql.q_target.parameters()]
    for _ in range(4):
        losses = iql.update(*batch)  # PARL's method name
    assert len(losses) == 3 and all(np.isfinite(float(M.ops.numpy(t))) for t in losses)
    assert all((not t.requires_grad) if M.ops.name == "torch" else t.stop_gradient for t in losses)
    after = [M.ops.numpy(p) for p in iql.q_target.parameters()]
    assert any(not np.array_equal(a, b) for a, b in zip(target_before, after, strict=True))
    assert _current_lr(M, iql.policy_optimizer) == pytest.approx(0.0, abs=1e-12)  # cosine-annealed
    assert tuple(iql.predict(np.zeros(3, np.float32)).shape) == (2,)
    assert set(iql.last_info) == {"train/q_loss", "train/v_loss", "train/policy_loss", "train/adv_mean"}


@pytest.mark.parametrize("kwargs, name", [({"max_steps": None}, "max_steps"), ({"tau": 1.0}, "tau"),
                                          ({"beta": -1.0}, "beta"), ({"lr": 0.0}, "lr"),
                                          ({"discount": 1.5}, "discount")])
def test_bad_hyperparameters(kwargs, name, M):
    with pytest.raises(ValueError, match=f"IQL needs .*{name}"):
        M.algs.IQL(_parl_style_model(M), **{"max_steps": 10, **kwargs})


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
