"""parl_core.Algorithm and Agent: weights of every model, numpy bridge, checkpoints, bad input."""

import copy

import numpy as np
import pytest
import torch
from torch import nn

import parl_core


class QNet(parl_core.Model):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(4, 16)
        self.fc2 = nn.Linear(16, 2)

    def forward(self, obs):
        return self.fc2(torch.tanh(self.fc1(obs)))


class ToyDQN(parl_core.Algorithm):
    """A tiny DQN-like algorithm with a target network, an Adam optimizer and a step counter."""

    checkpoint_attrs = ("learn_steps",)

    def __init__(self, model, lr=1e-2):
        super().__init__(model)
        self.target_model = copy.deepcopy(model)
        self.optimizer = torch.optim.Adam(self.model.parameters(), lr=lr)
        self.learn_steps = 0

    def predict(self, obs):
        return self.model(obs).argmax(dim=-1)

    def sample(self, obs):
        return self.model(obs)

    def learn(self, obs, action, target):
        q = self.model(obs).gather(1, action.long().unsqueeze(1)).squeeze(1)
        loss = ((q - target) ** 2).mean()
        self.optimizer.zero_grad()
        loss.backward()
        self.optimizer.step()
        self.learn_steps += 1
        if self.learn_steps % 2 == 0:
            self.model.sync_weights_to(self.target_model, decay=0.5)
        return loss


def make_agent(seed=0):
    torch.manual_seed(seed)
    return parl_core.Agent(ToyDQN(QNet()))


def batch(i):
    rng = np.random.default_rng(i)
    return (rng.normal(size=(8, 4)), rng.integers(0, 2, size=8), rng.normal(size=8))


def test_algorithm_weights_cover_target_network():
    alg = ToyDQN(QNet())
    assert set(alg.models()) == {"model", "target_model"}
    weights = alg.get_all_weights()
    assert set(weights) == {"model", "target_model"}
    other = ToyDQN(QNet())
    with torch.no_grad():
        alg.target_model.fc1.weight.fill_(3.0)
    other.set_weights(alg.get_all_weights())
    assert torch.all(other.target_model.fc1.weight == 3.0)
    assert torch.equal(other.model.fc2.bias, alg.model.fc2.bias)


def test_algorithm_set_weights_errors():
    alg = ToyDQN(QNet())
    with pytest.raises(ValueError, match="target_model"):
        alg.set_weights({"model": alg.model.get_weights()})
    with pytest.raises(TypeError, match="get_weights"):
        alg.set_weights(["not", "a", "dict"])


def test_non_model_passed_to_algorithm_is_a_type_error():
    with pytest.raises(TypeError, match=r"class MyModel\(parl.Model\)"):
        parl_core.Algorithm(nn.Linear(2, 2))


def test_agent_requires_an_algorithm():
    with pytest.raises(TypeError, match="parl.Algorithm"):
        parl_core.Agent(QNet())


def test_agent_rejects_algorithm_holding_a_non_model():
    class ParlStyle(parl_core.Algorithm):
        def __init__(self, model):  # PARL's algorithms often skip Algorithm.__init__
            self.model = model

    with pytest.raises(TypeError, match=r"ParlStyle.model is a Linear, not a parl.Model"):
        parl_core.Agent(ParlStyle(nn.Linear(2, 2)))


def test_agent_converts_numpy_in_and_out():
    agent = make_agent()
    obs = np.zeros((3, 4), dtype=np.float64)  # float64 becomes float32
    action = agent.predict(obs)
    assert isinstance(action, np.ndarray) and action.shape == (3,)
    q = agent.sample(obs)
    assert isinstance(q, np.ndarray) and q.dtype == np.float32 and q.shape == (3, 2)
    loss = agent.learn(*batch(0))
    assert isinstance(loss, float) and loss > 0


def test_agent_predict_runs_without_grad():
    agent = make_agent()
    seen = {}
    original = agent.alg.sample

    def spy(obs):
        seen["grad"] = torch.is_grad_enabled()
        return original(obs)

    agent.alg.sample = spy
    agent.sample(np.zeros((1, 4), dtype=np.float32))
    assert seen["grad"] is False


def test_agent_rejects_non_numeric_observations():
    agent = make_agent()
    with pytest.raises(TypeError, match="np.asarray"):
        agent.predict(np.array([["a", "b", "c", "d"]]))


def test_train_eval_modes_cover_every_model():
    agent = make_agent()
    agent.eval()
    assert agent.training is False
    assert not agent.alg.model.training and not agent.alg.target_model.training
    agent.train()
    assert agent.training is True and agent.alg.target_model.training


def test_full_checkpoint_resumes_training_exactly(tmp_path):
    agent = make_agent(seed=1)
    for i in range(5):
        agent.learn(*batch(i))
    path = tmp_path / "ckpt" / "agent.pt"
    agent.save(path)
    expected = [agent.learn(*batch(i)) for i in range(5, 8)]

    fresh = make_agent(seed=2)  # different initial weights, fresh Adam state
    fresh.restore(path)
    assert fresh.alg.learn_steps == 5
    resumed = [fresh.learn(*batch(i)) for i in range(5, 8)]
    assert resumed == expected  # bit-identical: weights, target net and Adam moments all restored
    for a, b in zip(agent.alg.target_model.get_weights().values(),
                    fresh.alg.target_model.get_weights().values(), strict=True):
        np.testing.assert_array_equal(a, b)


def test_without_optimizer_state_the_next_loss_differs(tmp_path):
    """Control for the test above: restoring only the model (PARL 2.x) does not resume Adam."""
    agent = make_agent(seed=1)
    for i in range(5):
        agent.learn(*batch(i))
    agent.save(tmp_path / "model.pt", model=agent.alg.model)
    agent.learn(*batch(5))
    expected = agent.learn(*batch(6))
    fresh = make_agent(seed=2)
    fresh.restore(tmp_path / "model.pt", model=fresh.alg.model)
    fresh.learn(*batch(5))
    assert fresh.learn(*batch(6)) != expected


def test_model_only_save_restore_parl_style(tmp_path):
    agent = make_agent(seed=1)
    path = tmp_path / "model.ckpt"
    agent.save(path, model=agent.alg.model)
    assert set(torch.load(path, weights_only=True)) == set(agent.alg.model.state_dict())  # a plain state_dict
    fresh = make_agent(seed=3)
    fresh.restore(path)  # no model given: loads into alg.model, as PARL
    np.testing.assert_array_equal(fresh.alg.model.get_weights()["fc1.weight"],
                                  agent.alg.model.get_weights()["fc1.weight"])
    other = make_agent(seed=4)
    other.restore(path, model=other.alg.target_model)
    np.testing.assert_array_equal(other.alg.target_model.get_weights()["fc2.bias"],
                                  agent.alg.model.get_weights()["fc2.bias"])


def test_restore_errors(tmp_path):
    agent = make_agent()
    with pytest.raises(FileNotFoundError, match="agent.save"):
        agent.restore(tmp_path / "missing.pt")
    agent.save(tmp_path / "full.pt")
    with pytest.raises(ValueError, match="without model="):
        agent.restore(tmp_path / "full.pt", model=agent.alg.model)
    torch.manual_seed(0)
    other = parl_core.Agent(parl_core.Algorithm(QNet()))
    with pytest.raises(ValueError, match="restore it into the agent that saved it"):
        other.restore(tmp_path / "full.pt")
