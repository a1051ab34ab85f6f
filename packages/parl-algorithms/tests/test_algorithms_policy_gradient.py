import numpy as np
import pytest

import parl_algorithms


def _pg_classes(M):
    class PGModel(M.ops.Model):
        def __init__(self, obs_dim=4, act_dim=2):
            super().__init__()
            self.fc = M.ops.nn.Linear(obs_dim, act_dim)

        def forward(self, obs):
            return M.ops.softmax(self.fc(obs))

    class NoForward(M.ops.Model):
        def __init__(self):
            super().__init__()
            self.fc = M.ops.nn.Linear(4, 2)

    return PGModel, NoForward


def test_loss_is_mean_neg_logp_times_reward(M):
    PGModel, _ = _pg_classes(M)
    M.ops.seed(0)
    model = PGModel()
    alg = M.algs.PolicyGradient(model, lr=1e-3)
    obs = np.random.default_rng(0).normal(size=(5, 4)).astype(np.float32)
    action = np.array([0, 1, 1, 0, 1])
    reward = np.array([1.0, -0.5, 2.0, 0.0, 1.5], dtype=np.float32)
    probs = M.ops.numpy(alg.predict(obs))
    expected = float(np.mean([-np.log(float(probs[i, a])) * float(reward[i]) for i, a in enumerate(action)]))
    loss = alg.learn(obs, action, reward)
    assert float(loss.detach()) == pytest.approx(expected, rel=1e-5)


def test_learning_raises_prob_of_rewarded_action(M):
    PGModel, _ = _pg_classes(M)
    M.ops.seed(0)
    alg = M.algs.PolicyGradient(PGModel(), lr=1e-2)
    obs = np.ones((8, 4), dtype=np.float32)
    action = np.zeros(8, dtype=np.int64)
    before = float(M.ops.numpy(alg.predict(obs))[0, 0])
    for _ in range(20):
        alg.learn(obs, action, np.ones(8, dtype=np.float32))
    assert float(M.ops.numpy(alg.predict(obs))[0, 0]) > before + 0.1


def test_predict_and_sample_shapes_through_agent(M):
    PGModel, _ = _pg_classes(M)
    agent = M.Agent(M.algs.PolicyGradient(PGModel(), lr=1e-3))
    probs = agent.predict(np.zeros((3, 4), np.float32))
    assert probs.shape == (3, 2)
    np.testing.assert_allclose(probs.sum(-1), 1.0, rtol=1e-6)
    acts = agent.sample(np.zeros((3, 4), np.float32))
    assert acts.shape == (3,) and set(acts.tolist()) <= {0, 1}


def test_bad_inputs(M):
    PGModel, NoForward = _pg_classes(M)
    with pytest.raises(ValueError, match="forward"):
        M.algs.PolicyGradient(NoForward(), lr=1e-3)
    with pytest.raises(ValueError, match="lr"):
        M.algs.PolicyGradient(PGModel(), lr=None)
    alg = M.algs.PolicyGradient(PGModel(), lr=1e-3)
    with pytest.raises(ValueError, match="batch size"):
        alg.learn(np.zeros((4, 4), np.float32), np.zeros(3, dtype=np.int64), np.zeros(4, np.float32))
    with pytest.raises(ValueError, match="discrete"):
        alg.learn(np.zeros((2, 4), np.float32), np.array([0, 5]), np.zeros(2, np.float32))


def test_import_is_lazy_and_reexported():
    import parl

    assert parl.algorithms.PolicyGradient is parl_algorithms.PolicyGradient
    assert "PolicyGradient" in parl_algorithms.__all__


@pytest.mark.parametrize("backend", ["torch", "paddle"])
def test_import_is_light_and_missing_framework_is_explained(backend):
    import os
    import subprocess
    import sys

    code = ("import sys\n"
            "import parl_algorithms, parl_algorithms.torch, parl_algorithms.paddle\n"
            "assert 'torch' not in sys.modules and 'paddle' not in sys.modules, 'import parl_algorithms imported one'\n"
            f"sys.modules[{backend!r}] = None  # simulate an environment without it\n"
            "for get in (lambda: parl_algorithms.DQN, lambda: parl_algorithms.%s.DQN):\n"
            "    try:\n"
            "        get()\n"
            "    except ImportError as err:\n"
            "        print(err)\n") % backend
    env = dict(os.environ, PARL_BACKEND=backend)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, env=env)
    assert out.returncode == 0, out.stderr
    lines = out.stdout.splitlines()
    assert len(lines) == 2 and all(f"pip install 'parl-algorithms[{backend}]'" in line for line in lines), lines


@pytest.mark.parametrize("backend", ["torch", "paddle"])
def test_default_algorithms_follow_the_backend_and_both_stay_explicit(backend):
    import os
    import subprocess
    import sys

    code = ("import parl_algorithms as a, parl_algorithms.torch as t, parl_algorithms.paddle as p\n"
            f"print(a.SAC is {backend[0]}.SAC, t.SAC is not p.SAC, t.SAC.__module__, p.SAC.__module__)\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120,
                         env=dict(os.environ, PARL_BACKEND=backend))
    assert out.stdout.split() == ["True", "True", "parl_algorithms.torch.sac", "parl_algorithms.paddle.sac"], out.stderr
