import numpy as np
import pytest
import torch
from torch import nn

import parl_algorithms
from parl_algorithms import PolicyGradient
from parl_core.torch import Agent, Model


class PGModel(Model):
    def __init__(self, obs_dim=4, act_dim=2):
        super().__init__()
        self.fc = nn.Linear(obs_dim, act_dim)

    def forward(self, obs):
        return torch.softmax(self.fc(obs), dim=-1)


class NoForward(Model):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 2)


def test_loss_is_mean_neg_logp_times_reward():
    torch.manual_seed(0)
    model = PGModel()
    alg = PolicyGradient(model, lr=1e-3)
    obs = torch.randn(5, 4)
    action = torch.tensor([0, 1, 1, 0, 1])
    reward = torch.tensor([1.0, -0.5, 2.0, 0.0, 1.5])
    with torch.no_grad():
        probs = model(obs)
    expected = float(np.mean([-np.log(float(probs[i, a])) * float(reward[i]) for i, a in enumerate(action)]))
    loss = alg.learn(obs, action, reward)
    assert float(loss.detach()) == pytest.approx(expected, rel=1e-5)


def test_learning_raises_prob_of_rewarded_action():
    torch.manual_seed(0)
    alg = PolicyGradient(PGModel(), lr=1e-2)
    obs = torch.ones(8, 4)
    action = torch.zeros(8, dtype=torch.long)
    before = float(alg.predict(obs)[0, 0].detach())
    for _ in range(20):
        alg.learn(obs, action, torch.ones(8))
    assert float(alg.predict(obs)[0, 0].detach()) > before + 0.1


def test_predict_and_sample_shapes_through_agent():
    agent = Agent(PolicyGradient(PGModel(), lr=1e-3))
    probs = agent.predict(np.zeros((3, 4), np.float32))
    assert probs.shape == (3, 2)
    np.testing.assert_allclose(probs.sum(-1), 1.0, rtol=1e-6)
    acts = agent.sample(np.zeros((3, 4), np.float32))
    assert acts.shape == (3,) and set(acts.tolist()) <= {0, 1}


def test_bad_inputs():
    with pytest.raises(ValueError, match="forward"):
        PolicyGradient(NoForward(), lr=1e-3)
    with pytest.raises(ValueError, match="lr"):
        PolicyGradient(PGModel(), lr=None)
    alg = PolicyGradient(PGModel(), lr=1e-3)
    with pytest.raises(ValueError, match="batch size"):
        alg.learn(torch.zeros(4, 4), torch.zeros(3, dtype=torch.long), torch.zeros(4))
    with pytest.raises(ValueError, match="discrete"):
        alg.learn(torch.zeros(2, 4), torch.tensor([0, 5]), torch.zeros(2))


def test_import_is_lazy_and_reexported():
    import parl

    assert parl.algorithms.PolicyGradient is parl_algorithms.PolicyGradient
    assert "PolicyGradient" in parl_algorithms.__all__


def test_import_is_light_and_missing_torch_is_explained(tmp_path):
    import subprocess
    import sys

    code = ("import sys\n"
            "import parl_algorithms\n"
            "assert 'torch' not in sys.modules, 'import parl_algorithms imported torch'\n"
            "sys.modules['torch'] = None  # simulate an environment without torch\n"
            "try:\n"
            "    parl_algorithms.DQN\n"
            "except ImportError as err:\n"
            "    print(err)\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    assert "pip install 'parl-algorithms[torch]'" in out.stdout
